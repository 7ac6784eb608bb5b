import { ContextError } from './errors.js'

const B64URL = /^[A-Za-z0-9_-]*$/

/** Encodes octets as base64url without padding. */
export function toB64u(bytes: Uint8Array | string): string {
  return typeof bytes === 'string'
    ? Buffer.from(bytes, 'utf8').toString('base64url')
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url')
}

/**
 * Decodes strict base64url: only the URL-safe alphabet, no padding, no stray bits.
 * Throws ContextError('bad-signature') otherwise, because undecodable input is treated as absent.
 */
export function fromB64u(text: string): Buffer {
  if (!isCanonicalB64u(text)) throw new ContextError('bad-signature', 'not canonical base64url')
  return Buffer.from(text, 'base64url')
}

/** Tells whether a string is canonical base64url without padding (what Buffer would re-encode). */
export function isCanonicalB64u(text: string): boolean {
  const rem = text.length & 3
  if (rem === 1 || !B64URL.test(text)) return false
  if (rem === 0) return true
  // the unused low bits of the last character must be zero (RFC 4648 section 3.5)
  const last = text.charCodeAt(text.length - 1)
  const v = sextet(last)
  return rem === 2 ? (v & 0x0f) === 0 : (v & 0x03) === 0
}

function sextet(c: number): number {
  if (c >= 65 && c <= 90) return c - 65
  if (c >= 97 && c <= 122) return c - 71
  if (c >= 48 && c <= 57) return c + 4
  return c === 45 ? 62 : 63
}
