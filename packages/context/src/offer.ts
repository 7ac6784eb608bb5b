import { randomBytes } from 'node:crypto'
import type { CborValue } from './cbor.js'
import { isDigest, isHop, isNumericDate, isText, optional } from './claims.js'
import { DEFAULT_OFFER_TTL_S, HOP_OCTETS, OFFER_JWS_TYP, OFFER_TYPE, VERSION } from './constants.js'
import { signCose } from './cose.js'
import { handoffDigest, type SignedElement } from './digest.js'
import { ContextError } from './errors.js'
import { signJws } from './jws.js'
import type { Signer } from './keys.js'
import { parseRefs, type Ref } from './refs.js'

/** The members of a handoff offer. */
export interface OfferClaims {
  /** Version, always 1. */
  readonly v: 1
  /** Type, always "offer". */
  readonly typ: 'offer'
  /** Hop identifier and replay nonce (at least 128 random bits, base64url). */
  readonly hop: string
  /** The host protocol's dialog identifier. */
  readonly dialog: string
  /** The delegator. */
  readonly iss: string
  /** The intended delegate. */
  readonly aud: string
  /** Issue time, NumericDate seconds. */
  readonly iat: number
  /** Expiry time, NumericDate seconds. */
  readonly exp: number
  /** The host protocol's task identifier. */
  readonly task?: string
  /** The principal the chain's root acted for; not an authorization claim. */
  readonly obo?: string
  /** Digest of the credential the delegate is expected to present; never the credential. */
  readonly grant?: string
  /** Handoff digest of the previous offer. */
  readonly prev?: string
  /** References to prior context. */
  readonly refs?: readonly Ref[]
}

/** A signed offer: the element as sent, its members and its handoff digest. */
export interface SignedOffer {
  /** The JWS string or tagged COSE_Sign1 bytes; forward these octets unchanged. */
  readonly element: SignedElement
  /** The signed members. */
  readonly claims: OfferClaims
  /** The handoff digest of `element`. */
  readonly digest: string
}

/** The Handoff object: the signed current offer and, when carried, the chain oldest first. */
export interface Handoff {
  /** The current signed offer. */
  readonly offer: SignedElement
  /** Earlier signed offers, oldest first; omitted when not carried. */
  readonly chain?: readonly SignedElement[]
}

/** What signOffer needs; `iat` and `hop` default to now and fresh randomness. */
export interface SignOfferInput {
  /** The delegator's signer; its `iss` becomes the offer's `iss`. */
  readonly signer: Signer
  /** The intended delegate. */
  readonly aud: string
  /** The host protocol's dialog identifier. */
  readonly dialog: string
  /** The host protocol's task identifier. */
  readonly task?: string
  /** The principal the chain's root acted for. */
  readonly obo?: string
  /** Digest of a credential (see grantDigest); never the credential. */
  readonly grant?: string
  /** The previous offer's handoff digest, or the previous offer itself. */
  readonly prev?: SignedElement
  /** References to prior context. */
  readonly refs?: readonly Ref[]
  /** Lifetime in seconds (default 120). */
  readonly ttlS?: number
  /** Issue time in NumericDate seconds (default: from `now`). */
  readonly iat?: number
  /** Clock in epoch milliseconds (default Date.now). */
  readonly now?: () => number
  /** Hop identifier (default: 16 random octets). */
  readonly hop?: string
  /** Serialization: JWS (default) or COSE_Sign1. */
  readonly format?: 'jws' | 'cose'
  /**
   * Members beyond the draft's, signed with them (a hub's `budget`, say); receivers that do not
   * know one ignore it. None may name a member the draft defines.
   */
  readonly extensions?: Readonly<Record<string, unknown>>
}

/** The members the draft defines for an offer, which an extension member may not name. */
const OFFER_MEMBERS = new Set([
  'v',
  'typ',
  'hop',
  'dialog',
  'iss',
  'aud',
  'iat',
  'exp',
  'task',
  'obo',
  'grant',
  'prev',
  'refs',
])

