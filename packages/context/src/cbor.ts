import { Decoder, Tag } from 'cbor-x'
import { ContextError } from './errors.js'

/** A tagged CBOR item, as produced by decodeCbor and accepted by encodeCbor. */
export { Tag as CborTag }

/** A value this library encodes: integers, text, bytes, booleans, null, arrays, maps and tags. */
export type CborValue =
  | number
  | string
  | boolean
  | null
  | Uint8Array
  | readonly CborValue[]
  | ReadonlyMap<number | string, CborValue>
  | { readonly [key: string]: CborValue | undefined }
  | Tag

const decoder = new Decoder({ mapsAsObjects: false, useRecords: false })

/**
 * Encodes a value with RFC 8949 section 4.2.1 deterministic encoding: shortest integer heads,
 * definite lengths, map keys sorted by their encoded octets. Floats are refused.
 */
// seed 003 (brief): the CBOR form uses deterministic encoding
export function encodeCbor(value: CborValue): Buffer {
  const out: Buffer[] = []
  write(value, out)
  return Buffer.concat(out)
}

/** Decodes one CBOR item with cbor-x; maps come back as Map, byte strings as Buffer. */
export function decodeCbor(bytes: Uint8Array): unknown {
  try {
    return decoder.decode(bytes)
  } catch (cause) {
    throw new ContextError('bad-signature', 'undecodable CBOR', { cause })
  }
}

function head(major: number, n: number, out: Buffer[]): void {
  const m = major << 5
  if (n < 24) out.push(Buffer.of(m | n))
  else if (n < 0x100) out.push(Buffer.of(m | 24, n))
  else if (n < 0x10000) out.push(Buffer.of(m | 25, n >> 8, n & 0xff))
  else if (n < 0x100000000) {
    const b = Buffer.alloc(5)
    b[0] = m | 26
    b.writeUInt32BE(n, 1)
    out.push(b)
  } else {
    const b = Buffer.alloc(9)
    b[0] = m | 27
    b.writeBigUInt64BE(BigInt(n), 1)
    out.push(b)
  }
}

function write(value: CborValue | undefined, out: Buffer[]): void {
  if (value === null) out.push(Buffer.of(0xf6))
  else if (value === true) out.push(Buffer.of(0xf5))
  else if (value === false) out.push(Buffer.of(0xf4))
  else if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new ContextError('invalid-input', 'only safe integers are encoded')
    }
    if (value >= 0) head(0, value, out)
    else head(1, -1 - value, out)
  } else if (typeof value === 'string') {
    const b = Buffer.from(value, 'utf8')
    head(3, b.length, out)
    out.push(b)
  } else if (value instanceof Uint8Array) {
    head(2, value.length, out)
    out.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength))
  } else if (Array.isArray(value)) {
    head(4, value.length, out)
    for (const v of value) write(v as CborValue, out)
  } else if (value instanceof Tag) {
    head(6, value.tag, out)
    write(value.value as CborValue, out)
  } else if (value instanceof Map) {
    writeMap([...(value as Map<number | string, CborValue>).entries()], out)
  } else if (typeof value === 'object' && value !== undefined) {
    const entries = Object.entries(value).filter((e) => e[1] !== undefined)
    writeMap(entries as [string, CborValue][], out)
  } else {
    throw new ContextError('invalid-input', 'value cannot be encoded as CBOR')
  }
}

function writeMap(entries: [number | string, CborValue][], out: Buffer[]): void {
  const encoded = entries.map(([k, v]) => {
    const kb: Buffer[] = []
    write(k, kb)
    return { key: Buffer.concat(kb), value: v }
  })
  encoded.sort((a, b) => Buffer.compare(a.key, b.key))
  for (let i = 1; i < encoded.length; i++) {
    if (encoded[i - 1]!.key.equals(encoded[i]!.key)) {
      throw new ContextError('invalid-input', 'duplicate map key')
    }
  }
  head(5, encoded.length, out)
  for (const e of encoded) {
    out.push(e.key)
    write(e.value, out)
  }
}
