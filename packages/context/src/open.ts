import { DEFAULT_MAX_ELEMENT_OCTETS } from './constants.js'
import { parseCoseElement } from './cose.js'
import { handoffDigest, type SignedElement } from './digest.js'
import type { ParsedElement } from './element.js'
import { ContextError, type ReasonCode } from './errors.js'
import { parseJwsElement } from './jws.js'
import { type KeyLookup, type TrustStore, verifyBytes, verifyBytesAsync } from './keys.js'

/** A signed element whose signature verified against a trusted key of its `iss`. */
export interface OpenedElement<T> {
  /** The parsed element. */
  readonly parsed: ParsedElement
  /** The validated members. */
  readonly claims: T
  /** The element's handoff digest. */
  readonly digest: string
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

/** A signed element's parse and handoff digest, both functions of its octets alone. */
export interface ReadElement {
  /** The parsed element (frozen when it came from the cache of JWS elements seen before). */
  readonly parsed: ParsedElement
  /** The element's handoff digest. */
  readonly digest: string
}

/** How many parsed JWS elements are kept, and the longest text kept (elements are ~1 KB). */
const READ_CACHE_SIZE = 1024
const READ_CACHE_MAX_CHARS = 4096
/** How many digests of elements met once are kept, waiting for a second sighting. */
const SEEN_ONCE_SIZE = 4096
const readCache = new Map<string, ReadElement>()
const seenOnce = new Set<string>()

/**
 * Parses a JWS element and digests it, or answers the parse of the identical text seen before: a
 * chain re-presents every earlier offer at each later hop, so a receiver meets the same octets
 * again and again. A parse is kept only from an element's second sighting on (its digest marks
 * the first): an element met once, as every element of a chain never seen is, leaves no kept copy
 * for the garbage collector to promote and then collect. Only the parse is reused, frozen so no
 * caller can change what the next one reads; the trusted key, the signature and every check run
 * again each time. Bounded, oldest entry out first.
 */
function readJws(raw: string): ReadElement {
  const known = readCache.get(raw)
  if (known !== undefined) return known
  const parsed = parseJwsElement(raw)
  const digest = handoffDigest(raw)
  if (raw.length > READ_CACHE_MAX_CHARS) return { parsed, digest }
  if (!seenOnce.delete(digest)) {
    if (seenOnce.size >= SEEN_ONCE_SIZE) seenOnce.delete(seenOnce.values().next().value!)
    seenOnce.add(digest)
    return { parsed, digest }
  }
  deepFreeze(parsed.payload)
  const read: ReadElement = { parsed: Object.freeze(parsed), digest }
  if (readCache.size >= READ_CACHE_SIZE) readCache.delete(readCache.keys().next().value!)
  readCache.set(raw, read)
  return read
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return
  for (const member of Object.values(value)) deepFreeze(member)
  Object.freeze(value)
}

/**
 * Parses a signed element of either form and computes its handoff digest, once: what one caller
 * reads here (a `kid` to pick its trust configuration, say) the checks read again from the same
 * parse. Throws ContextError('bad-signature') when malformed and ContextError('policy') when
 * oversized.
 */
export function readElement(
  raw: SignedElement,
  maxOctets: number = DEFAULT_MAX_ELEMENT_OCTETS,
): ReadElement {
  if (typeof raw === 'string') {
    // seed 003: receivers must bound element size, before any parsing
    if (raw.length > maxOctets) throw new ContextError('policy', 'element too large')
    return readJws(raw)
  }
  return { parsed: parseElement(raw, maxOctets), digest: handoffDigest(raw) }
}

/** readElement that answers a failure instead of throwing. */
export function tryReadElement(raw: SignedElement, maxOctets: number): ReadElement | OpenFailure {
  try {
    return readElement(raw, maxOctets)
  } catch (e) {
    const reason = e instanceof ContextError && e.reason === 'policy' ? 'policy' : 'bad-signature'
    return { reason, detail: e instanceof Error ? e.message : 'malformed element' }
  }
}

/** A read element whose trusted keys are found: all that is left is its signature. */
export interface KeyedElement extends ReadElement {
  /** The trusted keys that may have signed it (at least one). */
  readonly keys: KeyLookup
}

/**
 * The checks of an element before its signature: explicit type, `iss`, and a trusted key for its
 * `iss` and `kid`. Never throws.
 */
export function keyElement(
  read: ReadElement,
  trust: TrustStore,
  jwsTyp: string,
): KeyedElement | OpenFailure {
  const { parsed } = read
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
  return { parsed, digest: read.digest, keys }
}

/** Whether one of the element's trusted keys verifies its signature, on the calling thread. */
export function signatureVerifies(e: KeyedElement): boolean {
  const { alg, signingInput, signature } = e.parsed
  for (const key of e.keys) if (verifyBytes(alg, key, signingInput, signature)) return true
  return false
}

/** Whether one of the element's trusted keys verifies its signature, on libuv's thread pool. */
export async function signatureVerifiesAsync(e: KeyedElement): Promise<boolean> {
  const { alg, signingInput, signature } = e.parsed
  if (e.keys.length === 1) return verifyBytesAsync(alg, e.keys[0]!, signingInput, signature)
  const verdicts = await Promise.all(
    e.keys.map((key) => verifyBytesAsync(alg, key, signingInput, signature)),
  )
  return verdicts.includes(true)
}

/** The last step of opening an element, once its signature verdict is known. */
export function finishElement<T>(
  e: KeyedElement,
  verified: boolean,
  isClaims: (p: unknown) => p is T,
): OpenedElement<T> | OpenFailure {
  if (!verified) return { reason: 'bad-signature', detail: 'signature does not verify' }
  // choice: a validly signed payload that is not a well-formed element is `malformed`, not
  // `bad-signature`: the signature was good (see CHECK_REASONS)
  if (!isClaims(e.parsed.payload)) return { reason: 'malformed', detail: 'members not valid' }
  return { parsed: e.parsed, claims: e.parsed.payload, digest: e.digest }
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
  const read = tryReadElement(raw, maxOctets)
  if (isOpenFailure(read)) return read
  const keyed = keyElement(read, trust, jwsTyp)
  if (isOpenFailure(keyed)) return keyed
  return finishElement(keyed, signatureVerifies(keyed), isClaims)
}

/** Tells whether a step of opening an element failed. */
export function isOpenFailure<T extends object>(v: T | OpenFailure): v is OpenFailure {
  return 'reason' in v
}
