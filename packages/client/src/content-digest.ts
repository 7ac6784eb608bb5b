import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * The Content-Digest field value for a body (RFC 9530 §2): `sha-256=:<base64>:`.
 *
 * @example contentDigest(Buffer.from('{}')) // 'sha-256=:RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=:'
 */
export function contentDigest(body: Uint8Array): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`
}

const LENGTHS: Record<string, number> = { 'sha-256': 32, 'sha-512': 64 }

/**
 * The digest a Content-Digest field value (RFC 9530 §2) asks for: its `sha-256` member, else its
 * `sha-512` one, with node:crypto's algorithm name; undefined when it holds neither or does not parse.
 */
export function parseContentDigest(
  value: string,
): { algorithm: 'sha256' | 'sha512'; digest: Buffer } | undefined {
  const found = new Map<string, Buffer>()
  for (const member of value.split(',')) {
    const m = /^\s*([a-z0-9_-]+)=:([A-Za-z0-9+/]*={0,2}):\s*$/.exec(member)
    if (!m) return undefined
    found.set(m[1]!, Buffer.from(m[2]!, 'base64'))
  }
  for (const alg of ['sha-256', 'sha-512'] as const) {
    const digest = found.get(alg)
    if (digest === undefined) continue
    if (digest.length !== LENGTHS[alg]) return undefined
    return { algorithm: alg === 'sha-256' ? 'sha256' : 'sha512', digest }
  }
  return undefined
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
