import { createHash, timingSafeEqual } from 'node:crypto'
import { createContentDigest, parseContentDigestField } from '@baton/protocol/primitives'
import { nodeDigest, nodeDigestName } from './node-crypto.js'

/**
 * The Content-Digest field value for a body (RFC 9530 §2): `sha-256=:<base64>:`.
 *
 * @example contentDigest(Buffer.from('{}')) // 'sha-256=:RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=:'
 */
export function contentDigest(body: Uint8Array): string {
  return createContentDigest(body, nodeDigest)
}

/**
 * The digest a Content-Digest field value (RFC 9530 §2) asks for: its `sha-256` member, else its
 * `sha-512` one, with node:crypto's algorithm name; undefined when it holds neither or does not parse.
 */
export function parseContentDigest(
  value: string,
): { algorithm: 'sha256' | 'sha512'; digest: Buffer } | undefined {
  const parsed = parseContentDigestField(value)
  if (!parsed) return undefined
  return { algorithm: nodeDigestName(parsed.algorithm), digest: Buffer.from(parsed.digest) }
}

/**
 * Tells whether a Content-Digest field value (RFC 9530 §2: a dictionary of byte sequences) holds
 * a `sha-256` (or else `sha-512`) digest equal to the body's; answers undefined when it holds
 * neither, or does not parse.
 */
export function matchContentDigest(value: string, body: Uint8Array): boolean | undefined {
  const expected = parseContentDigest(value)
  if (!expected) return undefined
  return timingSafeEqual(expected.digest, createHash(expected.algorithm).update(body).digest())
}
