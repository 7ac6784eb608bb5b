// HTTP Message Signatures (RFC 9421) for Ed25519: the signature base, the covered components
// Baton uses, and creating and reading the Signature-Input and Signature fields. The signing
// and verifying step itself takes the caller's key operation (see platform.ts).
import { BatonError } from './errors.js'
import {
  BODY_COMPONENTS,
  PRESENT_COMPONENTS,
  REQUIRED_COMPONENTS,
  SIGNATURE_ALGORITHM,
  SIGNATURE_LABEL,
} from './identity.js'
import type { SignBytes } from './platform.js'
import {
  parseDictionary,
  type SfInnerList,
  type SfItem,
  type SfParams,
  StructuredFieldError,
  serializeDictionary,
  serializeInnerList,
} from './structured-fields.js'

/** An HTTP request as RFC 9421 sees it: method, absolute target URI and fields by lower-case name. */
export interface HttpMessage {
  method: string
  targetUri: string
  headers: Record<string, string | string[] | undefined>
}

const TARGET = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?$/

/** The parts of an absolute target URI the derived components are made of. */
interface TargetParts {
  scheme: string
  authority: string
  path: string
  query: string
}

function targetParts(message: HttpMessage): TargetParts {
  const m = TARGET.exec(message.targetUri)
  if (!m) throw new BatonError('signature_malformed', 'The target URI is not absolute')
  return { scheme: m[1]!.toLowerCase(), authority: m[2]!, path: m[3] || '/', query: m[4] ?? '' }
}

function derivedValue(message: HttpMessage, target: TargetParts, name: string): string {
  const { scheme, path, query } = target
  switch (name) {
    case '@method':
      return message.method
    case '@target-uri':
      return message.targetUri
    case '@scheme':
      return scheme
    case '@authority': {
      // RFC 9421 §2.2.3: lower-cased host, default port omitted.
      const host = target.authority.toLowerCase()
      if (scheme === 'https' && host.endsWith(':443')) return host.slice(0, -4)
      if (scheme === 'http' && host.endsWith(':80')) return host.slice(0, -3)
      return host
    }
    case '@path':
      return path
    case '@query':
      return query === '' ? '?' : query
    case '@request-target':
      return path + query
    default:
      throw new BatonError('signature_malformed', `Unsupported derived component ${name}`, {
        reason: 'component_unsupported',
      })
  }
}

function fieldValue(message: HttpMessage, name: string): string {
  const raw = message.headers[name]
  if (raw === undefined) {
    throw new BatonError('signature_invalid', `The covered field ${name} is absent`, {
      reason: 'covered_field_absent',
      component: name,
    })
  }
  // RFC 9421 §2.1: each field line's value trimmed, lines joined with ", ".
  return Array.isArray(raw) ? raw.map((v) => v.trim()).join(', ') : raw.trim()
}

/**
 * The value of one covered component of a request (RFC 9421 §2.1 and §2.2). Throws
 * `signature_malformed` for a component Baton does not support and `signature_invalid` for a
 * covered field the message does not have (RFC 9421 §2.5: the base cannot be built).
 */
export function componentValue(message: HttpMessage, name: string): string {
  return name.startsWith('@')
    ? derivedValue(message, targetParts(message), name)
    : fieldValue(message, name)
}

/**
 * The signature base of a request (RFC 9421 §2.5): one line per covered component, then the
 * `@signature-params` line holding the serialized inner list.
 */
export function signatureBase(message: HttpMessage, input: SfInnerList): string {
  const lines: string[] = []
  const seen = new Set<string>()
  let target: TargetParts | undefined
  for (const item of input.items) {
    if (typeof item.value !== 'string' || item.params.length > 0) {
      throw new BatonError('signature_malformed', 'Covered components must be plain strings', {
        reason: 'component_unsupported',
      })
    }
    const name = item.value
    // RFC 9421 §2.5: a component may appear at most once, and names are lower case.
    if (seen.has(name) || name !== name.toLowerCase()) {
      throw new BatonError(
        'signature_malformed',
        `Component ${name} is repeated or not lower case`,
        {
          reason: 'component_invalid',
        },
      )
    }
    seen.add(name)
    let value: string
    if (name.startsWith('@')) {
      // The target URI is split once for all the derived components it covers.
      target ??= targetParts(message)
      value = derivedValue(message, target, name)
    } else {
      value = fieldValue(message, name)
    }
    if (/[\r\n]/.test(value)) {
      throw new BatonError('signature_malformed', `Component ${name} holds a line break`)
    }
    lines.push(`"${name}": ${value}`)
  }
  lines.push(`"@signature-params": ${serializeInnerList(input)}`)
  return lines.join('\n')
}

/**
 * Baton's covered components for a request with or without a body; given the request's fields,
 * also each of PRESENT_COMPONENTS (such as `idempotency-key`) that it carries.
 *
 * @example defaultComponents(true, { 'idempotency-key': 'k-12345678' })
 */
export function defaultComponents(
  hasBody: boolean,
  headers: HttpMessage['headers'] = {},
): string[] {
  const base = hasBody ? [...REQUIRED_COMPONENTS, ...BODY_COMPONENTS] : [...REQUIRED_COMPONENTS]
  return [...base, ...PRESENT_COMPONENTS.filter((c) => headers[c] !== undefined)]
}

