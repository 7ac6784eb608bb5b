import type { SignedElement } from './digest.js'
import { ContextError } from './errors.js'
import type { Handoff } from './offer.js'
import type { SignedStatus, StatusObject } from './status.js'
import { parseHandoff } from './verify.js'

/** The JSON form of a Handoff object: JWS strings only. */
export interface HandoffJson {
  /** The current offer (JWS). */
  readonly offer: string
  /** Earlier offers, oldest first (JWS); omitted when not carried. */
  readonly chain?: readonly string[]
}

/** The JSON form of a Status object. */
export interface StatusJson {
  /** The signed status (JWS). */
  readonly status: string
}

/** Converts a Handoff to its JSON form; COSE elements cannot travel in a JSON carrier. */
export function toHandoffJson(handoff: Handoff): HandoffJson {
  const offer = jsonElement(handoff.offer)
  return handoff.chain === undefined
    ? { offer }
    : { offer, chain: handoff.chain.map((e) => jsonElement(e)) }
}

/** Converts a signed status (or its element) to the Status object's JSON form. */
export function toStatusJson(status: SignedStatus | SignedElement | StatusObject): StatusJson {
  if (typeof status === 'string' || status instanceof Uint8Array) {
    return { status: jsonElement(status) }
  }
  return { status: jsonElement('element' in status ? status.element : status.status) }
}

/** Reads a Handoff object from carried JSON; throws ContextError('bad-signature') if malformed. */
export function fromHandoffJson(value: unknown): Handoff {
  const h = parseHandoff(value)
  if (typeof h.offer !== 'string' || (h.chain ?? []).some((e) => typeof e !== 'string')) {
    throw new ContextError('bad-signature', 'a JSON carrier holds JWS strings')
  }
  return h
}

/** Reads a Status object from carried JSON; throws ContextError('bad-signature') if malformed. */
export function fromStatusJson(value: unknown): StatusObject {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as { status?: unknown }).status !== 'string'
  ) {
    throw new ContextError('bad-signature', 'status object is not { status: <jws> }')
  }
  return { status: (value as { status: string }).status }
}

function jsonElement(e: SignedElement): string {
  if (typeof e !== 'string') {
    throw new ContextError('invalid-input', 'a JSON carrier holds JWS elements, not COSE bytes')
  }
  return e
}
