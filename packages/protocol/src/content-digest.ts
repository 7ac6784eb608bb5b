// The Content-Digest field (RFC 9530 §2): a dictionary of byte sequences keyed by algorithm.
import { fromBase64, toBase64 } from './base64.js'
import type { DigestAlgorithm, DigestBytes } from './platform.js'

/** A digest a Content-Digest field carries. */
export interface ContentDigest {
  algorithm: DigestAlgorithm
  digest: Uint8Array
}

const LENGTHS: Record<DigestAlgorithm, number> = { 'sha-256': 32, 'sha-512': 64 }

/**
 * The Content-Digest field value for a body, hashed with `digest` (`sha-256` unless named).
 *
 * @example createContentDigest(body, nodeDigest) // 'sha-256=:RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=:'
 */
export function createContentDigest(
  body: Uint8Array,
  digest: DigestBytes,
  algorithm: DigestAlgorithm = 'sha-256',
): string {
  return `${algorithm}=:${toBase64(digest(algorithm, body))}:`
}

/**
 * The digest a Content-Digest field value asks a receiver to check: its `sha-256` member, else
 * its `sha-512` one; undefined when it holds neither, a digest of the wrong length, or does not
 * parse.
 */
export function parseContentDigestField(value: string): ContentDigest | undefined {
  const found = new Map<string, Uint8Array>()
  for (const member of value.split(',')) {
    const m = /^\s*([a-z0-9_-]+)=:([A-Za-z0-9+/]*={0,2}):\s*$/.exec(member)
    if (!m) return undefined
    const bytes = fromBase64(m[2]!)
    if (!bytes) return undefined
    found.set(m[1]!, bytes)
  }
  for (const algorithm of ['sha-256', 'sha-512'] as const) {
    const digest = found.get(algorithm)
    if (digest === undefined) continue
    if (digest.length !== LENGTHS[algorithm]) return undefined
    return { algorithm, digest }
  }
  return undefined
}
