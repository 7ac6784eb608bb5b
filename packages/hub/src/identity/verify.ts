import { createHash, type Hash, type KeyObject, timingSafeEqual, verify } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import {
  BatonError,
  BODY_COMPONENTS,
  checkSignatureHeaders,
  type HttpMessage,
  PRESENT_COMPONENTS,
  parseContentDigestField,
  publicKeyOfPrincipal,
  REQUIRED_COMPONENTS,
  type SignaturePolicy,
  type SignatureProfile,
  signatureBase,
} from '@baton/protocol'
import { nodeDigestName, publicKeyFromRaw } from '../crypto.js'

/** What a request must satisfy; the hub's policy, or a looser one for the RFC examples. */
export interface VerifyPolicy extends SignaturePolicy {
  /** The public key of a keyid, or undefined when the keyid names no usable key. */
  resolveKey(keyid: string): KeyObject | undefined
  /**
   * The enrolled principal, and its key, that a Web Bot Auth keyid (a JWK thumbprint) names;
   * undefined when none is enrolled (or the verifier knows of none).
   */
  resolveThumbprint?(thumbprint: string): EnrolledKey | undefined
}

/** An enrolled principal and its public key. */
export interface EnrolledKey {
  principal: string
  key: KeyObject
}

/** A signature that verified: who signed, with which nonce and when. */
export interface VerifiedSignature {
  label: string
  /** The signer: its did:key principal, whichever profile named it. */
  keyid: string
  nonce: string | undefined
  /** Seconds since the epoch. */
  created: number
  base: string
  /** Baton's profile (keyid a did:key) or Web Bot Auth's (keyid a JWK thumbprint). */
  profile: SignatureProfile
}

function header(message: HttpMessage, name: string): string | undefined {
  const v = message.headers[name]
  return Array.isArray(v) ? v.join(', ') : v
}

/**
 * Checks a body against its Content-Digest (RFC 9530 §2: the content bytes as received) while
 * it arrives, so no body has to be held to be checked.
 */
export class BodyDigest {
  private readonly hash: Hash | undefined
  private readonly expected: Buffer | undefined
  private received = 0

  /** `value` is the request's Content-Digest, or undefined when it carries none. */
  constructor(private readonly value: string | undefined) {
    const parsed = value === undefined ? undefined : parseContentDigestField(value)
    this.hash = parsed ? createHash(nodeDigestName(parsed.algorithm)) : undefined
    this.expected = parsed ? Buffer.from(parsed.digest) : undefined
  }

  /** Feeds the next bytes of the body. */
  update(chunk: Uint8Array): void {
    this.received += chunk.length
    this.hash?.update(chunk)
  }

  /** Throws `digest_mismatch` unless the bytes fed so far are the body the digest names. */
  assertMatches(): void {
    // No digest: the signature covered no body, so any byte is one it does not vouch for.
    if (this.value === undefined && this.received === 0) return
    const actual = this.hash?.digest()
    if (!actual || !this.expected || !timingSafeEqual(actual, this.expected)) {
      throw new BatonError('digest_mismatch', 'The body does not match its sha-256 Content-Digest')
    }
  }
}

/**
 * Verifies the RFC 9421 signature of a request and the RFC 9530 digest of its body against a
 * policy. Throws a BatonError with one code per failure; answers the verified parameters.
 */
export function verifySignedRequest(
  message: HttpMessage,
  body: Uint8Array,
  policy: VerifyPolicy,
): VerifiedSignature {
  const sig = verifySignedHeaders(message, body.length > 0, policy)
  const digest = new BodyDigest(header(message, 'content-digest'))
  digest.update(body)
  digest.assertMatches()
  return sig
}

/** A request's signature checked in every way but the Ed25519 verify itself, which is `check`. */
interface CheckedHeaders {
  sig: VerifiedSignature
  key: KeyObject
  data: Buffer
  signature: Uint8Array
}

/**
 * Everything of `verifySignedHeaders` but the Ed25519 verify: the fields, the covered
 * components, the skew window and the key; answers what the verify needs.
 */
function checkSignedHeaders(
  message: HttpMessage,
  declaresBody: boolean,
  policy: VerifyPolicy,
): CheckedHeaders {
  const checked = checkSignatureHeaders(message, declaresBody, policy)
  const { label, input: list, signature, created, keyid, nonce, profile } = checked
  let principal = keyid
  let key: KeyObject | undefined
  if (profile === 'web-bot-auth') {
    // The thumbprint names a key only once that key enrolled (by signing with its did:key).
    const enrolled = policy.resolveThumbprint?.(keyid)
    if (!enrolled) {
      throw new BatonError('key_not_enrolled', 'The keyid names no key enrolled on this hub', {
        keyid,
      })
    }
    principal = enrolled.principal
    key = enrolled.key
  } else {
    key = policy.resolveKey(keyid)
    if (!key) {
      throw new BatonError('unknown_key', 'The keyid is not a did:key of an Ed25519 public key', {
        keyid,
      })
    }
  }
  const base = signatureBase(message, list)
  return {
    sig: { label, keyid: principal, nonce, created, base, profile },
    key,
    data: Buffer.from(base, 'utf8'),
    signature,
  }
}

