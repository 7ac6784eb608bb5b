import { type KeyObject, randomBytes, sign } from 'node:crypto'
import {
  BatonError,
  BODY_COMPONENTS,
  PRESENT_COMPONENTS,
  REQUIRED_COMPONENTS,
  SIGNATURE_ALGORITHM,
  SIGNATURE_LABEL,
} from '@baton/protocol'
import { contentDigest } from './content-digest.js'

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
  if (v instanceof Uint8Array) return `:${Buffer.from(v).toString('base64')}:`
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

/** Serializes an inner list with parameters (RFC 8941 §4.1.1.1), as in `@signature-params`. */
export function serializeInnerList(list: SfInnerList): string {
  const items = list.items.map((i) => serializeBareItem(i.value) + serializeParams(i.params))
  return `(${items.join(' ')})${serializeParams(list.params)}`
}

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
  key(): string {
    const m = /^[a-z*][a-z0-9_.*-]*/.exec(this.s.slice(this.i))
    if (!m) this.fail('expected a key')
    this.i += m[0].length
    return m[0]
  }
  bareItem(): SfBareItem {
    const c = this.peek()
    const rest = this.s.slice(this.i)
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      const m = /^-?[0-9]{1,15}/.exec(rest)
      if (!m) this.fail('expected an integer')
      this.i += m[0].length
      if (this.peek() === '.') this.fail('decimals are not accepted')
      return Number(m[0])
    }
    if (c === '"') {
      let out = ''
      this.i++
      for (;;) {
        const ch = this.s[this.i++]
        if (ch === undefined) this.fail('unterminated string')
        if (ch === '\\') {
          const next = this.s[this.i++]
          if (next !== '"' && next !== '\\') this.fail('bad escape in string')
          out += next
        } else if (ch === '"') {
          return out
        } else if (ch < ' ' || ch > '~') {
          this.fail('non-printable character in string')
        } else {
          out += ch
        }
      }
    }
    if (c === ':') {
      const m = /^:([A-Za-z0-9+/]*={0,2}):/.exec(rest)
      if (!m || m[1]!.length % 4 !== 0) this.fail('expected a byte sequence')
      this.i += m[0].length
      return new Uint8Array(Buffer.from(m[1]!, 'base64'))
    }
    if (c === '?') {
      const v = this.s[this.i + 1]
      if (v !== '0' && v !== '1') this.fail('expected a boolean')
      this.i += 2
      return v === '1'
    }
    const m = /^[A-Za-z*][\x21\x23-\x27\x2a\x2b\x2d-\x3a\x41-\x5a\x5e-\x7a\x7c\x7e]*/.exec(rest)
    if (!m) this.fail('expected an item')
    this.i += m[0].length
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

/** An HTTP request as RFC 9421 sees it: method, absolute target URI and fields by lower-case name. */
export interface HttpMessage {
  method: string
  targetUri: string
  headers: Record<string, string | string[] | undefined>
}

const TARGET = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?$/

/**
 * The value of one covered component of a request (RFC 9421 §2.1 and §2.2). Throws
 * `signature_malformed` for a component Baton does not support and `signature_invalid` for a
 * covered field the message does not have (RFC 9421 §2.5: the base cannot be built).
 */
export function componentValue(message: HttpMessage, name: string): string {
  if (name.startsWith('@')) {
    const m = TARGET.exec(message.targetUri)
    if (!m) throw new BatonError('signature_malformed', 'The target URI is not absolute')
    const scheme = m[1]!.toLowerCase()
    const path = m[3] || '/'
    const query = m[4] ?? ''
    switch (name) {
      case '@method':
        return message.method
      case '@target-uri':
        return message.targetUri
      case '@scheme':
        return scheme
      case '@authority': {
        // RFC 9421 §2.2.3: lower-cased host, default port omitted.
        const host = m[2]!.toLowerCase()
        if (scheme === 'https' && host.endsWith(':443')) return host.slice(0, -4)
        if (scheme === 'http' && host.endsWith(':80')) return host.slice(0, -3)
        return host
      }
      case '@path':
        return path
      case '@query':
        return query === '' ? '?' : query
      case '@request-target':
        return path + query
      default:
        throw new BatonError('signature_malformed', `Unsupported derived component ${name}`, {
          reason: 'component_unsupported',
        })
    }
  }
  const raw = message.headers[name]
  if (raw === undefined) {
    throw new BatonError('signature_invalid', `The covered field ${name} is absent`, {
      reason: 'covered_field_absent',
      component: name,
    })
  }
  // RFC 9421 §2.1: each field line's value trimmed, lines joined with ", ".
  return (Array.isArray(raw) ? raw : [raw]).map((v) => v.trim()).join(', ')
}

/**
 * The signature base of a request (RFC 9421 §2.5): one line per covered component, then the
 * `@signature-params` line holding the serialized inner list.
 */
