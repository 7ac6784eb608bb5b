import { BatonError } from '@baton/protocol'

/**
 * The deepest nesting of arrays and objects any JSON body may have. Validation (zod), RFC 8785
 * canonicalization and the secret scan of snapshots recurse, so a bound here keeps every route
 * far from the stack limit; it leaves room for a message body at its own limit of 64 levels.
 */
export const MAX_JSON_DEPTH = 128

// RFC 8259 §8.1: JSON exchanged between systems is UTF-8. A replacement character in place of a
// bad byte would make the hub store, and sign receipts over, a body other than the one sent.
const utf8 = new TextDecoder('utf-8', { fatal: true })

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Tells whether a string is text both stores keep exactly: PostgreSQL text and jsonb refuse
 * U+0000 and unpaired surrogates (which have no UTF-8 form), so the hub refuses them everywhere.
 */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && !LONE_SURROGATE.test(s)
}

/** Throws `invalid_text` (400) naming `field` when a string cannot be stored exactly. */
export function assertStorableText(s: string, field: string): void {
  if (!isStorableText(s)) {
    throw new BatonError(
      'invalid_text',
      `The value of ${field} holds U+0000 or an unpaired surrogate, which cannot be stored`,
      { field },
    )
  }
}

interface Frame {
  value: unknown
  depth: number
  key: string | undefined
  parent: Frame | undefined
}

function fieldOf(frame: Frame | undefined, what: string): string {
  const parts: string[] = []
  for (let f = frame; f?.key !== undefined; f = f.parent) parts.push(f.key)
  return parts.length === 0 ? what : parts.reverse().join('.')
}

/**
 * Walks a parsed JSON value without recursion and refuses what no route may receive: nesting
 * deeper than MAX_JSON_DEPTH (`invalid_request` with `max_depth`), a `__proto__` member
 * (`json_key_forbidden`: a JavaScript object cannot hold it faithfully through validation and
 * copies, so a stored or digested body would differ from the one sent), and strings with U+0000
 * or an unpaired surrogate (`invalid_text`), as keys or values. `field` names the place.
 */
export function assertSafeJson(value: unknown, what = 'body'): void {
  const stack: Frame[] = [{ value, depth: 1, key: undefined, parent: undefined }]
  while (stack.length > 0) {
    const frame = stack.pop()!
    const v = frame.value
    if (typeof v === 'string') {
      assertStorableText(v, fieldOf(frame, what))
      continue
    }
    if (v === null || typeof v !== 'object') continue
    if (frame.depth > MAX_JSON_DEPTH) {
      throw new BatonError(
        'invalid_request',
        `The ${what} nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
        { field: fieldOf(frame, what), max_depth: MAX_JSON_DEPTH },
      )
    }
    const depth = frame.depth + 1
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i], depth, key: String(i), parent: frame })
      }
      continue
    }
    for (const key of Object.keys(v)) {
      const child: Frame = { value: (v as Record<string, unknown>)[key], depth, key, parent: frame }
      if (key === '__proto__') {
        throw new BatonError(
          'json_key_forbidden',
          `The ${what} has a "__proto__" member, which the hub does not accept`,
          { field: fieldOf(child, what) },
        )
      }
      assertStorableText(key, fieldOf(child, what))
      stack.push(child)
    }
  }
}

/**
 * Parses a JSON request body from its bytes: strict UTF-8, then JSON, then `assertSafeJson`.
 * An empty body (only whitespace) is `undefined`. The one parser of every JSON body the hub reads.
 */
export function parseJsonBody(bytes: Uint8Array): unknown {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new BatonError('invalid_json', 'The request body is not valid UTF-8')
  }
  if (text.trim() === '') return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new BatonError('invalid_json', 'The request body is not valid JSON')
  }
  assertSafeJson(value)
  return value
}

/**
 * Refuses a path or query parameter that cannot be stored exactly (see `isStorableText`): the
 * same rule as for bodies, so an id with `%00` is a 400 on both stores rather than a database error.
 */
export function assertSafeParams(params: unknown, where: 'path' | 'query'): void {
  if (params === null || typeof params !== 'object') return
  for (const [key, value] of Object.entries(params)) {
    assertStorableText(key, where)
    const values = Array.isArray(value) ? value : [value]
    for (const v of values) {
      if (typeof v === 'string') assertStorableText(v, `${where}.${key}`)
    }
  }
}
