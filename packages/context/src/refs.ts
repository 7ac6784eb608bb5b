import { randomBytes } from 'node:crypto'
import { DIGEST_PATTERN, MIN_SALT_OCTETS, REF_KINDS } from './constants.js'
import { saltedDigest, sha256B64u } from './digest.js'
import { ContextError } from './errors.js'

/** A reference to prior context: a kind, a digest, and any further members the kind defines. */
export interface Ref {
  /** `digest`, `salted-digest`, `scitt-receipt`, `learnlog-head`, or an absolute URI. */
  readonly kind: string
  /** SHA-256 of the referenced octets (for salted-digest: of salt || content), base64url. */
  readonly digest: string
  /** Further members, e.g. `uri` or `media`; never a salt. */
  readonly [member: string]: unknown
}

/** The outcome of checking one reference. */
export type RefOutcome = 'verified' | 'mismatch' | 'unverifiable' | 'not-checked'

/** One reference with its outcome. */
export interface RefResult {
  /** The reference as signed. */
  readonly ref: Ref
  /** Its outcome; never "verified" unless the check ran. */
  readonly outcome: RefOutcome
}

/** What a caller supplies to check one reference: the content octets, and the salt if salted. */
export interface RefMaterial {
  /** The referenced content exactly as hashed. */
  readonly content: Uint8Array | string
  /** The salt delivered with the object (salted-digest only), at least 16 octets. */
  readonly salt?: Uint8Array
}

/** The receiver's reference policy: which refs must check, and how to load and check them. */
export interface RefPolicy {
  /** Which references must verify: none (default), all, or those a predicate picks. */
  readonly require?: 'none' | 'all' | ((ref: Ref) => boolean)
  /** Loads the material for a digest or salted-digest ref; undefined when unavailable. */
  readonly load?: (ref: Ref) => RefMaterial | undefined | Promise<RefMaterial | undefined>
  /** Checkers for other kinds (scitt-receipt, learnlog-head, URI kinds), by kind. */
  readonly checkers?: Readonly<Record<string, (ref: Ref) => RefOutcome | Promise<RefOutcome>>>
}

const KINDS: readonly string[] = REF_KINDS
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$/

/** Tells whether a ref kind is valid: one of the seed's kinds, or an absolute URI. */
// seed 003: the kinds are digest, salted-digest, scitt-receipt, learnlog-head, or an absolute URI
export function isRefKind(kind: unknown): kind is string {
  return typeof kind === 'string' && (KINDS.includes(kind) || ABSOLUTE_URI.test(kind))
}

/** Validates a `refs` member; returns undefined when it is not a valid list of refs. */
export function parseRefs(value: unknown): Ref[] | undefined {
  if (!Array.isArray(value)) return undefined
  for (const r of value) {
    if (typeof r !== 'object' || r === null || Array.isArray(r)) return undefined
    const ref = r as Record<string, unknown>
    if (!isRefKind(ref.kind)) return undefined
    if (typeof ref.digest !== 'string' || !DIGEST_PATTERN.test(ref.digest)) return undefined
    // seed 003: the salt is delivered with the object, never inside the element
    if ('salt' in ref) return undefined
  }
  return value as Ref[]
}

/**
 * Makes a `digest` ref over content octets.
 * @example const ref = createDigestRef('the prompt text', { uri: 'urn:example:prompt' })
 */
export function createDigestRef(
  content: Uint8Array | string,
  members: Readonly<Record<string, unknown>> = {},
): Ref {
  return { ...members, kind: 'digest', digest: sha256B64u(content) }
}

/**
 * Makes a `salted-digest` ref and the salt to deliver with the object (never inside the element).
 * @example const { ref, salt } = createSaltedRef('yes')
 */
// seed 003: the salt is at least 16 octets from a secure random source
export function createSaltedRef(
  content: Uint8Array | string,
  options: { salt?: Uint8Array; members?: Readonly<Record<string, unknown>> } = {},
): { ref: Ref; salt: Uint8Array } {
  const salt = options.salt ?? randomBytes(MIN_SALT_OCTETS)
  if (salt.length < MIN_SALT_OCTETS) {
    throw new ContextError('invalid-input', 'a salt has at least 16 octets')
  }
  return {
    ref: { ...(options.members ?? {}), kind: 'salted-digest', digest: saltedDigest(salt, content) },
    salt,
  }
}

/**
 * Checks refs as far as the policy asks; a required ref that cannot be checked is unverifiable.
 */
// seed 003: references are checked only as far as local policy requires, and a receiver must not
// report a reference as verified unless it performed the check
export async function checkRefs(
  refs: readonly Ref[],
  policy: RefPolicy | undefined,
): Promise<{ results: RefResult[]; failure?: 'ref-mismatch' | 'unverifiable-ref' }> {
  const results: RefResult[] = []
  let failure: 'ref-mismatch' | 'unverifiable-ref' | undefined
  for (const ref of refs) {
    const required = isRequired(ref, policy)
    const outcome = await checkOne(ref, policy, required)
    results.push({ ref, outcome })
    if (outcome === 'mismatch') failure = 'ref-mismatch'
    else if (outcome === 'unverifiable' && required && failure === undefined) {
      failure = 'unverifiable-ref'
    }
  }
  return failure === undefined ? { results } : { results, failure }
}

function isRequired(ref: Ref, policy: RefPolicy | undefined): boolean {
  const req = policy?.require ?? 'none'
  if (req === 'none') return false
  if (req === 'all') return true
  return req(ref)
}

async function checkOne(
  ref: Ref,
  policy: RefPolicy | undefined,
  required: boolean,
): Promise<RefOutcome> {
  if (ref.kind === 'digest' || ref.kind === 'salted-digest') {
    if (policy?.load === undefined) return required ? 'unverifiable' : 'not-checked'
    const material = await policy.load(ref)
    if (material === undefined) return 'unverifiable'
    if (ref.kind === 'digest') {
      return sha256B64u(material.content) === ref.digest ? 'verified' : 'mismatch'
    }
    if (material.salt === undefined || material.salt.length < MIN_SALT_OCTETS) {
      return 'unverifiable'
    }
    return saltedDigest(material.salt, material.content) === ref.digest ? 'verified' : 'mismatch'
  }
  const checker = policy?.checkers?.[ref.kind]
  if (checker === undefined) return required ? 'unverifiable' : 'not-checked'
  const outcome = await checker(ref)
  // a checker that answers something else has not performed a check
  return outcome === 'verified' || outcome === 'mismatch' || outcome === 'unverifiable'
    ? outcome
    : 'unverifiable'
}