const invalid = () =>
  new BatonError('signature_invalid', 'The signature does not verify over this request')

/**
 * Verifies the RFC 9421 signature of a request from its header section alone, before any body
 * byte is read: `declaresBody` says whether the request announces a body (Content-Length above
 * zero, or a transfer coding), which then must be covered through Content-Digest. The body is
 * checked against that digest as it streams in (`BodyDigest`).
 */
export function verifySignedHeaders(
  message: HttpMessage,
  declaresBody: boolean,
  policy: VerifyPolicy,
): VerifiedSignature {
  const { sig, key, data, signature } = checkSignedHeaders(message, declaresBody, policy)
  if (!verify(null, data, key, signature)) throw invalid()
  return sig
}

/**
 * Where the Ed25519 verify of a request runs. On the thread pool the event loop parses other
 * requests meanwhile, but handing the work to a pool thread and taking its answer back costs the
 * loop most of a verify again (a thread's wake-up each way: measured at about 65 µs of the hub's
 * CPU a request on this kind of machine, against a verify of 90 µs). So while the event loop has
 * room the verify runs on it, costing one verify and no wake-up; once the loop is busy, it goes to
 * the pool, where other cores add throughput. The loop's utilization is sampled every half second.
 */
export class VerifyPlacement {
  private busy = false
  private last = performance.eventLoopUtilization()
  private readonly timer: NodeJS.Timeout

  constructor(
    /** Above this share of the last half second busy, verifies go to the pool. */
    private readonly high = 0.8,
    /** Below this share, they come back to the loop (a gap, so the place does not flap). */
    private readonly low = 0.6,
  ) {
    this.timer = setInterval(() => this.sample(), 500)
    this.timer.unref()
  }

  private sample(): void {
    const now = performance.eventLoopUtilization()
    this.observe(performance.eventLoopUtilization(now, this.last).utilization)
    this.last = now
  }

  /** Takes one sample of the loop's utilization (0 to 1) into the decision. */
  observe(utilization: number): void {
    if (this.busy ? utilization < this.low : utilization > this.high) this.busy = !this.busy
  }

  /** Whether the next verify goes to the thread pool. */
  get onPool(): boolean {
    return this.busy
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

let placement: VerifyPlacement | undefined
/** The placement of this process's verifies: one event loop, so one for every hub it runs. */
export function verifyPlacement(): VerifyPlacement {
  placement ??= new VerifyPlacement()
  return placement
}

/**
 * `verifySignedHeaders`, with the Ed25519 verify on the event loop or on the thread pool as
 * `placement` says (on the pool without one); every other check runs before it, at once.
 */
export function verifySignedHeadersAsync(
  message: HttpMessage,
  declaresBody: boolean,
  policy: VerifyPolicy,
  placement?: VerifyPlacement,
): Promise<VerifiedSignature> {
  let checked: CheckedHeaders
  try {
    checked = checkSignedHeaders(message, declaresBody, policy)
  } catch (error) {
    return Promise.reject(error)
  }
  const { sig, key, data, signature } = checked
  if (placement && !placement.onPool) {
    return verify(null, data, key, signature) ? Promise.resolve(sig) : Promise.reject(invalid())
  }
  return new Promise((resolve, reject) => {
    verify(null, data, key, signature, (error, ok) => {
      if (error || !ok) reject(invalid())
      else resolve(sig)
    })
  })
}

const keyCache = new Map<string, KeyObject>()

/** The public key of a did:key principal, cached; undefined when it is not an Ed25519 did:key. */
export function didKeyResolver(extraKeys?: ReadonlyMap<string, KeyObject>) {
  return (keyid: string): KeyObject | undefined => {
    const extra = extraKeys?.get(keyid)
    if (extra) return extra
    const known = keyCache.get(keyid)
    if (known) return known
    const raw = publicKeyOfPrincipal(keyid)
    if (!raw) return undefined
    const key = publicKeyFromRaw(raw)
    if (keyCache.size >= 10_000) keyCache.clear()
    keyCache.set(keyid, key)
    return key
  }
}

/** Baton's own policy for a hub with this skew window, clock reading and key resolvers. */
export function hubPolicy(
  now: number,
  skewMs: number,
  resolveKey: VerifyPolicy['resolveKey'],
  resolveThumbprint?: VerifyPolicy['resolveThumbprint'],
): VerifyPolicy {
  return {
    now,
    skewMs,
    components: REQUIRED_COMPONENTS,
    bodyComponents: BODY_COMPONENTS,
    presentComponents: PRESENT_COMPONENTS,
    requireNonce: true,
    resolveKey,
    ...(resolveThumbprint ? { resolveThumbprint } : {}),
  }
}
