import { parseArgs } from 'node:util'
import {
  fetchDiscovery,
  loadIdentity,
  requestJson,
  type SignedBody,
  SignedClient,
} from '@baton/client'
import { BatonError, DEFAULT_CONTRACT_CONFIG, DISCOVERY_PATH } from '@baton/protocol'
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
  // The identity file is read now (a bad one is a usage error at once); the hub's discovery is
  // fetched at the first signed call, and again after a failure, so a hub that is down when the
  // server starts answers each tool with why, as a hub that goes down later does.
  const identity = identityPath ? await loadIdentity(identityPath) : undefined
  const discovery = new URL(DISCOVERY_PATH, hub).href
  let connecting: Promise<SignedClient> | undefined
  const signedClient = () => {
    connecting ??= SignedClient.connect(discovery, identity!).catch((error: unknown) => {
      connecting = undefined
      throw error
    })
    return connecting
  }
  // The tools publish the limits this hub holds (a hub that is down, or an older one whose
  // discovery names none, gets the defaults).
  const doc = await fetchDiscovery(discovery).catch(() => undefined)
  const config = doc?.limits.contracts ?? DEFAULT_CONTRACT_CONFIG
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
    ...(identity
      ? {
          signed: (method, path, body, headers, signal) =>
            reaching(method, path, signal, async () =>
              (await signedClient()).request(method, path, body as SignedBody, headers, {
                signal,
              }),
            ),
        }
      : {}),
  })
  const invoke: Invoke = (op, input, caller) =>
    send(op, input, { ...caller, trace: caller.trace ?? started })
  const server = createMcpServer(
    {
      invoke,
      auths: sessionAuths(identity !== undefined),
      // No event bus here: subscriptions long-poll the hub's waits (see mcp/resources.ts).
      watch: pollWatch(invoke),
      config,
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
