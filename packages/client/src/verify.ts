import { createHash, timingSafeEqual, verify } from 'node:crypto'
import {
  BatonError,
  BODY_COMPONENTS,
  checkSignatureHeaders,
  type HttpMessage,
  PRESENT_COMPONENTS,
  publicKeyOfPrincipal,
  REQUIRED_COMPONENTS,
  type SignatureProfile,
  signatureBase,
} from '@baton/protocol'
import { parseContentDigest } from './content-digest.js'
import { publicKeyFromRaw } from './identity.js'

/** What a request must satisfy, by a Baton hub's rules, for `verifySignedRequest`. */
export interface RequestVerifyOptions {
  /** The verifier's time, epoch milliseconds. */
  now: number
  /** Seconds `created` may be away from `now`, either way (the hub's default is 60). */
  skewSeconds?: number
  /** Enrolled keys for Web Bot Auth keyids: JWK thumbprint to did:key principal. */
  enrolled?: ReadonlyMap<string, string>
  /** Nonces already used, as `${principal} ${nonce}`: a verifier that keeps them refuses a replay. */
  seenNonces?: ReadonlySet<string>
}

/** A request whose signature verified: who signed it, with which nonce, under which profile. */
export interface VerifiedRequest {
  principal: string
  keyid: string
  nonce: string | undefined
  created: number
  profile: SignatureProfile
  base: string
}

const refuse = (
  code: 'digest_mismatch' | 'signature_invalid' | 'signature_replayed',
  message: string,
  context = {},
) => new BatonError(code, message, context)

/**
 * Verifies a signed request as a Baton hub does, in the hub's order, throwing a BatonError with
 * the hub's code for each refusal: the signature fields and policy (`signature_missing`,
 * `signature_malformed`, `signature_stale`), the key (`unknown_key`, `key_not_enrolled`), the
 * Ed25519 signature over the rebuilt base (`signature_invalid`), a nonce already seen
 * (`signature_replayed`) and the body against its Content-Digest (`digest_mismatch`). The
 * message's `targetUri` is the URI the verifier was addressed at.
 *
 * @example verifySignedRequest({ method, targetUri, headers }, body, { now: Date.now() })
 */
export function verifySignedRequest(
  message: HttpMessage,
  body: Uint8Array,
  options: RequestVerifyOptions,
): VerifiedRequest {
  const checked = checkSignatureHeaders(message, body.length > 0, {
    now: options.now,
    skewMs: (options.skewSeconds ?? 60) * 1000,
    components: REQUIRED_COMPONENTS,
    bodyComponents: BODY_COMPONENTS,
    presentComponents: PRESENT_COMPONENTS,
    requireNonce: true,
  })
  let principal = checked.keyid
  if (checked.profile === 'web-bot-auth') {
    const enrolled = options.enrolled?.get(checked.keyid)
    if (enrolled === undefined) {
      throw new BatonError('key_not_enrolled', 'The keyid names no enrolled key', {
        keyid: checked.keyid,
      })
    }
    principal = enrolled
  }
  const raw = publicKeyOfPrincipal(principal)
  if (!raw) {
    throw new BatonError('unknown_key', 'The keyid is not a did:key of an Ed25519 public key', {
      keyid: checked.keyid,
    })
  }
  const base = signatureBase(message, checked.input)
  if (!verify(null, Buffer.from(base, 'utf8'), publicKeyFromRaw(raw), checked.signature)) {
    throw refuse('signature_invalid', 'The signature does not verify over this request')
  }
  // A hub spends a nonce once the header section verifies, and refuses it again in the window.
  if (options.seenNonces?.has(`${principal} ${checked.nonce ?? ''}`)) {
    throw refuse('signature_replayed', 'This nonce was already used with this key', {
      keyid: principal,
    })
  }
  const field = message.headers['content-digest']
  const digest = Array.isArray(field) ? field.join(', ') : field
  if (digest !== undefined || body.length > 0) {
    const expected = digest === undefined ? undefined : parseContentDigest(digest)
    const actual = expected && createHash(expected.algorithm).update(body).digest()
    if (!expected || !actual || !timingSafeEqual(actual, expected.digest)) {
      throw refuse('digest_mismatch', 'The body does not match its Content-Digest')
    }
  }
  return {
    principal,
    keyid: checked.keyid,
    nonce: checked.nonce,
    created: checked.created,
    profile: checked.profile,
    base,
  }
}
