import assert from 'node:assert/strict'
import { ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import type { TestHub } from './support.js'

/** The body limit the fuzzing hubs run with, so an oversized body stays cheap to send. */
export const FUZZ_LIMITS = { BATON_BODY_LIMIT_BYTES: '65536', BATON_SNAPSHOT_MAX_BYTES: '131072' }

const FIELDS = [
  'payload',
  'note',
  'from',
  'nonce',
  'data',
  'namespace',
  'body',
  'recipient',
  'idempotencyKey',
  'content',
  'path',
  'snapshot',
  'tier',
  'token',
  'params',
  'arguments',
  'x',
]

const utf8 = (s: string) => Buffer.from(s, 'utf8')
const nestedArrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`

/** A body every route must refuse, whatever its schema: what it is, and its exact bytes. */
export interface HostileBody {
  kind: 'oversized' | 'deep' | '__proto__' | 'nul' | 'lone-surrogate' | 'invalid-utf8'
  bytes: Buffer
}

const field = fc.constantFrom(...FIELDS)
const inner = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))

/**
 * Bodies no route may accept: larger than any route's limit, nested past the guard's depth, with
 * a `__proto__` member, a NUL or an unpaired surrogate in a string or key, or bytes that are not
 * UTF-8. Each is valid JSON in every other respect, so only the guard can refuse it.
 */
export const hostileBody: fc.Arbitrary<HostileBody> = fc.oneof(
  fc
    .tuple(field, fc.integer({ min: 140_000, max: 200_000 }))
    .map(([f, n]) => ({ kind: 'oversized' as const, bytes: utf8(`{"${f}":"${'x'.repeat(n)}"}`) })),
  fc.tuple(field, fc.integer({ min: 129, max: 5000 }), fc.boolean()).map(([f, d, arrays]) => ({
    kind: 'deep' as const,
    bytes: utf8(`{"${f}":${arrays ? nestedArrays(d) : nestedObjects(d)}}`),
  })),
  fc.tuple(field, inner, fc.boolean()).map(([f, v, top]) => ({
    kind: '__proto__' as const,
    bytes: utf8(top ? `{"__proto__":${v},"${f}":1}` : `{"${f}":{"a":1,"__proto__":${v}}}`),
  })),
  fc.tuple(field, fc.string({ maxLength: 8 }), fc.boolean()).map(([f, s, inKey]) => {
    const nul = JSON.stringify(`${s}\u0000${s}`)
    return { kind: 'nul' as const, bytes: utf8(inKey ? `{"${f}":{${nul}:1}}` : `{"${f}":${nul}}`) }
  }),
  fc
    .tuple(field, fc.constantFrom('\\ud800', '\\udbff', '\\udc00', '\\udfffx', 'a\\ud800b'))
    .map(([f, s]) => ({ kind: 'lone-surrogate' as const, bytes: utf8(`{"${f}":"${s}"}`) })),
  fc
    .tuple(
      field,
      fc.constantFrom(
        [0xff],
        [0xfe, 0xff],
        [0xc0, 0xaf],
        [0xc3, 0x28],
        [0xed, 0xa0, 0x80],
        [0xe2, 0x82],
        [0xf4, 0x90, 0x80, 0x80],
      ),
    )
    .map(([f, bad]) => ({
      kind: 'invalid-utf8' as const,
      bytes: Buffer.concat([utf8(`{"${f}":"a`), Buffer.from(bad), utf8('b"}')]),
    })),
)

/** A path or query value, percent-encoded as sent: NUL, unpaired surrogates, bad UTF-8, or text. */
export const hostileParam = fc.oneof(
  fc.constantFrom('%00', 'a%00b', '%ED%A0%80', '%ED%B0%80', '%FF', '%C0%AF', '%E2%82', '%'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
)

/**
 * True for a refusal body with a registered code, or — from `/mcp`, which answers malformed
 * JSON-RPC in JSON-RPC — a JSON-RPC error object with one of its standard codes.
 */
export function isRegisteredRefusal(body: unknown): boolean {
  const b = body as { code?: unknown; jsonrpc?: unknown; error?: { code?: unknown } } | undefined
  if (b?.jsonrpc === '2.0') return [-32700, -32600].includes(Number(b.error?.code))
  return Object.hasOwn(ERRORS, String(b?.code))
}

/** Asserts an answer is not a 5xx and that a refusal carries a registered code. */
export function assertAnswered(what: string, status: number, body: unknown): void {
  assert.ok(status < 500, `${what} -> ${status} ${JSON.stringify(body)}`)
  if (status >= 400) assert.ok(isRegisteredRefusal(body), `${what}: ${JSON.stringify(body)}`)
}

// Tables of what callers store; signature nonces, quota counters and enrolment are bookkeeping
// a refused request may still touch (it was signed and counted before its body was read).
const STATE_TABLES = [
  'handoffs',
  'handoff_moves',
  'resources',
  'resource_versions',
  'grants',
  'messages',
  'counters',
  'home_files',
  'idempotency_keys',
  'transfers',
  'transfer_snapshots',
  'transfer_events',
  'transfer_usage',
  'transfer_token_uses',
] as const

/** Every row a caller can store, read back from the database, in a stable order. */
export async function storedState(hub: TestHub): Promise<Record<string, string[]>> {
  const state: Record<string, string[]> = {}
  for (const table of STATE_TABLES) {
    const rows = await hub.ctx.database.db.selectFrom(table).selectAll().execute()
    state[table] = rows.map((r) => JSON.stringify(r)).sort()
  }
  return state
}
