import { isDigest, isHop, isNumericDate, isText, optional } from './claims.js'
import {
  DEFAULT_MAX_ELEMENT_OCTETS,
  DEFAULT_SKEW_MS,
  REASONS,
  STATES,
  STATES_WITH_REASON,
  STATES_WITH_REFS,
  STATUS_JWS_TYP,
  STATUS_TYPE,
  VERSION,
} from './constants.js'
import { handoffDigest, type SignedElement } from './digest.js'
import { ContextError, type ReasonCode, type SeedReason } from './errors.js'
import type { TrustConfig, TrustStore } from './keys.js'
import { type Signer, toTrustStore } from './keys.js'
import { dropUndefined, isOfferClaims, type OfferClaims, signElement } from './offer.js'
import { isOpenFailure, openElement, parseElement } from './open.js'
import { parseRefs, type Ref } from './refs.js'

/** One of the five status states. */
export type StatusState = (typeof STATES)[number]

/** A status reason: one of the seed's codes, or an absolute URI for anything else. */
export type StatusReason = SeedReason | `${string}:${string}`

/** The members of a status reply. */
export interface StatusClaims {
  /** Version, always 1. */
  readonly v: 1
  /** Type, always "status". */
  readonly typ: 'status'
  /** The hop this status answers. */
  readonly hop: string
  /** The handoff digest of the offer it answers. */
  readonly offer: string
  /** Sender: the delegate, or the delegator for `canceled`. */
  readonly iss: string
  /** Receiver: the delegator, or the delegate for `canceled`. */
  readonly aud: string
  /** Issue time, NumericDate seconds. */
  readonly iat: number
  /** The state. */
  readonly state: StatusState
  /** Machine reason (rejected and failed only). */
  readonly reason?: string
  /** Text for people (rejected and failed only); software must not rely on it. */
  readonly detail?: string
  /** For `failed` after partial effect: what took effect; for `completed`: its results. */
  readonly refs?: readonly Ref[]
}

/** A signed status: the element as sent, its members and its digest. */
export interface SignedStatus {
  /** The JWS string or COSE_Sign1 bytes; resend these octets unchanged. */
  readonly element: SignedElement
  /** The signed members. */
  readonly claims: StatusClaims
  /** SHA-256 of `element`, base64url. */
  readonly digest: string
}

/** The Status object carried by A2A and MCP. */
export interface StatusObject {
  /** The signed status. */
  readonly status: SignedElement
}

/** The offer a status answers: the signed element, or its members and digest. */
export type OfferRef = SignedElement | { readonly claims: OfferClaims; readonly digest: string }

const STATE_LIST: readonly string[] = STATES
const WITH_REASON: readonly string[] = STATES_WITH_REASON
const WITH_REFS: readonly string[] = STATES_WITH_REFS
const REASON_LIST: readonly string[] = REASONS

/** Tells whether a decoded payload has the members of a status, each well-formed. */
export function isStatusClaims(value: unknown): value is StatusClaims {
  if (typeof value !== 'object' || value === null) return false
  const p = value as Readonly<Record<string, unknown>>
  const state = p.state
  if (typeof state !== 'string' || !STATE_LIST.includes(state)) return false
  // seed 003: an optional reason and free-text detail on rejections and failures only
  const reasonOk = WITH_REASON.includes(state)
    ? optional(p.reason, isText) && optional(p.detail, (d) => typeof d === 'string')
    : p.reason === undefined && p.detail === undefined
  const refsOk = WITH_REFS.includes(state)
    ? optional(p.refs, (r) => parseRefs(r) !== undefined)
    : p.refs === undefined
  return (
    p.v === VERSION &&
    p.typ === STATUS_TYPE &&
    isHop(p.hop) &&
    isDigest(p.offer) &&
    isText(p.iss) &&
    isText(p.aud) &&
    isNumericDate(p.iat) &&
    reasonOk &&
    refsOk
  )
}

/** Reads an offer's members and digest from a signed element without checking its signature. */
export function readOffer(offer: OfferRef): { claims: OfferClaims; digest: string } {
  if (typeof offer === 'string' || offer instanceof Uint8Array) {
    const parsed = parseElement(offer)
    if (!isOfferClaims(parsed.payload)) throw new ContextError('bad-signature', 'not an offer')
    return { claims: parsed.payload, digest: handoffDigest(offer) }
  }
  return offer
}

/** What signStatus needs. */
export interface SignStatusInput {
  /** The signer: the offer's `aud` (delegate), or its `iss` (delegator) for `canceled`. */
  readonly signer: Signer
  /** The offer answered. */
  readonly offer: OfferRef
  /** The state. */
  readonly state: StatusState
  /** Machine reason (rejected and failed only). */
  readonly reason?: StatusReason
  /** Text for people (rejected and failed only). */
  readonly detail?: string
  /** What took effect (failed) or the results (completed). */
  readonly refs?: readonly Ref[]
  /** Issue time in NumericDate seconds (default: from `now`). */
  readonly iat?: number
  /** Clock in epoch milliseconds (default Date.now). */
  readonly now?: () => number
  /** Serialization: JWS (default) or COSE_Sign1. */
  readonly format?: 'jws' | 'cose'
}

