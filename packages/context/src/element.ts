import type { SignedElement } from './digest.js'
import type { Algorithm } from './keys.js'

/** A signed element split into its parts, before its signature is checked. */
export interface ParsedElement {
  /** Which serialization carried it. */
  readonly form: 'jws' | 'cose'
  /** The element exactly as received. */
  readonly raw: SignedElement
  /** The protected `alg`. */
  readonly alg: Algorithm
  /** The protected `kid`. */
  readonly kid: string
  /** The protected `typ` (JWS only; COSE carries the type in the payload alone). */
  readonly typ: string | undefined
  /** The octets the signature covers. */
  readonly signingInput: Uint8Array
  /** The signature octets. */
  readonly signature: Uint8Array
  /** The decoded payload object. */
  readonly payload: Readonly<Record<string, unknown>>
}
