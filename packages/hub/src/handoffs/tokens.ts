import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto'

/** Handoff ids carry 128 random bits; tokens carry 256 and are stored only as hashes. */
const ID_PATTERN = /^ho_[A-Za-z0-9_-]{22}$/

/** A new handoff id. */
export function newHandoffId(): string {
  return `ho_${randomBytes(16).toString('base64url')}`
}

/** Whether a string has the shape of a handoff id. */
export function isHandoffId(id: string): boolean {
  return ID_PATTERN.test(id)
}

/** A new bearer token with a prefix that tells which role it is for. */
export function newToken(role: 'owner' | 'receiver'): string {
  return `${role === 'owner' ? 'hot_o_' : 'hot_r_'}${randomBytes(32).toString('base64url')}`
}

/** The stored form of a token. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url')
}

/** The SHA-256 digest of a token: the bytes its stored form (`hashToken`) encodes. */
export function tokenDigest(token: string): Buffer {
  return hash('sha256', token, 'buffer')
}

/** The digest a stored token hash encodes, to compare presented digests against. */
export function storedDigest(stored: string): Buffer {
  return Buffer.from(stored, 'base64url')
}

/** Which role a presented token holds, compared in constant time against both stored hashes. */
export function matchToken(
  token: string,
  hashes: { owner: string; receiver: string },
): 'owner' | 'receiver' | undefined {
  return matchDigest(tokenDigest(token), {
    owner: storedDigest(hashes.owner),
    receiver: storedDigest(hashes.receiver),
  })
}

/** Which role a presented token's digest holds, compared in constant time against both. */
export function matchDigest(
  presented: Buffer,
  digests: { owner: Buffer; receiver: Buffer },
): 'owner' | 'receiver' | undefined {
  const { owner, receiver } = digests
  const isOwner = owner.length === presented.length && timingSafeEqual(owner, presented)
  const isReceiver = receiver.length === presented.length && timingSafeEqual(receiver, presented)
  if (isOwner) return 'owner'
  if (isReceiver) return 'receiver'
  return undefined
}
