import { CborTag, type CborValue, decodeCbor, encodeCbor } from './cbor.js'
import { COSE_ALGORITHMS, COSE_HEADER, COSE_SIGN1_TAG } from './constants.js'
import type { ParsedElement } from './element.js'
import { ContextError } from './errors.js'
import { type Algorithm, type Signer, signBytes } from './keys.js'

const EMPTY = Buffer.alloc(0)

/** The COSE Sig_structure for COSE_Sign1 (RFC 9052 section 4.4): what the signature covers. */
export function coseSigStructure(protectedBytes: Uint8Array, payload: Uint8Array): Buffer {
  return encodeCbor(['Signature1', protectedBytes, EMPTY, payload])
}

/**
 * Signs a payload object as a tagged COSE_Sign1 message, deterministically encoded, with `alg`
 * and `kid` protected and the same member names as the JSON form.
 */
// seed 003: a CBOR handoff is a COSE_Sign1; its digest is over the encoded tagged message
export function signCose(
  payload: Readonly<Record<string, CborValue | undefined>>,
  signer: Signer,
): Buffer {
  const protectedBytes = encodeCbor(
    new Map<number, CborValue>([
      [COSE_HEADER.alg, COSE_ALGORITHMS[signer.alg]],
      [COSE_HEADER.kid, Buffer.from(signer.kid, 'utf8')],
    ]),
  )
  const payloadBytes = encodeCbor(payload as Record<string, CborValue>)
  const sig = signBytes(signer.alg, signer.key, coseSigStructure(protectedBytes, payloadBytes))
  return encodeCbor(new CborTag([protectedBytes, new Map(), payloadBytes, sig], COSE_SIGN1_TAG))
}

/**
 * Parses a tagged COSE_Sign1 element strictly: tag 18, deterministic encoding throughout, an
 * allowed `alg` and a `kid` in the protected header, no `crit`, a map payload with text keys.
 * Throws ContextError('bad-signature') on any structural fault.
 */
export function parseCoseElement(bytes: Uint8Array): ParsedElement {
  const top = decodeCbor(bytes)
  if (!(top instanceof CborTag) || top.tag !== COSE_SIGN1_TAG) {
    throw new ContextError('bad-signature', 'not a tagged COSE_Sign1')
  }
  const parts = top.value as unknown
  if (!Array.isArray(parts) || parts.length !== 4) {
    throw new ContextError('bad-signature', 'COSE_Sign1 is not a four-element array')
  }
  const [prot, unprot, payloadBytes, signature] = parts as unknown[]
  if (
    !(prot instanceof Uint8Array) ||
    !(unprot instanceof Map) ||
    !(payloadBytes instanceof Uint8Array) ||
    !(signature instanceof Uint8Array)
  ) {
    throw new ContextError('bad-signature', 'COSE_Sign1 members have the wrong types')
  }
  const header = decodeCbor(prot)
  if (!(header instanceof Map)) throw new ContextError('bad-signature', 'protected is not a map')
  // RFC 9052: crit (label 2) lists labels the recipient must understand; none are understood here
  if (header.has(2)) throw new ContextError('bad-signature', 'unknown crit')
  const algId = header.get(COSE_HEADER.alg)
  const alg = (Object.keys(COSE_ALGORITHMS) as Algorithm[]).find(
    (a) => COSE_ALGORITHMS[a] === algId,
  )
  if (alg === undefined) throw new ContextError('bad-signature', 'algorithm not allowed')
  const kidBytes = header.get(COSE_HEADER.kid)
  if (!(kidBytes instanceof Uint8Array) || kidBytes.length === 0) {
    throw new ContextError('bad-signature', 'kid missing')
  }
  const payload = toPlain(decodeCbor(payloadBytes))
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new ContextError('bad-signature', 'payload is not a map')
  }
  // deterministic encoding is part of the wire form: anything else (duplicate keys, long heads,
  // indefinite lengths, tags cbor-x would interpret) fails to re-encode to the same octets
  let canonical: boolean
  try {
    canonical =
      encodeCbor(header as Map<number, CborValue>).equals(prot) &&
      encodeCbor(payload as Record<string, CborValue>).equals(payloadBytes) &&
      encodeCbor(
        new CborTag(
          [prot, unprot as Map<number, CborValue>, payloadBytes, signature],
          COSE_SIGN1_TAG,
        ),
      ).equals(bytes)
  } catch {
    canonical = false
  }
  if (!canonical) throw new ContextError('bad-signature', 'not deterministically encoded')
  return {
    form: 'cose',
    raw: bytes,
    alg,
    kid: Buffer.from(kidBytes).toString('utf8'),
    typ: undefined,
    signingInput: coseSigStructure(prot, payloadBytes),
    signature,
    payload: payload as Record<string, unknown>,
  }
}

function toPlain(value: unknown): unknown {
  if (value instanceof Map) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of value) {
      if (typeof k !== 'string') throw new ContextError('bad-signature', 'payload key is not text')
      if (Object.hasOwn(out, k)) throw new ContextError('bad-signature', 'duplicate key')
      Object.defineProperty(out, k, {
        value: toPlain(v),
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return out
  }
  if (Array.isArray(value)) return value.map(toPlain)
  return value
}
