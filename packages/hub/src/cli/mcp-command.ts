import { parseArgs } from 'node:util'
import { requestJson, type SignedBody, SignedClient } from '@baton/client'
import { BatonError } from '@baton/protocol'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { Logger } from 'pino'
import { pollWatch } from '../mcp/resources.js'
import { createMcpServer } from '../mcp/server.js'
import { sessionAuths } from '../ops/auth-kinds.js'
import type { Invoke } from '../ops/mcp.js'
import { remoteInvoke } from '../ops/remote.js'
import { VERSION } from '../version.js'
import { describe, type Io, UsageError } from './io.js'
import { traceOfCommand } from './trace.js'

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
  // A request that never reached the hub says why, in the tool's answer and on stderr, as the
  // CLI does; stdout carries the MCP protocol itself.
  const reaching = <T>(method: string, path: string, signal: AbortSignal, send: () => Promise<T>) =>
    send().catch((error: unknown) => {
      if (error instanceof BatonError || signal.aborted) throw error
      const cause = describe(error)
      io.stderr(`baton mcp: ${method} ${path}: ${cause}`)
      throw new BatonError('hub_unreachable', `The hub at ${hub} could not be reached: ${cause}`, {
        hub,
      })
    })
  // A tool call's _meta.traceparent is the trace it continues; without one, the trace this
  // server was started in (TRACEPARENT), if any.
  const started = traceOfCommand(undefined)
  const send = remoteInvoke({
    plain: (method, path, body, headers, signal) =>
      reaching(method, path, signal, () =>
        requestJson(hub, method, path, body, { headers, signal }),
      ),
    ...(signed
      ? {
          signed: (method, path, body, headers, signal) =>
            reaching(method, path, signal, () =>
              signed.request(method, path, body as SignedBody, headers, { signal }),
            ),
        }
      : {}),
  })
  const invoke: Invoke = (op, input, caller) =>
    send(op, input, { ...caller, trace: caller.trace ?? started })
  const server = createMcpServer(
    {
      invoke,
      auths: sessionAuths(signed !== undefined),
      // No event bus here: subscriptions long-poll the hub's waits (see mcp/resources.ts).
      watch: pollWatch(invoke),
      // An unexpected failure is answered `internal` without detail, and its cause said here.
      log: {
        error: ((obj: { err?: unknown }, msg?: string) =>
          io.stderr(`baton mcp: ${msg ?? 'error'}: ${describe(obj.err)}`)) as Logger['error'],
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
