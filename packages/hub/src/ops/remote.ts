import { BatonError } from '@baton/protocol/primitives'
import type { WaitSignal } from '../events/wait.js'
import { AUTH_KINDS } from './auth-kinds.js'
import type { Invoke } from './mcp.js'
import type { Operation, OperationInput } from './operation.js'

/** What a remote face needs of an operation: its name, route and auth (a CLI command has them). */
export type RemoteOperation = Pick<Operation, 'name' | 'method' | 'path' | 'auth'>

/** The path and query of an operation's HTTP request for a given input. */
export function requestPath(
  op: Pick<Operation, 'path'>,
  input: OperationInput<unknown, unknown, unknown>,
): string {
  const params = (input.params ?? {}) as Record<string, unknown>
  const path = op.path.replace(/:([A-Za-z_]+)/g, (_, name: string) =>
    encodeURIComponent(String(params[name] ?? '')),
  )
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, unknown>)) {
    if (v !== undefined) query.set(k, String(v))
  }
  const qs = query.toString()
  return qs ? `${path}?${qs}` : path
}

// The callers of a remote face (MCP, the CLI) hold AbortSignals; any other signal is followed
// by a controller of its own, since fetch takes nothing else.
function toAbortSignal(signal: WaitSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal
  const abort = new AbortController()
  if (signal.aborted) abort.abort()
  else signal.addEventListener('abort', () => abort.abort(), { once: true })
  return abort.signal
}

/** How a remote face sends one request: signed as an identity, or plain with a bearer token. */
export interface Transport {
  /** Sends a signed request; absent when the face has no identity. */
  signed?: (
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    signal: AbortSignal,
  ) => Promise<{ status: number; body: unknown }>
  /** Sends an unsigned request, with a bearer token when given. */
  plain: (
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    signal: AbortSignal,
  ) => Promise<{ status: number; body: unknown }>
}

/**
 * An `Invoke` that reaches a hub over HTTP, built from each operation's declaration: the same
 * operations the hub serves, so a stdio MCP server and the CLI need no per-route code.
 */
export function remoteInvoke(
  transport: Transport,
): (
  op: RemoteOperation,
  input: OperationInput<unknown, unknown, unknown>,
  caller: Parameters<Invoke>[2],
) => Promise<unknown> {
  return async (op, input, caller) => {
    const path = requestPath(op, input)
    const headers: Record<string, string> = {}
    if (caller.idempotencyKey) headers['idempotency-key'] = caller.idempotencyKey
    // W3C Trace Context: the hub continues the caller's trace (an MCP call's `_meta`, the CLI's).
    if (caller.trace) {
      headers.traceparent = caller.trace.traceparent
      if (caller.trace.tracestate) headers.tracestate = caller.trace.tracestate
    }
    const how = AUTH_KINDS[op.auth].remote
    if (how === 'bearer' && caller.token) headers.authorization = `Bearer ${caller.token}`
    const send = how === 'signed' ? transport.signed : transport.plain
    if (!send)
      throw new BatonError('signature_missing', `${op.name} needs an identity to sign with`)
    const answer = await send(op.method, path, input.body, headers, toAbortSignal(caller.signal))
    if (answer.status >= 400) throw BatonError.fromBody(answer.body, answer.status)
    return answer.body
  }
}
