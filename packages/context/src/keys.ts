import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  KeyObject,
  sign,
  verify,
} from 'node:crypto'
import { calculateJwkThumbprint, type JWK } from 'jose'
import type { ALGORITHMS } from './constants.js'
import { ContextError } from './errors.js'

/** A signature algorithm this library accepts. */
export type Algorithm = (typeof ALGORITHMS)[number]

/** A key as a caller may hold it: a node:crypto KeyObject or a JWK. */
export type KeyInput = KeyObject | JsonWebKey

/** One trusted public key for an issuer, optionally bound to one `kid`. */
export interface TrustedKey {
  /** The public key (a private JWK or KeyObject is reduced to its public part). */
  key: KeyInput
  /** The `kid` the key answers to; default the JWK's own `kid`, else its RFC 7638 thumbprint. */
  kid?: string
}

/** The receiver's trust configuration: issuer identifier to its key or keys. */
export type TrustConfig =
  | Readonly<Record<string, KeyInput | TrustedKey | readonly (KeyInput | TrustedKey)[]>>
  | ReadonlyMap<string, KeyInput | TrustedKey | readonly (KeyInput | TrustedKey)[]>

interface ResolvedKey {
  readonly key: KeyObject
  readonly kid: string
  readonly alg: Algorithm
  readonly single: KeyLookup
}

/** The answer of a trust lookup: the candidate keys, or none when the (iss, kid, alg) is untrusted. */
export type KeyLookup = readonly KeyObject[]

const EMPTY: KeyLookup = Object.freeze([])

/**
 * A compiled trust configuration with cached KeyObjects; keys come only from here, never from
 * the message.
 */
// seed 003: a key carried inside the message, without a binding from the receiver's trust
// configuration, shows nothing about who signed
export class TrustStore {
  private readonly byIss = new Map<string, ResolvedKey[]>()
  private readonly cache = new Map<string, Map<string, readonly ResolvedKey[]>>()
  private cached = 0

  /** Compiles a trust configuration; throws ContextError('invalid-input') for unusable keys. */
  constructor(config: TrustConfig) {
    const entries = config instanceof Map ? [...config.entries()] : Object.entries(config)
    for (const [iss, value] of entries) {
      const list = Array.isArray(value) ? value : [value]
      const resolved: ResolvedKey[] = []
      for (const item of list as (KeyInput | TrustedKey)[]) {
        const isTrusted = !(item instanceof KeyObject) && 'key' in item
        const input = isTrusted ? (item as TrustedKey).key : (item as KeyInput)
        const key = toPublicKey(input)
        const jwkKid = input instanceof KeyObject ? undefined : (input as { kid?: unknown }).kid
        const kid = isTrusted ? (item as TrustedKey).kid : undefined
        resolved.push({
          key,
          kid: kid ?? (typeof jwkKid === 'string' ? jwkKid : thumbprintSync(key)),
          alg: algorithmOf(key),
          single: Object.freeze([key]),
        })
      }
      this.byIss.set(iss, resolved)
    }
  }

  /** Tells whether any key is configured for an issuer. */
  has(iss: string): boolean {
    return this.byIss.has(iss)
  }

  /** The trusted keys for an issuer that match a `kid` and algorithm; empty when untrusted. */
  lookup(iss: string, kid: string, alg: Algorithm): KeyLookup {
    const byKid = this.cache.get(iss)
    let list = byKid?.get(kid)
    if (list === undefined) {
      list = (this.byIss.get(iss) ?? []).filter((k) => k.kid === kid)
      if (this.cached < 4096) {
        this.cached++
        if (byKid === undefined) this.cache.set(iss, new Map([[kid, list]]))
        else byKid.set(kid, list)
      }
    }
    if (list.length === 1) return list[0]!.alg === alg ? list[0]!.single : EMPTY
    return Object.freeze(list.filter((k) => k.alg === alg).map((k) => k.key))
  }
}

/** Compiles a trust configuration, or passes a TrustStore through. */
export function toTrustStore(trust: TrustConfig | TrustStore): TrustStore {
  return trust instanceof TrustStore ? trust : new TrustStore(trust)
}

/** A private signing key bound to its issuer identifier, key id and algorithm. */
export interface Signer {
  /** The identifier this signer speaks for (`iss` of what it signs). */
  readonly iss: string
  /** The key id placed in every protected header. */
  readonly kid: string
  /** The algorithm, derived from the key. */
  readonly alg: Algorithm
  /** The private key. */
  readonly key: KeyObject
}

/**
 * Builds a Signer; `kid` defaults to the JWK's own `kid`, else the RFC 7638 thumbprint.
 * @example const signer = await createSigner({ iss: 'spiffe://a.example/agent/planner', key: jwk })
 */
export async function createSigner(options: {
  iss: string
  key: KeyInput
  kid?: string
}): Promise<Signer> {
  if (typeof options.iss !== 'string' || options.iss.length === 0) {
    throw new ContextError('invalid-input', 'iss must be a non-empty string')
  }
  const key = toPrivateKey(options.key)
  const alg = algorithmOf(key)
  const jwkKid =
    options.key instanceof KeyObject ? undefined : (options.key as { kid?: unknown }).kid
  const kid =
    options.kid ?? (typeof jwkKid === 'string' ? jwkKid : await thumbprint(createPublicKey(key)))
  return Object.freeze({ iss: options.iss, kid, alg, key })
}