/** Mints a hop identifier: 128 bits from a secure random source, base64url (22 characters). */
// seed 003: the hop carries at least 128 bits from a cryptographically secure random source
export function createHop(): string {
  return randomBytes(HOP_OCTETS).toString('base64url')
}

/**
 * Creates and signs an offer.
 * @example
 * const offer = signOffer({ signer, aud: 'spiffe://b.example/agent/coder', dialog: 'ctx-7c1e' })
 */
export function signOffer(input: SignOfferInput): SignedOffer {
  const now = input.now ?? Date.now
  const iat = input.iat ?? Math.floor(now() / 1000)
  const ttl = input.ttlS ?? DEFAULT_OFFER_TTL_S
  const prev =
    input.prev === undefined
      ? undefined
      : typeof input.prev === 'string' && isDigest(input.prev)
        ? input.prev
        : handoffDigest(input.prev)
  const extensions = input.extensions ?? {}
  if (Object.keys(extensions).some((name) => OFFER_MEMBERS.has(name))) {
    throw new ContextError('invalid-input', 'an extension member may not name a draft member')
  }
  const claims: OfferClaims = dropUndefined({
    v: VERSION,
    typ: OFFER_TYPE,
    hop: input.hop ?? createHop(),
    dialog: input.dialog,
    iss: input.signer.iss,
    aud: input.aud,
    iat,
    exp: iat + ttl,
    task: input.task,
    obo: input.obo,
    grant: input.grant,
    prev,
    refs: input.refs,
    ...extensions,
  })
  if (!isOfferClaims(claims) || !(ttl > 0)) {
    throw new ContextError('invalid-input', 'offer members are not valid')
  }
  const element = signElement(claims, OFFER_JWS_TYP, input.signer, input.format)
  return { element, claims, digest: handoffDigest(element) }
}

/**
 * Builds the Handoff object for a signed offer; with `after` and `chain: true`, the chain is the
 * upstream handoff's chain plus its offer, oldest first.
 */
// seed 003: the chain travels beside the current offer, growing by one signed offer per hop
export function toHandoff(
  offer: SignedOffer | SignedElement,
  options: { after?: Handoff; chain?: boolean } = {},
): Handoff {
  const element = isSignedOffer(offer) ? offer.element : offer
  if (options.after === undefined || options.chain !== true) return { offer: element }
  return { offer: element, chain: [...(options.after.chain ?? []), options.after.offer] }
}

/** Tells whether a decoded payload has the members of an offer, each well-formed. */
export function isOfferClaims(value: unknown): value is OfferClaims {
  if (typeof value !== 'object' || value === null) return false
  const p = value as Readonly<Record<string, unknown>>
  return (
    p.v === VERSION &&
    p.typ === OFFER_TYPE &&
    isHop(p.hop) &&
    isText(p.dialog) &&
    isText(p.iss) &&
    isText(p.aud) &&
    isNumericDate(p.iat) &&
    isNumericDate(p.exp) &&
    optional(p.task, isText) &&
    optional(p.obo, isText) &&
    optional(p.grant, isDigest) &&
    optional(p.prev, isDigest) &&
    optional(p.refs, (r) => parseRefs(r) !== undefined)
  )
}

/** Signs claims as a JWS (with the given explicit typ) or as a COSE_Sign1. */
export function signElement(
  claims: object,
  jwsTyp: string,
  signer: Signer,
  format: 'jws' | 'cose' = 'jws',
): SignedElement {
  if (format === 'cose') {
    return signCose(claims as Record<string, CborValue>, signer)
  }
  return signJws(
    { alg: signer.alg, kid: signer.kid, typ: jwsTyp },
    Buffer.from(JSON.stringify(claims), 'utf8'),
    signer.alg,
    signer.key,
  )
}

/** Removes members whose value is undefined, so they are omitted on the wire. */
export function dropUndefined<T extends object>(value: T): T {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = v
  return out as T
}

function isSignedOffer(value: SignedOffer | SignedElement): value is SignedOffer {
  return typeof value === 'object' && !(value instanceof Uint8Array)
}
