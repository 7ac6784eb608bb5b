import type { KeyObject } from 'node:crypto'
import { isCanonicalB64u } from './b64.js'
import { ALGORITHMS } from './constants.js'
import type { ParsedElement } from './element.js'
import { ContextError } from './errors.js'
import { type Algorithm, signBytes, verifyBytes, verifyBytesAsync } from './keys.js'

/** A JWS protected header as this library reads it. */
export interface JwsHeader {
  /** The signature algorithm. */
  alg: string
  /** The key id. */
  kid?: string
  /** The explicit type. */
  typ?: string
  /** Any other member; `jwk`, `jku`, `x5u` and `x5c` are ignored, `crit` is refused. */
  [member: string]: unknown
}

/** The result of strictly splitting a JWS Compact Serialization. */
export interface ParsedJws {
  /** The decoded protected header. */
  readonly header: Readonly<JwsHeader>
  /** The algorithm, from the allow-list. */
  readonly alg: Algorithm
  /** The payload octets. */
  readonly payload: Buffer
  /** The ASCII signing input (`header.payload`). */
  readonly signingInput: Buffer
  /** The signature octets. */
  readonly signature: Buffer
}

const ALGS: readonly string[] = ALGORITHMS

/**
 * Signs a payload as a JWS Compact Serialization with the given protected header.
 * @example signJws({ alg: 'EdDSA' }, Buffer.from('Example of Ed25519 signing'), 'EdDSA', key)
 */
export function signJws(
  header: JwsHeader,
  payload: Uint8Array,
  alg: Algorithm,
  key: KeyObject,
): string {
  if (header.alg !== alg) throw new ContextError('invalid-input', 'header alg differs from the key')
  const input = `${Buffer.from(JSON.stringify(header), 'utf8').toString('base64url')}.${Buffer.from(
    payload.buffer,
    payload.byteOffset,
    payload.byteLength,
  ).toString('base64url')}`
  const sig = signBytes(alg, key, Buffer.from(input, 'latin1'))
  return `${input}.${sig.toString('base64url')}`
}

/** The checked parts of a JWS Compact Serialization, before its payload is decoded. */
interface SplitJws {
  readonly header: Readonly<JwsHeader>
  /** The payload's base64url text. */
  readonly payload: string
  /** The end of the signing input (the second dot). */
  readonly inputEnd: number
  /** The signature's base64url text. */
  readonly signature: string
}

/**
 * Splits a JWS Compact Serialization strictly: exactly three canonical base64url parts, a JSON
 * object header, an allowed `alg`, no `crit`. Throws ContextError('bad-signature') otherwise.
 */
// seed 003: an unsigned or undecodable element is treated as absent, so malformed is bad-signature
function splitJws(compact: string): SplitJws {
  if (typeof compact !== 'string') throw new ContextError('bad-signature', 'not a string')
  const d1 = compact.indexOf('.')
  const d2 = d1 < 0 ? -1 : compact.indexOf('.', d1 + 1)
  if (d1 <= 0 || d2 < 0 || compact.indexOf('.', d2 + 1) >= 0) {
    throw new ContextError('bad-signature', 'not three parts')
  }
  const h = compact.slice(0, d1)
  const p = compact.slice(d1 + 1, d2)
  const s = compact.slice(d2 + 1)
  if (!isCanonicalB64u(h) || !isCanonicalB64u(p) || s.length === 0 || !isCanonicalB64u(s)) {
    throw new ContextError('bad-signature', 'not canonical base64url')
  }
  return { header: parseHeader(h), payload: p, inputEnd: d2, signature: s }
}

/**
 * Splits a JWS Compact Serialization strictly: exactly three canonical base64url parts, a JSON
 * object header, an allowed `alg`, no `crit`. Throws ContextError('bad-signature') otherwise.
 */
export function parseJws(compact: string): ParsedJws {
  const split = splitJws(compact)
  return {
    header: split.header,
    alg: split.header.alg as Algorithm,
    payload: Buffer.from(split.payload, 'base64url'),
    signingInput: Buffer.from(compact.slice(0, split.inputEnd), 'latin1'),
    signature: Buffer.from(split.signature, 'base64url'),
  }
}

/**
 * Where payloads up to its size are decoded on their way to text: the octets are only ever read
 * as UTF-8 right after they are written, so one buffer serves every parse.
 */
const payloadScratch = Buffer.allocUnsafe(12 * 1024)
/** The longest base64url text the scratch buffer holds decoded (four characters, three octets). */
const SCRATCH_B64_CHARS = (payloadScratch.length / 3) * 4

/** A payload's base64url text decoded, as UTF-8 text. */
function payloadText(b64: string): string {
  if (b64.length > SCRATCH_B64_CHARS) return Buffer.from(b64, 'base64url').toString('utf8')
  const n = payloadScratch.write(b64, 0, 'base64url')
  return payloadScratch.toString('utf8', 0, n)
}

const headers = new Map<string, JwsHeader>()

/**
 * Decodes and checks a protected header. Identical header octets always decode the same way, so
 * checked headers are kept in a small cache (every sender repeats its header on every element).
 */
function parseHeader(h: string): JwsHeader {
  const hit = headers.get(h)
  if (hit !== undefined) return hit
  let header: unknown
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'))
  } catch (cause) {
    throw new ContextError('bad-signature', 'header is not JSON', { cause })
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw new ContextError('bad-signature', 'header is not an object')
  }
  const hd = header as JwsHeader
  if (typeof hd.alg !== 'string' || !ALGS.includes(hd.alg)) {
    throw new ContextError('bad-signature', 'algorithm not allowed')
  }
  // RFC 7515 section 4.1.11: a crit the recipient does not understand makes the JWS invalid;
  // this library understands no extension header
  if ('crit' in hd) throw new ContextError('bad-signature', 'unknown crit')
  if (headers.size >= 1024) headers.clear()
  headers.set(h, Object.freeze(hd))
  return hd
}

/** Verifies a parsed JWS against one public key (its algorithm must match the key's). */
export function verifyJws(parsed: ParsedJws, key: KeyObject): boolean {
  return verifyBytes(parsed.alg, key, parsed.signingInput, parsed.signature)
}

/** Verifies a parsed JWS like verifyJws, on libuv's thread pool instead of the calling thread. */
export function verifyJwsAsync(parsed: ParsedJws, key: KeyObject): Promise<boolean> {
  return verifyBytesAsync(parsed.alg, key, parsed.signingInput, parsed.signature)
}

/**
 * Parses a JWS element whose payload is a JSON object and whose header has a string `kid`.
 * Throws ContextError('bad-signature') on any structural fault.
 */
export function parseJwsElement(compact: string): ParsedElement {
  const split = splitJws(compact)
  const kid = split.header.kid
  if (typeof kid !== 'string' || kid.length === 0) {
    throw new ContextError('bad-signature', 'kid missing')
  }
  const typ = split.header.typ
  if (typ !== undefined && typeof typ !== 'string') {
    throw new ContextError('bad-signature', 'typ is not a string')
  }
  let payload: unknown
  try {
    payload = JSON.parse(payloadText(split.payload))
  } catch (cause) {
    throw new ContextError('bad-signature', 'payload is not JSON', { cause })
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new ContextError('bad-signature', 'payload is not an object')
  }
  return {
    form: 'jws',
    raw: compact,
    alg: split.header.alg as Algorithm,
    kid,
    typ,
    signingInput: Buffer.from(compact.slice(0, split.inputEnd), 'latin1'),
    signature: Buffer.from(split.signature, 'base64url'),
    payload: payload as Record<string, unknown>,
  }
}
