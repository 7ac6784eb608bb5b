// RFC 4648 base64 (§4) and base64url (§5) without Buffer, so protocol runs on any platform.
const STD = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

function lookup(alphabet: string): Int16Array {
  const table = new Int16Array(128).fill(-1)
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i
  return table
}
const STD_LOOKUP = lookup(STD)
const URL_LOOKUP = lookup(URL_SAFE)

function encode(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  let out = ''
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out +=
      alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + alphabet[n & 63]!
  }
  const rest = bytes.length - i
  if (rest === 1) {
    const n = bytes[i]! << 16
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + (pad ? '==' : '')
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8)
    out +=
      alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + alphabet[(n >> 6) & 63]! + (pad ? '=' : '')
  }
  return out
}

// Non-zero pad bits are ignored, as RFC 8941 §4.2.7 asks of byte-sequence parsers.
function decode(text: string, table: Int16Array): Uint8Array | undefined {
  const body = text.replace(/={1,2}$/, '')
  if (body.length % 4 === 1) return undefined
  const out = new Uint8Array(Math.floor((body.length * 3) / 4))
  let bits = 0
  let acc = 0
  let o = 0
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i)
    const v = c < 128 ? table[c]! : -1
    if (v < 0) return undefined
    acc = ((acc << 6) | v) & 0xffffff
    bits += 6
    if (bits >= 8) {
      bits -= 8
      out[o++] = (acc >> bits) & 0xff
    }
  }
  return out
}

/** Encodes bytes as padded base64 (RFC 4648 §4). */
export function toBase64(bytes: Uint8Array): string {
  return encode(bytes, STD, true)
}

/** Encodes bytes as unpadded base64url (RFC 4648 §5), as JOSE uses it. */
export function toBase64url(bytes: Uint8Array): string {
  return encode(bytes, URL_SAFE, false)
}

/** Decodes base64 with optional padding; undefined for a character outside the alphabet. */
export function fromBase64(text: string): Uint8Array | undefined {
  return decode(text, STD_LOOKUP)
}

/** Decodes unpadded base64url; undefined for a character outside the alphabet. */
export function fromBase64url(text: string): Uint8Array | undefined {
  return /=/.test(text) ? undefined : decode(text, URL_LOOKUP)
}
