import { parseArgs } from 'node:util'
import { requestJson, type SignedBody, SignedClient } from '@baton/client'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { pollWatch } from '../mcp/resources.js'
import { createMcpServer } from '../mcp/server.js'
import type { Auth } from '../ops/operation.js'
import { remoteInvoke } from '../ops/remote.js'
import { VERSION } from '../version.js'
import { type Io, UsageError } from './io.js'

/** `baton mcp --hub URL`: an MCP server over stdio whose tools call a hub through the SDK. */
export async function mcpCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      hub: { type: 'string' },
      identity: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(
      'baton mcp --hub URL [--identity agent.identity.json]\n\nMCP over stdio. Handoff tools need no identity; with --identity, the resource, grant, message, home-file and transfer tools and the resources (baton://resources/{id}, baton://transfers/{id}, baton://inbox, with subscriptions) act as that identity through signed requests. The hub URL may also come from BATON_HUB, the identity file from BATON_IDENTITY.',
    )
    return 0
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const identityPath = values.identity ?? process.env.BATON_IDENTITY
  const signed = identityPath
    ? await SignedClient.fromFile(new URL('/.well-known/agent-net', hub).href, identityPath)
    : undefined
  const invoke = remoteInvoke({
    plain: async (method, path, body, headers, signal) =>
      requestJson(hub, method, path, body, { headers, signal }),
    ...(signed
      ? {
          signed: (method, path, body, headers, signal) =>
            signed.request(method, path, body as SignedBody, headers, { signal }),
        }
      : {}),
  })
  const server = createMcpServer(
    {
      invoke,
      auths: new Set<Auth>(
        signed ? ['none', 'handoff-token', 'signature'] : ['none', 'handoff-token'],
      ),
      // No event bus here: subscriptions long-poll the hub's waits (see mcp/resources.ts).
      watch: pollWatch(invoke),
    },
    VERSION,
  )
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
  })
  await server.connect(transport)
  process.stdin.once('end', () => void server.close())
  await closed
  return 0
}
