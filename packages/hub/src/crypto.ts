// The hub's node:crypto implementation of the operations @baton/protocol's primitives take as
// parameters (hashing and Ed25519 signing), and its Ed25519 public keys.
import { createHash, createPublicKey, type KeyObject, sign } from 'node:crypto'
import {
  type DigestAlgorithm,
  type DigestBytes,
  type SignBytes,
  thumbprintInput,
} from '@baton/protocol'

const NODE_NAMES: Record<DigestAlgorithm, 'sha256' | 'sha512'> = {
  'sha-256': 'sha256',
  'sha-512': 'sha512',
}

/** node:crypto's name for a digest algorithm. */
export const nodeDigestName = (algorithm: DigestAlgorithm) => NODE_NAMES[algorithm]

/** Hashes bytes through node:crypto. */
export const nodeDigest: DigestBytes = (algorithm, data) =>
  createHash(NODE_NAMES[algorithm]).update(data).digest()

/** Signs bytes with one Ed25519 private key through node:crypto. */
export const ed25519Signer =
  (privateKey: KeyObject): SignBytes =>
  (data) =>
    sign(null, data, privateKey)

/** A KeyObject for the Ed25519 public key of raw bytes. */
export function publicKeyFromRaw(raw: Uint8Array): KeyObject {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  })
}

/** The RFC 7638 JWK thumbprint of an Ed25519 public key given as base64url `x` (RFC 8037 §A.3). */
export function keyThumbprint(x: string): string {
  return createHash('sha256').update(thumbprintInput(x)).digest('base64url')
}