/**
 * Creates and signs a status naming an offer by its digest.
 * @example const accepted = signStatus({ signer: coder, offer: handoff.offer, state: 'accepted' })
 */
// seed 003: for every state except canceled the sender is the delegate and the receiver the
// delegator; for canceled the sender is the delegator
export function signStatus(input: SignStatusInput): SignedStatus {
  const { claims: offer, digest } = readOffer(input.offer)
  const canceled = input.state === 'canceled'
  const iss = canceled ? offer.iss : offer.aud
  const aud = canceled ? offer.aud : offer.iss
  if (input.signer.iss !== iss) {
    throw new ContextError('invalid-input', 'signer is not the sender this state requires')
  }
  if (
    input.reason !== undefined &&
    !REASON_LIST.includes(input.reason) &&
    !/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(input.reason)
  ) {
    throw new ContextError('invalid-input', 'reason is a seed code or an absolute URI')
  }
  const claims: StatusClaims = dropUndefined({
    v: VERSION,
    typ: STATUS_TYPE,
    hop: offer.hop,
    offer: digest,
    iss,
    aud,
    iat: input.iat ?? Math.floor((input.now ?? Date.now)() / 1000),
    state: input.state,
    reason: input.reason,
    detail: input.detail,
    refs: input.refs,
  })
  if (!isStatusClaims(claims))
    throw new ContextError('invalid-input', 'status members are not valid')
  const element = signElement(claims, STATUS_JWS_TYP, input.signer, input.format)
  return { element, claims, digest: handoffDigest(element) }
}

/** The receiver's configuration for verifying a status. */
export interface VerifyStatusOptions {
  /** Issuer identifiers to keys. */
  readonly trust: TrustConfig | TrustStore
  /** The receiver's own identifier; the status's `aud` must equal it. */
  readonly audience: string
  /** The offer it must answer; when given, digest, hop and parties are bound to it. */
  readonly offer?: OfferRef
  /** Clock in epoch milliseconds (default Date.now). */
  readonly now?: () => number
  /** Allowed clock skew in milliseconds (default 60 000). */
  readonly skewMs?: number
  /** Largest element in octets (default 16 384). */
  readonly maxElementOctets?: number
}

/** A status that verified. */
export interface VerifiedStatus {
  /** Always true. */
  readonly ok: true
  /** The status members. */
  readonly claims: StatusClaims
  /** SHA-256 of the status element. */
  readonly digest: string
  /** The element exactly as received. */
  readonly element: SignedElement
}

/** A status that failed verification. */
export interface RejectedStatus {
  /** Always false. */
  readonly ok: false
  /** The reason code. */
  readonly reason: ReasonCode
  /** Text for people. */
  readonly detail: string
}

/**
 * Verifies a status: signature and trusted key, audience, not issued in the future, and (with
 * `offer`) bound to that offer's digest, hop and parties.
 */
// seed 003: an unsigned status is treated as absent; a status always names its offer by digest.
// A status carries no exp, so a late status still counts; only one from the future is stale.
export function verifyStatus(
  element: SignedElement | StatusObject | unknown,
  options: VerifyStatusOptions,
): VerifiedStatus | RejectedStatus {
  const raw =
    typeof element === 'object' && element !== null && !(element instanceof Uint8Array)
      ? (element as { status?: unknown }).status
      : element
  if (typeof raw !== 'string' && !(raw instanceof Uint8Array)) {
    return { ok: false, reason: 'bad-signature', detail: 'no signed status' }
  }
  const trust = toTrustStore(options.trust)
  const opened = openElement(
    raw,
    trust,
    STATUS_JWS_TYP,
    isStatusClaims,
    options.maxElementOctets ?? DEFAULT_MAX_ELEMENT_OCTETS,
  )
  if (isOpenFailure(opened)) return { ok: false, reason: opened.reason, detail: opened.detail }
  const c = opened.claims
  if (c.aud !== options.audience) {
    return { ok: false, reason: 'wrong-audience', detail: 'aud is not this receiver' }
  }
  const nowS = (options.now ?? Date.now)() / 1000
  if (c.iat > nowS + (options.skewMs ?? DEFAULT_SKEW_MS) / 1000) {
    return { ok: false, reason: 'stale', detail: 'issued in the future' }
  }
  if (options.offer !== undefined) {
    const o = readOffer(options.offer)
    const canceled = c.state === 'canceled'
    const wantIss = canceled ? o.claims.iss : o.claims.aud
    const wantAud = canceled ? o.claims.aud : o.claims.iss
    // choice: a status that does not answer the given offer is refused as `policy`
    if (c.offer !== o.digest || c.hop !== o.claims.hop || c.iss !== wantIss || c.aud !== wantAud) {
      return { ok: false, reason: 'policy', detail: 'status does not answer this offer' }
    }
  }
  return { ok: true, claims: c, digest: opened.digest, element: raw }
}

/** Tells whether a status is a nonterminal rejection (reason stale or replay). */
// seed 003: a rejected status with reason stale or replay is not terminal and never sets state
export function isNonterminalRejection(c: StatusClaims): boolean {
  return c.state === 'rejected' && (c.reason === 'stale' || c.reason === 'replay')
}
