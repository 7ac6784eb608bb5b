import { randomFillSync } from 'node:crypto'

/** A W3C Trace Context (traceparent and tracestate) as the hub received or made it. */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string
  /** 16 lowercase hex digits, not all zero: the span that is the parent of the next one. */
  spanId: string
  /** The trace-flags byte; bit 0 is `sampled`. */
  flags: number
  /** The tracestate header as received, when it was valid. */
  state?: string | undefined
}

const HEX = /^[0-9a-f]+$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)
const MAX_TRACESTATE = 512
const MAX_TRACESTATE_MEMBERS = 32
// W3C Trace Context §3.3.1.3: key = simple-key / multi-tenant-key; value: printable ASCII
// without `,` and `=`, not ending in a space.
const TRACESTATE_MEMBER =
  /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/

/**
 * Parses a `traceparent` header (W3C Trace Context §3.2): version 00 is exactly
 * `00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>`, lowercase, neither id all zeros. A
 * later version is read by its version-00 prefix (§3.2.4); version ff is invalid. Answers
 * undefined for anything else: the hub then starts a trace of its own or carries none.
 */
export function parseTraceparent(header: unknown, tracestate?: unknown): TraceContext | undefined {
  if (typeof header !== 'string' || header.length < 55) return undefined
  const version = header.slice(0, 2)
  if (!HEX.test(version) || version === 'ff') return undefined
  if (version === '00' ? header.length !== 55 : header.length > 55 && header[55] !== '-') {
    return undefined
  }
  if (header[2] !== '-' || header[35] !== '-' || header[52] !== '-') return undefined
  const traceId = header.slice(3, 35)
  const spanId = header.slice(36, 52)
  const flags = header.slice(53, 55)
  if (!HEX.test(traceId) || !HEX.test(spanId) || !HEX.test(flags)) return undefined
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined
  const state = parseTracestate(tracestate)
  return { traceId, spanId, flags: Number.parseInt(flags, 16), ...(state ? { state } : {}) }
}

/**
 * A `tracestate` header if it is valid (§3.3): at most 32 list members of `key=value`, at most
 * 512 characters; an invalid one is dropped while its traceparent is kept (§3.3.1.1).
 */
export function parseTracestate(header: unknown): string | undefined {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_TRACESTATE) {
    return undefined
  }
  const members = header.split(',')
  let n = 0
  for (const raw of members) {
    const member = raw.trim()
    if (member === '') continue
    if (++n > MAX_TRACESTATE_MEMBERS || !TRACESTATE_MEMBER.test(member)) return undefined
  }
  return n === 0 ? undefined : header
}

/** The `traceparent` header of a context, version 00. */
export function formatTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${trace.spanId}-${(trace.flags & 0xff).toString(16).padStart(2, '0')}`
}

// Random ids are cut from one buffer of the system's randomness, filled again when used up: a
// request's trace costs no call into the random source of its own.
const POOL = Buffer.alloc(4096)
let poolAt = POOL.length

/** `n` random bytes as hex, from the pool. */
function randomHex(n: number): string {
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL)
    poolAt = 0
  }
  poolAt += n
  return POOL.toString('hex', poolAt - n, poolAt)
}

/** A fresh random span id (8 bytes, never all zero). */
export function newSpanId(): string {
  for (;;) {
    const id = randomHex(8)
    if (id !== ZERO_SPAN) return id
  }
}

/** The trace context work carries on to whoever receives it: the headers its receiver sends. */
export interface HandedTrace {
  traceparent: string
  tracestate?: string | undefined
}

/** The trace context a request hands on, as the headers its receiver sends. */
export function handOn(trace: TraceContext): HandedTrace {
  return {
    traceparent: formatTraceparent(trace),
    ...(trace.state ? { tracestate: trace.state } : {}),
  }
}

/**
 * A trace of the hub's own for a request that carried none (W3C Trace Context §4.2): a random
 * trace id and an id for the request, flags 00 since nothing of it is recorded unless tracing
 * is on. 24 random bytes; no OpenTelemetry code.
 */
export function startTrace(): TraceContext {
  for (;;) {
    const bytes = randomHex(24)
    const traceId = bytes.slice(0, 32)
    const spanId = bytes.slice(32)
    if (traceId !== ZERO_TRACE && spanId !== ZERO_SPAN) return { traceId, spanId, flags: 0 }
  }
}

/**
 * The `traceresponse` header of a request (W3C Trace Context Level 2 §3.1): the trace the
 * request belongs to and the id of the hub's part in it, sampled only when the hub recorded it.
 */
export function formatTraceresponse(
  trace: TraceContext,
  spanId: string,
  recorded: boolean,
): string {
  return formatTraceparent({ traceId: trace.traceId, spanId, flags: recorded ? trace.flags : 0 })
}

/** The columns a write records its request's trace context in (null: none was carried). */
export function traceColumns(trace: HandedTrace | undefined): {
  trace: string | null
  trace_state: string | null
} {
  return { trace: trace?.traceparent ?? null, trace_state: trace?.tracestate ?? null }
}

/** The trace context a stored write hands on to the agent that reads it, as view fields. */
export function traceFields(row: {
  trace?: string | null | undefined
  trace_state?: string | null | undefined
}): Partial<HandedTrace> {
  if (!row.trace) return {}
  return row.trace_state
    ? { traceparent: row.trace, tracestate: row.trace_state }
    : { traceparent: row.trace }
}
