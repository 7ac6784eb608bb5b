import type { SignedClient } from '@baton/client'
import { type HandedTrace, handOn, parseTraceparent } from '../telemetry/trace-context.js'
import { UsageError } from './io.js'

/**
 * The trace context a command continues: `--traceparent`, else the `TRACEPARENT` environment
 * variable (OpenTelemetry's environment carrier), each with `TRACESTATE` when it is set. A flag
 * that is not a valid W3C traceparent is a usage error; an invalid variable is ignored, as a
 * propagator ignores an invalid carrier.
 */
export function traceOfCommand(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): HandedTrace | undefined {
  if (flag !== undefined) {
    const trace = parseTraceparent(flag, env.TRACESTATE)
    if (!trace) {
      throw new UsageError(
        '--traceparent must be a W3C traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>',
      )
    }
    return handOn(trace)
  }
  const trace = parseTraceparent(env.TRACEPARENT, env.TRACESTATE)
  return trace ? handOn(trace) : undefined
}

/** The trace context a view hands on (its `traceparent` and `tracestate`), if it has one. */
export function traceOfView(view: unknown): HandedTrace | undefined {
  const v = view as { traceparent?: unknown; tracestate?: unknown } | null | undefined
  const trace = parseTraceparent(v?.traceparent, v?.tracestate)
  return trace ? handOn(trace) : undefined
}

/** The W3C Trace Context headers of `trace`. */
export function traceHeaders(trace: HandedTrace | undefined): Record<string, string> {
  if (!trace) return {}
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent }
}

/**
 * The same signed client, its every request sent in `trace` (headers the caller gives win).
 * The SDK's calls take no trace context of their own, so a command hands its client this way.
 */
export function continuing(client: SignedClient, trace: HandedTrace | undefined): SignedClient {
  if (!trace) return client
  const headers = traceHeaders(trace)
  const traced = Object.create(client) as SignedClient
  traced.request = (method, path, body, own = {}, options = {}) =>
    client.request(method, path, body, { ...headers, ...own }, options)
  return traced
}