/** The parameters of a signature to create; `created` and `nonce` are the caller's to choose. */
export interface SignatureParameters {
  keyid: string
  /** Seconds since the epoch. */
  created: number
  expires?: number
  /** Left out when undefined. */
  nonce?: string | undefined
  /** Covered components; defaults to Baton's set for the message (`defaultComponents`). */
  components?: readonly string[]
  /** `ed25519` by default; null leaves the parameter out. */
  alg?: string | null
  /** `sig1` by default. */
  label?: string
}

/** The two fields a signature adds to a request, and the base that was signed. */
export interface SignedFields {
  signatureInput: string
  signature: string
  base: string
}

/**
 * Creates a signature over a message (RFC 9421 §3.1): builds the `@signature-params` inner list
 * and the signature base, signs the base's UTF-8 bytes with `sign`, and answers the
 * Signature-Input and Signature field values.
 *
 * @example const { signatureInput, signature } = createSignature(msg, { keyid, created, nonce }, (b) => sign(null, b, key))
 */
export function createSignature(
  message: HttpMessage,
  params: SignatureParameters,
  sign: SignBytes,
): SignedFields {
  const label = params.label ?? SIGNATURE_LABEL
  const components =
    params.components ??
    defaultComponents(message.headers['content-digest'] !== undefined, message.headers)
  const list: SfParams = [['created', params.created]]
  if (params.expires !== undefined) list.push(['expires', params.expires])
  if (params.nonce !== undefined) list.push(['nonce', params.nonce])
  list.push(['keyid', params.keyid])
  const alg = params.alg === undefined ? SIGNATURE_ALGORITHM : params.alg
  if (alg !== null) list.push(['alg', alg])
  const input: SfInnerList = {
    items: components.map((c) => ({ value: c, params: [] })),
    params: list,
  }
  const base = signatureBase(message, input)
  const signature = sign(new TextEncoder().encode(base))
  return {
    signatureInput: serializeDictionary([[label, input]]),
    signature: serializeDictionary([[label, { value: signature, params: [] }]]),
    base,
  }
}

/** One signature read from a request's Signature-Input and Signature fields (RFC 9421 §4). */
export interface ParsedSignature {
  label: string
  /** The covered components and parameters, as `signatureBase` takes them. */
  input: SfInnerList
  signature: Uint8Array
  /** Seconds since the epoch. */
  created: number
  keyid: string
  nonce: string | undefined
  alg: string | undefined
  expires: number | undefined
}

const malformed = (message: string, reason: string) =>
  new BatonError('signature_malformed', message, { reason })

function parseField(field: string, value: string) {
  try {
    return parseDictionary(value)
  } catch (error) {
    if (error instanceof StructuredFieldError) {
      throw malformed(`${field} is not a valid structured field: ${error.message}`, 'syntax')
    }
    throw error
  }
}

const isInnerList = (m: SfItem | SfInnerList): m is SfInnerList => 'items' in m

/**
 * Reads the signature Baton verifies from Signature-Input and Signature field values: the one
 * labelled `sig1`, or else the only one. Checks syntax and parameter types, never policy or
 * keys; throws `signature_malformed` with a `reason`.
 */
export function parseSignatureFields(signatureInput: string, signature: string): ParsedSignature {
  const inputs = parseField('Signature-Input', signatureInput)
  const signatures = parseField('Signature', signature)
  const chosen =
    inputs.find(([k]) => k === SIGNATURE_LABEL) ?? (inputs.length === 1 ? inputs[0] : undefined)
  if (!chosen) throw malformed('Send exactly one signature, labelled sig1', 'label')
  const [label, input] = chosen
  if (!isInnerList(input)) throw malformed('Signature-Input must hold an inner list', 'syntax')
  const sigMember = signatures.find(([k]) => k === label)?.[1]
  if (!sigMember || isInnerList(sigMember) || !(sigMember.value instanceof Uint8Array)) {
    throw malformed(`Signature has no byte sequence labelled ${label}`, 'label')
  }
  const sig = sigMember.value
  // RFC 8032 §5.1.6: an Ed25519 signature is 64 bytes.
  if (sig.length !== 64) throw malformed('An Ed25519 signature is 64 bytes', 'signature_length')

  const params = new Map(input.params)
  const created = params.get('created')
  const keyid = params.get('keyid')
  const nonce = params.get('nonce')
  const alg = params.get('alg')
  const expires = params.get('expires')
  if (typeof created !== 'number') {
    throw malformed('The created parameter must be an integer', 'created')
  }
  if (typeof keyid !== 'string') throw malformed('The keyid parameter must be a string', 'keyid')
  if (nonce !== undefined && (typeof nonce !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(nonce))) {
    throw malformed('The nonce parameter must be 1 to 128 printable characters', 'nonce')
  }
  // RFC 9421 §3.2: an alg parameter must agree with the key's algorithm, Ed25519 for Baton.
  if (alg !== undefined && alg !== SIGNATURE_ALGORITHM) {
    throw malformed('Only alg="ed25519" is accepted', 'alg')
  }
  if (expires !== undefined && typeof expires !== 'number') {
    throw malformed('The expires parameter must be an integer', 'expires')
  }
  return {
    label,
    input,
    signature: sig,
    created,
    keyid,
    nonce,
    alg: alg as string | undefined,
    expires,
  }
}
