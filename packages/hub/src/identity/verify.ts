import { createHash, type Hash, type KeyObject, timingSafeEqual, verify } from 'node:crypto'
import {
  BatonError,
  BODY_COMPONENTS,
  type HttpMessage,
  PRESENT_COMPONENTS,
  parseContentDigestField,
  parseSignatureFields,
  publicKeyOfPrincipal,
  REQUIRED_COMPONENTS,
  signatureBase,
} from '@baton/protocol'
import { nodeDigestName, publicKeyFromRaw } from '../crypto.js'

/** What a request must satisfy; the hub's policy, or a looser one for the RFC examples. */
export interface VerifyPolicy {
  /** The verifier's time, epoch milliseconds. */
  now: number
  skewMs: number
  /** Components every request covers. */
  components: readonly string[]
  /** Components a request with a body covers too. */
  bodyComponents: readonly string[]
  /** Fields covered whenever the request carries them (none when absent). */
  presentComponents?: readonly string[]
  requireNonce: boolean
  /** The public key of a keyid, or undefined when the keyid names no usable key. */
  resolveKey(keyid: string): KeyObject | undefined
}

/** A signature that verified: who signed, with which nonce and when. */
export interface VerifiedSignature {
  label: string
  keyid: string
  nonce: string | undefined
  /** Seconds since the epoch. */
  created: number
  base: string
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
  const inputValue = header(message, 'signature-input')
  const signatureValue = header(message, 'signature')
  if (inputValue === undefined || signatureValue === undefined) {
    throw new BatonError(
      'signature_missing',
      'The request is not signed (no Signature-Input or Signature)',
    )
  }
  const parsed = parseSignatureFields(inputValue, signatureValue)
  const { label, input: list, signature, created, keyid, nonce, expires } = parsed
  if (policy.requireNonce && nonce === undefined) {
    throw new BatonError('signature_malformed', 'The nonce parameter is required', {
      reason: 'nonce',
    })
  }

  const covered = new Set(list.items.map((i) => i.value))
  const hasBody = declaresBody || message.headers['content-digest'] !== undefined
  const required = [
    ...policy.components,
    ...(hasBody ? policy.bodyComponents : []),
    ...(policy.presentComponents ?? []).filter((c) => message.headers[c] !== undefined),
  ]
  const missing = required.filter((c) => !covered.has(c))
  if (missing.length > 0) {
    throw new BatonError('signature_malformed', `The signature must cover ${missing.join(', ')}`, {
      reason: 'components',
      missing,
    })
  }

  // RFC 9421 §3.2.1: the verifier decides how old a signature may be; here, the skew window.
  const createdMs = created * 1000
  if (
    Math.abs(policy.now - createdMs) > policy.skewMs ||
    (expires !== undefined && expires * 1000 < policy.now)
  ) {
    throw new BatonError(
      'signature_stale',
      'The signature was not created within the skew window',
      {
        created,
        now: Math.floor(policy.now / 1000),
        skew_seconds: policy.skewMs / 1000,
      },
    )
  }

  const key = policy.resolveKey(keyid)
  if (!key) {
    throw new BatonError('unknown_key', 'The keyid is not a did:key of an Ed25519 public key', {
      keyid,
    })
  }
  const base = signatureBase(message, list)
  return {
    sig: { label, keyid, nonce, created, base },
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
 * `verifySignedHeaders` with the Ed25519 verify run on the thread pool, so that the event loop
 * parses other requests and commits meanwhile; every other check runs before it, at once.
 */
export function verifySignedHeadersAsync(
  message: HttpMessage,
  declaresBody: boolean,
  policy: VerifyPolicy,
): Promise<VerifiedSignature> {
  let checked: CheckedHeaders
  try {
    checked = checkSignedHeaders(message, declaresBody, policy)
  } catch (error) {
    return Promise.reject(error)
  }
  const { sig, key, data, signature } = checked
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

/** Baton's own policy for a hub with this skew window, clock reading and key resolver. */
export function hubPolicy(
  now: number,
  skewMs: number,
  resolveKey: VerifyPolicy['resolveKey'],
): VerifyPolicy {
  return {
    now,
    skewMs,
    components: REQUIRED_COMPONENTS,
    bodyComponents: BODY_COMPONENTS,
    presentComponents: PRESENT_COMPONENTS,
    requireNonce: true,
    resolveKey,
  }
}
