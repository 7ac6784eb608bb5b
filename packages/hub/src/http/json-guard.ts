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

/** The default of `BATON_BODY_MAX_ELEMENTS`: most array items and object members in one body. */
export const DEFAULT_MAX_JSON_ELEMENTS = 20_000

/** The bounds of a JSON body beyond its size in bytes, which the router checks. */
export interface JsonBounds {
  /** Most array items and object members in the whole body (`body_too_many_elements`). */
  maxElements: number
}

const QUOTE = 0x22
const U = 0x75
const COMMA = 0x2c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

/** The value of the four hex digits at `at`, or -1 when they are not hex (JSON.parse refuses). */
function hex4(text: string, at: number): number {
  let n = 0
  for (let k = at; k < at + 4; k++) {
    const c = text.charCodeAt(k)
    const d =
      c >= 0x30 && c <= 0x39
        ? c - 0x30
        : c >= 0x61 && c <= 0x66
          ? c - 0x57
          : c >= 0x41 && c <= 0x46
            ? c - 0x37
            : -1
    if (d < 0) return -1
    n = n * 16 + d
  }
  return n
}

/**
 * Checks the text of a JSON body in one pass, before it is parsed, so that no shape can make the
 * parser, the schema or anything after them do more than the bounds allow: nesting deeper than
 * MAX_JSON_DEPTH (`invalid_request` with `max_depth`), more than `maxElements` array items and
 * object members (`body_too_many_elements`), a `__proto__` member (`json_key_forbidden`: a
 * JavaScript object cannot hold it faithfully through validation and copies, so a stored or
 * digested body would differ from the one sent), and U+0000 or an unpaired surrogate in a string
 * or key (`invalid_text`). Decoded UTF-8 holds no lone surrogate and JSON.parse refuses a raw
 * U+0000, so only a `\u` escape can put either in a string: inside strings, only escapes are
 * read. Syntax is JSON.parse's to check. `field` names the place, built only for an error from
 * the key or index each open level is at.
 */
