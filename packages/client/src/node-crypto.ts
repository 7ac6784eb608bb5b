import { createHash, type KeyObject, sign } from 'node:crypto'
import type { DigestAlgorithm, DigestBytes, SignBytes } from '@baton/protocol'

const NODE_NAMES: Record<DigestAlgorithm, 'sha256' | 'sha512'> = {
  'sha-256': 'sha256',
  'sha-512': 'sha512',
}

/** node:crypto's name for a digest algorithm. */
export const nodeDigestName = (algorithm: DigestAlgorithm) => NODE_NAMES[algorithm]

/** The protocol's hashing operation, through node:crypto. */
export const nodeDigest: DigestBytes = (algorithm, data) =>
  createHash(NODE_NAMES[algorithm]).update(data).digest()

/** The protocol's signing operation for one Ed25519 private key, through node:crypto. */
export const ed25519Signer =
  (privateKey: KeyObject): SignBytes =>
  (data) =>
    sign(null, data, privateKey)
