// Structured Field Values for HTTP (RFC 8941): the subset RFC 9421 signatures use, parsed
// strictly. Decimals are refused: no Baton field carries one.
import { fromBase64, toBase64 } from './base64.js'

/** A token bare item (RFC 8941 §3.3.4), kept apart from strings. */
export interface SfToken {
  token: string
}

/** A bare item of the structured-field subset Baton uses (RFC 8941 §3.3). */
export type SfBareItem = string | number | boolean | Uint8Array | SfToken

/** Parameters of an item or inner list, in their order (RFC 8941 §3.1.2). */
export type SfParams = [string, SfBareItem][]

/** An item with its parameters (RFC 8941 §3.3). */
export interface SfItem {
  value: SfBareItem
  params: SfParams
}

/** An inner list with its parameters (RFC 8941 §3.1.1). */
export interface SfInnerList {
  items: SfItem[]
  params: SfParams
}

/** A dictionary (RFC 8941 §3.2): members in order, each an item or an inner list. */
export type SfDictionary = [string, SfItem | SfInnerList][]

/** A structured-field syntax error; the hub turns it into `signature_malformed`. */
export class StructuredFieldError extends Error {}

const KEY = /^[a-z*][a-z0-9_.*-]*$/

function serializeBareItem(v: SfBareItem): string {
  if (typeof v === 'number') {
    // RFC 8941 §4.1.4: integers only, at most 15 digits.
    if (!Number.isSafeInteger(v) || Math.abs(v) > 999_999_999_999_999) {
      throw new StructuredFieldError(`not an sf-integer: ${v}`)
    }
    return String(v)
  }
  if (typeof v === 'string') {
    // RFC 8941 §4.1.6: printable ASCII, with " and \ escaped.
    if (!/^[\x20-\x7e]*$/.test(v))
      throw new StructuredFieldError('sf-string must be printable ASCII')
    return `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`
  }
  if (typeof v === 'boolean') return v ? '?1' : '?0'
  if (v instanceof Uint8Array) return `:${toBase64(v)}:`
  if (!/^[A-Za-z*][\x21\x23-\x27\x2a\x2b\x2d-\x3a\x41-\x5a\x5e-\x7a\x7c\x7e]*$/.test(v.token)) {
    throw new StructuredFieldError(`not an sf-token: ${v.token}`)
  }
  return v.token
}

function serializeParams(params: SfParams): string {
  let out = ''
  for (const [key, value] of params) {
    if (!KEY.test(key)) throw new StructuredFieldError(`not an sf-key: ${key}`)
    // RFC 8941 §4.1.1.2: a true boolean parameter is written as its key alone.
    out += value === true ? `;${key}` : `;${key}=${serializeBareItem(value)}`
  }
  return out
}

/** Serializes an item with its parameters (RFC 8941 §4.1.3), as a component identifier is. */
export function serializeItem(item: SfItem): string {
  return serializeBareItem(item.value) + serializeParams(item.params)
}

/** Serializes an inner list with parameters (RFC 8941 §4.1.1.1), as in `@signature-params`. */
export function serializeInnerList(list: SfInnerList): string {
  const items = list.items.map((i) => serializeBareItem(i.value) + serializeParams(i.params))
  return `(${items.join(' ')})${serializeParams(list.params)}`
}

// Sticky: each matches at the parser's offset, so no rest of the field is sliced off to match.
const KEY_AT = /[a-z*][a-z0-9_.*-]*/y
const INTEGER_AT = /-?[0-9]{1,15}/y
const BYTES_AT = /:([A-Za-z0-9+/]*={0,2}):/y
const TOKEN_AT = /[A-Za-z*][\x21\x23-\x27\x2a\x2b\x2d-\x3a\x41-\x5a\x5e-\x7a\x7c\x7e]*/y

