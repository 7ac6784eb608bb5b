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
// Any character that may make a string unstorable; most strings have none, and this is a cheaper
// test than the exact one.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what it looks for
const SUSPECT = /[\u0000\ud800-\udfff]/

// The shortest JSON text nested deeper than MAX_JSON_DEPTH: one more opening bracket than the
// limit allows, and their closing ones.
const SHORTEST_TOO_DEEP = 2 * (MAX_JSON_DEPTH + 1)

/**
 * Tells whether a string is text both stores keep exactly: PostgreSQL text and jsonb refuse
 * U+0000 and unpaired surrogates (which have no UTF-8 form), so the hub refuses them everywhere.
 */
export function isStorableText(s: string): boolean {
  return !SUSPECT.test(s) || (!s.includes('\u0000') && !LONE_SURROGATE.test(s))
}

/** Throws `invalid_text` (400) naming `field` when a string cannot be stored exactly. */
export function assertStorableText(s: string, field: string): void {
  if (!isStorableText(s)) throw invalidText(field)
}

function invalidText(field: string): BatonError {
  return new BatonError(
    'invalid_text',
    `The value of ${field} holds U+0000 or an unpaired surrogate, which cannot be stored`,
    { field },
  )
}

/** The dotted name of the place `path` leads to, or `what` for the whole value. */
function fieldOf(path: readonly string[], what: string): string {
  return path.length === 0 ? what : path.join('.')
}

/**
 * Walks a parsed JSON value and refuses what no route may receive: nesting deeper than
 * MAX_JSON_DEPTH (`invalid_request` with `max_depth`), a `__proto__` member
 * (`json_key_forbidden`: a JavaScript object cannot hold it faithfully through validation and
 * copies, so a stored or digested body would differ from the one sent), and strings with U+0000
 * or an unpaired surrogate (`invalid_text`), as keys or values. `field` names the place. The
 * recursion is bounded by MAX_JSON_DEPTH, since a deeper value is refused before it is entered.
 * `checkText: false` skips the string checks, for values parsed from text that cannot hold such
 * strings (see `parseJsonBody`).
 */
export function assertSafeJson(value: unknown, what = 'body', checkText = true): void {
  walk(value, 1, [], what, checkText)
}

function walk(v: unknown, depth: number, path: string[], what: string, text: boolean): void {
  if (typeof v === 'string') {
    if (text && !isStorableText(v)) throw invalidText(fieldOf(path, what))
    return
  }
  if (v === null || typeof v !== 'object') return
  if (depth > MAX_JSON_DEPTH) {
    throw new BatonError(
      'invalid_request',
      `The ${what} nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
      { field: fieldOf(path, what), max_depth: MAX_JSON_DEPTH },
    )
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item: unknown = v[i]
      if (typeof item === 'object' ? item !== null : text && typeof item === 'string') {
        path.push(String(i))
        walk(item, depth + 1, path, what, text)
        path.pop()
      }
    }
    return
  }
  const record = v as Record<string, unknown>
  for (const key of Object.keys(record)) {
    path.push(key)
    if (key === '__proto__') {
      throw new BatonError(
        'json_key_forbidden',
        `The ${what} has a "__proto__" member, which the hub does not accept`,
        { field: fieldOf(path, what) },
      )
    }
    if (text && !isStorableText(key)) throw invalidText(fieldOf(path, what))
    walk(record[key], depth + 1, path, what, text)
    path.pop()
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
  // Strict UTF-8 cannot encode a surrogate, and JSON.parse refuses a raw U+0000, so only a \u
  // escape can put either in a string, or spell `__proto__` other than literally. Text too short
  // to nest too deeply, with neither, needs no walk; without escapes, no string needs checking.
  const escapes = text.includes('\\u')
  if (!escapes && text.length < SHORTEST_TOO_DEEP && !text.includes('__proto__')) return value
  assertSafeJson(value, 'body', escapes)
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
