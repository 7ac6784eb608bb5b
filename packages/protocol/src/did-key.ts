// did:key identifiers for Ed25519 keys (W3C CCG did-method-key) and the base58btc text they use.

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** Encodes bytes as base58btc (the Bitcoin alphabet), as multibase `z` uses. */
export function base58btcEncode(bytes: Uint8Array): string {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ''
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out
    n /= 58n
  }
  for (const b of bytes) {
    if (b !== 0) break
    out = `1${out}`
  }
  return out
}

/** Decodes base58btc; answers undefined for a character outside the alphabet. */
export function base58btcDecode(text: string): Uint8Array | undefined {
  let n = 0n
  for (const c of text) {
    const d = ALPHABET.indexOf(c)
    if (d < 0) return undefined
    n = n * 58n + BigInt(d)
  }
  const bytes: number[] = []
  while (n > 0n) {
    bytes.unshift(Number(n & 0xffn))
    n >>= 8n
  }
  for (const c of text) {
    if (c !== '1') break
    bytes.unshift(0)
  }
  return new Uint8Array(bytes)
}

// did:key (W3C CCG did-method-key): multicodec ed25519-pub is the varint 0xed 0x01.
const ED25519_PUB_PREFIX = [0xed, 0x01]

/**
 * The did:key principal of an Ed25519 public key: `did:key:z` + base58btc(0xed 0x01 ‖ key).
 *
 * @example principalOf(publicKeyBytes) // 'did:key:z6Mk...'
 */
export function principalOf(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new TypeError('An Ed25519 public key is 32 bytes')
  return `did:key:z${base58btcEncode(new Uint8Array([...ED25519_PUB_PREFIX, ...publicKey]))}`
}

/** The raw Ed25519 public key of a did:key principal, or undefined when it is not one. */
export function publicKeyOfPrincipal(principal: string): Uint8Array | undefined {
  if (!principal.startsWith('did:key:z') || principal.length > 80) return undefined
  const bytes = base58btcDecode(principal.slice('did:key:z'.length))
  if (bytes?.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) return undefined
  const key = bytes.slice(2)
  // Only the canonical encoding names the key: re-encoding must give the same text.
  return principalOf(key) === principal ? key : undefined
}

/** The text of a did:key as the hub names principals: `did:key:z` and base58btc. */
export const DID_KEY_PATTERN = /^did:key:z[1-9A-HJ-NP-Za-km-z]+$/