class Parser {
  i = 0
  constructor(readonly s: string) {}
  fail(what: string): never {
    throw new StructuredFieldError(`${what} at offset ${this.i}`)
  }
  peek(): string | undefined {
    return this.s[this.i]
  }
  skipSp(): void {
    while (this.s[this.i] === ' ') this.i++
  }
  skipOws(): void {
    while (this.s[this.i] === ' ' || this.s[this.i] === '\t') this.i++
  }
  /** The match of sticky `re` at the current offset, consumed, or undefined. */
  take(re: RegExp): RegExpExecArray | undefined {
    re.lastIndex = this.i
    const m = re.exec(this.s)
    if (!m) return undefined
    this.i = re.lastIndex
    return m
  }
  key(): string {
    const m = this.take(KEY_AT)
    if (!m) this.fail('expected a key')
    return m[0]
  }
  bareItem(): SfBareItem {
    const c = this.peek()
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      const m = this.take(INTEGER_AT)
      if (!m) this.fail('expected an integer')
      if (this.peek() === '.') this.fail('decimals are not accepted')
      return Number(m[0])
    }
    if (c === '"') {
      // A string without escapes (every one Baton sends) is one slice of the field value.
      let out = ''
      let from = ++this.i
      for (;;) {
        const code = this.s.charCodeAt(this.i)
        if (Number.isNaN(code)) this.fail('unterminated string')
        if (code === 0x22) {
          const value = out + this.s.slice(from, this.i)
          this.i++
          return value
        }
        if (code === 0x5c) {
          const next = this.s[this.i + 1]
          if (next !== '"' && next !== '\\') {
            this.i++
            this.fail('bad escape in string')
          }
          out += this.s.slice(from, this.i) + next
          this.i += 2
          from = this.i
          continue
        }
        if (code < 0x20 || code > 0x7e) {
          this.i++
          this.fail('non-printable character in string')
        }
        this.i++
      }
    }
    if (c === ':') {
      const m = this.take(BYTES_AT)
      if (!m || m[1]!.length % 4 !== 0) this.fail('expected a byte sequence')
      return fromBase64(m[1]!)!
    }
    if (c === '?') {
      const v = this.s[this.i + 1]
      if (v !== '0' && v !== '1') this.fail('expected a boolean')
      this.i += 2
      return v === '1'
    }
    const m = this.take(TOKEN_AT)
    if (!m) this.fail('expected an item')
    return { token: m[0] }
  }
  params(): SfParams {
    const out: SfParams = []
    while (this.peek() === ';') {
      this.i++
      this.skipSp()
      const key = this.key()
      let value: SfBareItem = true
      if (this.peek() === '=') {
        this.i++
        value = this.bareItem()
      }
      const at = out.findIndex(([k]) => k === key)
      if (at >= 0) out.splice(at, 1)
      out.push([key, value])
    }
    return out
  }
  innerList(): SfInnerList {
    this.i++
    const items: SfItem[] = []
    for (;;) {
      this.skipSp()
      if (this.peek() === ')') {
        this.i++
        return { items, params: this.params() }
      }
      const value = this.bareItem()
      items.push({ value, params: this.params() })
      const c = this.peek()
      if (c !== ' ' && c !== ')') this.fail('expected a space or ) in an inner list')
    }
  }
}

/** Parses a dictionary field value strictly (RFC 8941 §4.2.2); throws StructuredFieldError. */
export function parseDictionary(value: string): SfDictionary {
  const p = new Parser(value)
  const out: SfDictionary = []
  p.skipSp()
  if (p.peek() === undefined) return out
  for (;;) {
    const key = p.key()
    let member: SfItem | SfInnerList
    if (p.peek() === '=') {
      p.i++
      if (p.peek() === '(') member = p.innerList()
      else {
        const v = p.bareItem()
        member = { value: v, params: p.params() }
      }
    } else {
      member = { value: true, params: p.params() }
    }
    const at = out.findIndex(([k]) => k === key)
    if (at >= 0) out.splice(at, 1)
    out.push([key, member])
    p.skipOws()
    if (p.peek() === undefined) return out
    if (p.peek() !== ',') p.fail('expected a comma')
    p.i++
    p.skipOws()
    if (p.peek() === undefined) p.fail('trailing comma')
  }
}

/**
 * Serializes a dictionary (RFC 8941 §4.1.2), as in Signature-Input and Signature.
 *
 * @example serializeDictionary([['sig1', { value: new Uint8Array([1]), params: [] }]]) // 'sig1=:AQ==:'
 */
export function serializeDictionary(dict: SfDictionary): string {
  return dict
    .map(([key, member]) => {
      if (!KEY.test(key)) throw new StructuredFieldError(`not an sf-key: ${key}`)
      if ('items' in member) return `${key}=${serializeInnerList(member)}`
      // RFC 8941 §4.1.2: a member whose value is true is written as its key and parameters.
      if (member.value === true) return key + serializeParams(member.params)
      return `${key}=${serializeBareItem(member.value)}${serializeParams(member.params)}`
    })
    .join(', ')
}
