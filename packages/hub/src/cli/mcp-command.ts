import { parseArgs } from 'node:util'
import {
  GrantClient,
  HandoffClient,
  HomeClient,
  MessagesClient,
  ResourceClient,
  SignedClient,
  TransferClient,
} from '@baton/client'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { homeOpsFromClient } from '../home/mcp.js'
import { createMcpServer } from '../mcp/server.js'
import { messageOpsFromClient } from '../messages/mcp.js'
import { transferOpsFromClient } from '../transfers/mcp.js'
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
      'baton mcp --hub URL [--identity agent.identity.json]\n\nMCP over stdio. Handoff tools need no identity; with --identity, the resource, grant, message, home-file and transfer tools act as that identity through signed requests. The hub URL may also come from BATON_HUB, the identity file from BATON_IDENTITY.',
    )
    return 0
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const handoffs = new HandoffClient(hub)
  const identityPath = values.identity ?? process.env.BATON_IDENTITY
  const signed = identityPath
    ? await SignedClient.fromFile(new URL('/.well-known/agent-net', hub).href, identityPath)
    : undefined
  const resources = signed ? new ResourceClient(signed) : undefined
  const grants = signed ? new GrantClient(signed) : undefined
  const server = createMcpServer(
    {
      ...(resources
        ? {
            resources: {
              create: (input) => resources.create(input as Parameters<ResourceClient['create']>[0]),
              get: (id) => resources.get(id),
              update: (id, input) =>
                resources.update(id, input as Parameters<ResourceClient['update']>[1]),
              history: (id) => resources.history(id),
              list: (query) => resources.list(query),
            },
          }
        : {}),
      ...(signed
        ? {
            messages: messageOpsFromClient(new MessagesClient(signed)),
            home: homeOpsFromClient(new HomeClient(signed)),
            transfers: transferOpsFromClient(new TransferClient(signed)),
          }
        : {}),
      ...(grants
        ? {
            grants: {
              create: (input) => grants.create(input as Parameters<GrantClient['create']>[0]),
              list: () => grants.list(),
              revoke: (id) => grants.revoke(id),
            },
          }
        : {}),
      handoffs: {
        create: (input) => handoffs.create(input as Parameters<HandoffClient['create']>[0]),
        read: (id, token) => handoffs.read(id, token),
        advance: (id, state, input, token) =>
          handoffs.advance(id, state, input as Parameters<HandoffClient['advance']>[2], token),
        wait: (id, token, seconds, version) => handoffs.wait(id, token, seconds, version),
      },
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