export function scanJsonText(text: string, bounds: JsonBounds, what = 'body'): void {
  const n = text.length
  // Per open level (1-based): whether it is an object, the index its array is at, and where the
  // last key of its object begins and ends (its quotes).
  const isObject = new Uint8Array(MAX_JSON_DEPTH + 1)
  const index = new Uint32Array(MAX_JSON_DEPTH + 1)
  const keyFrom = new Int32Array(MAX_JSON_DEPTH + 1)
  const keyTo = new Int32Array(MAX_JSON_DEPTH + 1)
  let depth = 0
  let elements = 0
  // A container has just opened: the first thing in it, unless it closes it, is an element.
  let fresh = false
  let expectKey = false
  // The next backslash and quote at or after the place being read, each searched for once.
  let backslash = -1
  let quote = -1

  const pathTo = (levels: number): string => {
    const parts: string[] = []
    for (let d = 1; d <= levels; d++) {
      parts.push(isObject[d] ? decodeKey(text, keyFrom[d]!, keyTo[d]!) : String(index[d]))
    }
    return parts.length === 0 ? what : parts.join('.')
  }
  const count = () => {
    if (++elements > bounds.maxElements) {
      throw new BatonError(
        'body_too_many_elements',
        `The ${what} holds more than ${bounds.maxElements} array items and object members`,
        { field: what, limit: bounds.maxElements },
      )
    }
  }

  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue
    if (fresh) {
      fresh = false
      if (c !== CLOSE_ARRAY && c !== CLOSE_OBJECT) count()
    }
    if (c === QUOTE) {
      const from = i
      let at = i + 1
      let escaped = false
      let bad = false
      // Where the \u escape of a high surrogate ends: only a low one may begin there.
      let pairAt = -1
      for (;;) {
        if (quote < at) quote = text.indexOf('"', at)
        if (quote < 0) quote = n
        if (backslash < at && backslash < n) backslash = text.indexOf('\\', at)
        if (backslash < 0) backslash = n
        if (backslash >= quote) break
        escaped = true
        const b = backslash
        if (text.charCodeAt(b + 1) === U) {
          const unit = hex4(text, b + 2)
          const high = unit >= 0xd800 && unit <= 0xdbff
          const low = unit >= 0xdc00 && unit <= 0xdfff
          if (pairAt >= 0) {
            if (b !== pairAt || !low) bad = true
            pairAt = b !== pairAt && high ? b + 6 : -1
          } else if (high) pairAt = b + 6
          else if (low || unit === 0) bad = true
          at = b + 6
        } else {
          if (pairAt >= 0) bad = true
          pairAt = -1
          at = b + 2
        }
      }
      if (pairAt >= 0) bad = true
      i = quote
      if (depth > 0 && expectKey) {
        expectKey = false
        keyFrom[depth] = from
        keyTo[depth] = quote
        const length = quote - from - 1
        if (
          escaped
            ? !bad && length <= 54 && decodeKey(text, from, quote) === '__proto__'
            : length === 9 && text.startsWith('__proto__', from + 1)
        ) {
          throw new BatonError(
            'json_key_forbidden',
            `The ${what} has a "__proto__" member, which the hub does not accept`,
            { field: pathTo(depth) },
          )
        }
      }
      if (bad) throw invalidText(pathTo(depth))
      continue
    }
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth === MAX_JSON_DEPTH) {
        throw new BatonError(
          'invalid_request',
          `The ${what} nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
          { field: pathTo(depth), max_depth: MAX_JSON_DEPTH },
        )
      }
      depth++
      isObject[depth] = c === OPEN_OBJECT ? 1 : 0
      index[depth] = 0
      expectKey = c === OPEN_OBJECT
      fresh = true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth > 0) depth--
      expectKey = false
    } else if (c === COMMA) {
      count()
      if (depth > 0) {
        if (isObject[depth]) expectKey = true
        else index[depth]!++
      }
    }
  }
}

/** The key whose quotes are at `from` and `to`, decoded; as written when it does not decode. */
function decodeKey(text: string, from: number, to: number): string {
  const raw = text.slice(from, to + 1)
  try {
    return JSON.parse(raw) as string
  } catch {
    return raw.slice(1, -1)
  }
}

/**
 * Parses a JSON request body from its bytes: strict UTF-8, then `scanJsonText`, then JSON.parse.
 * An empty body (only whitespace) is `undefined`. The one parser of every JSON body the hub
 * reads, MCP tool calls among them: what it answers is plain JSON within the bounds, so no schema
 * needs to walk it again (see `jsonValue` in the protocol).
 */
export function parseJsonBody(
  bytes: Uint8Array,
  bounds: JsonBounds = { maxElements: DEFAULT_MAX_JSON_ELEMENTS },
): unknown {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new BatonError('invalid_json', 'The request body is not valid UTF-8')
  }
  if (text.trim() === '') return undefined
  try {
    scanJsonText(text, bounds)
  } catch (error) {
    if (isDepthRefusal(error)) Object.defineProperty(error, REFUSED_TEXT, { value: text })
    throw error
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new BatonError('invalid_json', 'The request body is not valid JSON')
  }
}

/** Where a depth refusal keeps the text it refused, for {@link refusedEnvelope}. */
const REFUSED_TEXT = Symbol('refused JSON text')

/** True for the guard's refusal of a body nested deeper than MAX_JSON_DEPTH. */
export function isDepthRefusal(error: unknown): error is BatonError {
  return (
    error instanceof BatonError &&
    error.code === 'invalid_request' &&
    error.context.max_depth === MAX_JSON_DEPTH &&
    typeof error.context.field === 'string'
  )
}

/**
 * The outer levels of a body the guard refused for its depth: its members down to `levels`
 * deep, every array or object below them read as null, so a face can tell what the body asked
 * for (an MCP tool call's id and tool name) without parsing what the guard refused. One pass of
 * the text; undefined for any other error, or a text that is not JSON once cut.
 */
export function refusedEnvelope(error: unknown, levels: number): unknown {
  const text = (error as { [REFUSED_TEXT]?: string } | null)?.[REFUSED_TEXT]
  if (typeof text !== 'string') return undefined
  let out = ''
  let from = 0
  let depth = 0
  let cutAt = -1
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // Past the string: its closing quote is the first one not escaped.
      for (i++; i < text.length && text.charCodeAt(i) !== QUOTE; i++) {
        if (text.charCodeAt(i) === 0x5c) i++
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth === levels) cutAt = i
      depth++
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
      if (depth === levels && cutAt >= 0) {
        out += `${text.slice(from, cutAt)}null`
        from = i + 1
        cutAt = -1
      }
    }
  }
  try {
    return JSON.parse(out + text.slice(from))
  } catch {
    return undefined
  }
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