/** The RFC 7638 SHA-256 thumbprint of a public key, used as the default `kid`. */
export async function thumbprint(key: KeyInput): Promise<string> {
  const jwk = toPublicKey(key).export({ format: 'jwk' }) as JWK
  return calculateJwkThumbprint(jwk, 'sha256')
}

/**
 * Generates a fresh key pair as JWKs (private and public), for identities, tools and set-up.
 * The generator encodes the JWKs itself: exporting a freshly generated KeyObject instead can
 * deadlock Node, when a collection during the export destroys the generator's job, whose
 * destructor takes the key's lock the export holds. Make KeyObjects from the JWKs.
 */
export function generateKeyPair(alg: Algorithm = 'EdDSA'): {
  privateJwk: JsonWebKey
  publicJwk: JsonWebKey
} {
  const encoding = { publicKeyEncoding: { format: 'jwk' }, privateKeyEncoding: { format: 'jwk' } }
  // The types know the pem and der encodings only; jwk is documented alike.
  const generate = generateKeyPairSync as unknown as (
    type: string,
    options: object,
  ) => { publicKey: JsonWebKey; privateKey: JsonWebKey }
  const pair =
    alg === 'EdDSA'
      ? generate('ed25519', encoding)
      : generate('ec', { namedCurve: 'P-256', ...encoding })
  return { privateJwk: pair.privateKey, publicJwk: pair.publicKey }
}

/** Reduces a key input to a public KeyObject. */
export function toPublicKey(input: KeyInput): KeyObject {
  try {
    if (input instanceof KeyObject) {
      return input.type === 'public' ? input : createPublicKey(input)
    }
    return createPublicKey({ key: publicPart(input), format: 'jwk' })
  } catch (cause) {
    if (cause instanceof ContextError) throw cause
    throw new ContextError('invalid-input', 'unusable public key', { cause })
  }
}

/** Reduces a key input to a private KeyObject. */
export function toPrivateKey(input: KeyInput): KeyObject {
  try {
    if (input instanceof KeyObject) {
      if (input.type !== 'private') throw new ContextError('invalid-input', 'not a private key')
      return input
    }
    return createPrivateKey({ key: input, format: 'jwk' })
  } catch (cause) {
    if (cause instanceof ContextError) throw cause
    throw new ContextError('invalid-input', 'unusable private key', { cause })
  }
}

/**
 * The RFC 7638 SHA-256 thumbprint computed with node:crypto, so a TrustStore compiles without
 * awaiting; it agrees with jose's calculateJwkThumbprint (tested on RFC 8037 A.3).
 */
export function thumbprintSync(key: KeyInput): string {
  const jwk = toPublicKey(key).export({ format: 'jwk' })
  // RFC 7638 section 3.2: the required members only, in lexicographic order, no whitespace
  const canonical =
    jwk.kty === 'OKP'
      ? JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })
      : JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })
  return createHash('sha256').update(canonical, 'utf8').digest('base64url')
}

function publicPart(jwk: JsonWebKey): JsonWebKey {
  if (jwk.kty === 'OKP') return { kty: 'OKP', crv: jwk.crv, x: jwk.x }
  if (jwk.kty === 'EC') return { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y }
  throw new ContextError('invalid-input', 'only OKP (Ed25519) and EC (P-256) keys are accepted')
}

/** The algorithm a key signs with: Ed25519 is EdDSA, P-256 is ES256; any other key is refused. */
export function algorithmOf(key: KeyObject): Algorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA'
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return 'ES256'
  }
  throw new ContextError('invalid-input', 'only Ed25519 and P-256 keys are accepted')
}

/** Signs octets with the algorithm's rules (ES256 signatures are raw r||s, as JWS and COSE use). */
export function signBytes(alg: Algorithm, key: KeyObject, data: Uint8Array): Buffer {
  return alg === 'EdDSA'
    ? sign(null, data, key)
    : sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
}

/** Verifies a signature over octets with one public key; never throws. */
export function verifyBytes(
  alg: Algorithm,
  key: KeyObject,
  data: Uint8Array,
  signature: Uint8Array,
): boolean {
  try {
    if (alg === 'EdDSA') return signature.length === 64 && verify(null, data, key, signature)
    return (
      signature.length === 64 &&
      verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
    )
  } catch {
    return false
  }
}

/**
 * Verifies a signature over octets with one public key on libuv's thread pool, so the calling
 * thread is free while it runs and several verifies started together share the cores; answers
 * what verifyBytes answers, and never rejects.
 * @example const ok = await verifyBytesAsync('EdDSA', key, signingInput, signature)
 */
export function verifyBytesAsync(
  alg: Algorithm,
  key: KeyObject,
  data: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  if (signature.length !== 64) return Promise.resolve(false)
  return new Promise((resolve) => {
    const done = (error: Error | null, ok: boolean) => resolve(error === null && ok)
    try {
      if (alg === 'EdDSA') verify(null, data, key, signature, done)
      else verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature, done)
    } catch {
      resolve(false)
    }
  })
}
