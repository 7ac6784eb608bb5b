import { createHash, hash } from 'node:crypto'

/** A signed element as carried: a JWS Compact Serialization string or tagged COSE_Sign1 bytes. */
export type SignedElement = string | Uint8Array

/**
 * The handoff digest: SHA-256 over the element's octets exactly as received, base64url (43 chars).
 * @example handoffDigest('eyJhbGciOi...') // => 'pH3c...' (43 characters)
 */
// seed 003: for a JSON handoff, the ASCII octets of the JWS; for CBOR, the tagged COSE_Sign1 bytes
export function handoffDigest(element: SignedElement): string {
  // a valid JWS is ASCII, so its UTF-8 octets are the octets sent
  return hash('sha256', element, 'base64url')
}

/** SHA-256 of arbitrary octets, base64url without padding: the form of `grant` and ref digests. */
export function sha256B64u(data: Uint8Array | string): string {
  return createHash('sha256')
    .update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data)
    .digest('base64url')
}

/**
 * The digest of a salted reference: SHA-256 over the salt octets followed by the content octets.
 */
// seed 003: the salt is delivered with the object, never inside the element; choice: salt || content
export function saltedDigest(salt: Uint8Array, content: Uint8Array | string): string {
  return createHash('sha256')
    .update(salt)
    .update(typeof content === 'string' ? Buffer.from(content, 'utf8') : content)
    .digest('base64url')
}

/** The digest of a credential for the `grant` member, over its octets exactly as presented. */
// seed 003: grant holds only the digest of a credential, never the credential itself
export function grantDigest(credential: Uint8Array | string): string {
  return sha256B64u(credential)
}