export function signatureBase(message: HttpMessage, input: SfInnerList): string {
  const lines: string[] = []
  const seen = new Set<string>()
  for (const item of input.items) {
    if (typeof item.value !== 'string' || item.params.length > 0) {
      throw new BatonError('signature_malformed', 'Covered components must be plain strings', {
        reason: 'component_unsupported',
      })
    }
    const name = item.value
    // RFC 9421 §2.5: a component may appear at most once, and names are lower case.
    if (seen.has(name) || name !== name.toLowerCase()) {
      throw new BatonError(
        'signature_malformed',
        `Component ${name} is repeated or not lower case`,
        {
          reason: 'component_invalid',
        },
      )
    }
    seen.add(name)
    const value = componentValue(message, name)
    if (/[\r\n]/.test(value)) {
      throw new BatonError('signature_malformed', `Component ${name} holds a line break`)
    }
    lines.push(`"${name}": ${value}`)
  }
  lines.push(`"@signature-params": ${serializeInnerList(input)}`)
  return lines.join('\n')
}

/** What `signMessage` needs: the key, the keyid, and optionally every parameter. */
export interface SignOptions {
  privateKey: KeyObject
  keyid: string
  /** Covered components; defaults to Baton's set for the message. */
  components?: readonly string[]
  /** Seconds since the epoch; defaults to now. */
  created?: number
  expires?: number
  /** A fresh random nonce by default; null leaves it out. */
  nonce?: string | null
  /** `ed25519` by default; null leaves the parameter out. */
  alg?: string | null
  label?: string
}

/** The two fields a signature adds to a request, and the base that was signed. */
export interface SignedFields {
  signatureInput: string
  signature: string
  base: string
}

/**
 * Baton's covered components for a request with or without a body; given the request's fields,
 * also each of PRESENT_COMPONENTS (such as `idempotency-key`) that it carries.
 *
 * @example defaultComponents(true, { 'idempotency-key': 'k-12345678' })
 */
export function defaultComponents(
  hasBody: boolean,
  headers: HttpMessage['headers'] = {},
): string[] {
  const base = hasBody ? [...REQUIRED_COMPONENTS, ...BODY_COMPONENTS] : [...REQUIRED_COMPONENTS]
  return [...base, ...PRESENT_COMPONENTS.filter((c) => headers[c] !== undefined)]
}

/** A fresh nonce: 16 random bytes, base64url. */
export function newNonce(): string {
  return randomBytes(16).toString('base64url')
}

/**
 * Signs a request with Ed25519 (RFC 9421 §3.1, §3.3.6) and answers the Signature-Input and
 * Signature field values.
 *
 * @example const { signatureInput, signature } = signMessage(msg, { privateKey, keyid: principal })
 */
export function signMessage(message: HttpMessage, opts: SignOptions): SignedFields {
  const label = opts.label ?? SIGNATURE_LABEL
  const components =
    opts.components ??
    defaultComponents(message.headers['content-digest'] !== undefined, message.headers)
  const params: SfParams = [['created', opts.created ?? Math.floor(Date.now() / 1000)]]
  if (opts.expires !== undefined) params.push(['expires', opts.expires])
  const nonce = opts.nonce === undefined ? newNonce() : opts.nonce
  if (nonce !== null) params.push(['nonce', nonce])
  params.push(['keyid', opts.keyid])
  const alg = opts.alg === undefined ? SIGNATURE_ALGORITHM : opts.alg
  if (alg !== null) params.push(['alg', alg])
  const input: SfInnerList = { items: components.map((c) => ({ value: c, params: [] })), params }
  const base = signatureBase(message, input)
  const sig = sign(null, Buffer.from(base, 'utf8'), opts.privateKey)
  return {
    signatureInput: `${label}=${serializeInnerList(input)}`,
    signature: `${label}=:${sig.toString('base64')}:`,
    base,
  }
}

/** A request ready to send: method, URL, headers with signature fields, and the body bytes. */
export interface SignedRequest {
  method: string
  url: string
  headers: Record<string, string>
  body: Uint8Array | undefined
}

/**
 * Builds and signs a Baton request: adds Content-Type and Content-Digest (RFC 9530) when there is
 * a body, then Signature-Input and Signature over Baton's covered components (with
 * `idempotency-key` when the headers carry one, so it cannot be added or changed after signing).
 *
 * @example const req = signRequest({ method: 'GET', url: 'https://hub.example/v1/me', privateKey, keyid })
 */
export function signRequest(req: {
  method: string
  url: string
  body?: Uint8Array | undefined
  contentType?: string
  headers?: Record<string, string>
  privateKey: KeyObject
  keyid: string
  created?: number
  nonce?: string
}): SignedRequest {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v
  const hasBody = req.body !== undefined && req.body.length > 0
  if (hasBody) {
    headers['content-type'] ??= req.contentType ?? 'application/json'
    headers['content-digest'] = contentDigest(req.body!)
  }
  const signed = signMessage(
    { method: req.method, targetUri: req.url, headers },
    {
      privateKey: req.privateKey,
      keyid: req.keyid,
      components: defaultComponents(hasBody, headers),
      ...(req.created !== undefined ? { created: req.created } : {}),
      ...(req.nonce !== undefined ? { nonce: req.nonce } : {}),
    },
  )
  headers['signature-input'] = signed.signatureInput
  headers.signature = signed.signature
  return { method: req.method, url: req.url, headers, body: hasBody ? req.body : undefined }
}
