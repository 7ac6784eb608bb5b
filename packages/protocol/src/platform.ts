// The operations the primitives cannot do portably without a platform library: hashing and
// signing. Callers pass their own (the client and the hub use node:crypto), so protocol itself
// imports no platform module.

/** A hash algorithm by its name in the HTTP Digest Algorithm Values registry (RFC 9530 §5). */
export type DigestAlgorithm = 'sha-256' | 'sha-512'

/**
 * Hashes bytes with the named algorithm.
 *
 * @example const digest: DigestBytes = (alg, data) => createHash(alg.replace('-', '')).update(data).digest()
 */
export type DigestBytes = (algorithm: DigestAlgorithm, data: Uint8Array) => Uint8Array

/**
 * Signs bytes with Ed25519 (RFC 8032) under a key the caller holds.
 *
 * @example const signBytes: SignBytes = (data) => sign(null, data, privateKey)
 */
export type SignBytes = (data: Uint8Array) => Uint8Array
