import { DEFAULT_MAX_ELEMENT_OCTETS } from './constants.js'
import { parseCoseElement } from './cose.js'
import type { SignedElement } from './digest.js'
import type { ParsedElement } from './element.js'
import { ContextError, type ReasonCode } from './errors.js'
import { parseJwsElement } from './jws.js'
import { type TrustStore, verifyBytes } from './keys.js'

/** A signed element whose signature verified against a trusted key of its `iss`. */
export interface OpenedElement<T> {
  /** The parsed element. */
  readonly parsed: ParsedElement
  /** The validated members. */
  readonly claims: T
}

/** Why an element could not be opened. */
export interface OpenFailure {
  /** The reason code. */
  readonly reason: ReasonCode
  /** Text for people; software must not rely on it. */
  readonly detail: string
}

/**
 * Parses a signed element of either form without checking its signature; throws
 * ContextError('bad-signature') when malformed and ContextError('policy') when oversized.
 */
export function parseElement(
  raw: SignedElement,
  maxOctets: number = DEFAULT_MAX_ELEMENT_OCTETS,
): ParsedElement {
  if (typeof raw === 'string') {
    // seed 003: receivers must bound element size
    if (raw.length > maxOctets) throw new ContextError('policy', 'element too large')
    return parseJwsElement(raw)
  }
  if (raw instanceof Uint8Array) {
    if (raw.length > maxOctets) throw new ContextError('policy', 'element too large')
    return parseCoseElement(raw)
  }
  throw new ContextError('bad-signature', 'an element is a JWS string or COSE_Sign1 bytes')
}

/**
 * Opens a signed element: strict parse, explicit type, trusted key for its `iss` and `kid`,
 * signature, then member validation. Never throws; answers the seed's reason on failure.
 */
// seed 003: verify the signature against a key the receiver's own trust configuration binds to
// the sender; reject if the signature is bad or the key is untrusted
export function openElement<T>(
  raw: SignedElement,
  trust: TrustStore,
  jwsTyp: string,
  isClaims: (p: unknown) => p is T,
  maxOctets: number,
): OpenedElement<T> | OpenFailure {
  let parsed: ParsedElement
  try {
    parsed = parseElement(raw, maxOctets)
  } catch (e) {
    const reason = e instanceof ContextError && e.reason === 'policy' ? 'policy' : 'bad-signature'
    return { reason, detail: e instanceof Error ? e.message : 'malformed element' }
  }
  // choice: the explicit JWS typ is required and must match the kind of element expected
  if (parsed.form === 'jws' && parsed.typ !== jwsTyp) {
    return { reason: 'bad-signature', detail: 'missing or unexpected typ' }
  }
  const iss = parsed.payload.iss
  if (typeof iss !== 'string' || iss.length === 0) {
    return { reason: 'bad-signature', detail: 'iss missing' }
  }
  const keys = trust.lookup(iss, parsed.kid, parsed.alg)
  if (keys.length === 0)
    return { reason: 'untrusted-key', detail: 'no trusted key for iss and kid' }
  let good = false
  for (const key of keys) {
    if (verifyBytes(parsed.alg, key, parsed.signingInput, parsed.signature)) {
      good = true
      break
    }
  }
  if (!good) return { reason: 'bad-signature', detail: 'signature does not verify' }
  // choice: a validly signed payload that is not a well-formed element is treated as absent
  if (!isClaims(parsed.payload)) return { reason: 'bad-signature', detail: 'members not valid' }
  return { parsed, claims: parsed.payload }
}

/** Tells whether openElement failed. */
export function isOpenFailure<T>(v: OpenedElement<T> | OpenFailure): v is OpenFailure {
  return 'reason' in v
}
