// HTTP Message Signatures (RFC 9421) for Ed25519: the signature base, the covered components
// Baton uses, and creating and reading the Signature-Input and Signature fields. The signing
// and verifying step itself takes the caller's key operation (see platform.ts).

import {
  BODY_COMPONENTS,
  PRESENT_COMPONENTS,
  REQUIRED_COMPONENTS,
  SIGNATURE_AGENT_FIELD,
  SIGNATURE_ALGORITHM,
  SIGNATURE_DIRECTORY_TAG,
  SIGNATURE_LABEL,
  WEB_BOT_AUTH_COMPONENTS,
  WEB_BOT_AUTH_TAG,
} from './constants.js'
import { BatonError } from './errors.js'
import type { SignBytes } from './platform.js'
import {
  parseDictionary,
  type SfInnerList,
  type SfItem,
  type SfParams,
  StructuredFieldError,
  serializeDictionary,
  serializeInnerList,
  serializeItem,
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

const absent = (name: string, what: string) =>
  new BatonError('signature_invalid', `The covered field ${name} ${what}`, {
    reason: 'covered_field_absent',
    component: name,
  })

function fieldValue(message: HttpMessage, name: string, key?: string): string {
  const raw = message.headers[name]
  if (raw === undefined) throw absent(name, 'is absent')
  // RFC 9421 §2.1: each field line's value trimmed, lines joined with ", ".
  const value = Array.isArray(raw) ? raw.map((v) => v.trim()).join(', ') : raw.trim()
  if (key === undefined) return value
  // RFC 9421 §2.1.2: one member of a dictionary field, serialized again.
  let member: SfItem | SfInnerList | undefined
  try {
    member = parseDictionary(value).find(([k]) => k === key)?.[1]
  } catch (error) {
    if (!(error instanceof StructuredFieldError)) throw error
  }
  if (member === undefined) throw absent(name, `has no member ${key}`)
  return 'items' in member ? serializeInnerList(member) : serializeItem(member)
}

/**
 * The `key` parameter of a covered field (RFC 9421 §2.1.2), the one component parameter Baton
 * reads; any other parameter, or one on a derived component, is not supported.
 */
function componentKey(item: SfItem): string | undefined {
  if (item.params.length === 0) return undefined
  const [only] = item.params
  if (
    item.params.length === 1 &&
    only![0] === 'key' &&
    typeof only![1] === 'string' &&
    typeof item.value === 'string' &&
    !item.value.startsWith('@')
  ) {
    return only![1]
  }
  throw new BatonError('signature_malformed', 'Covered components must be plain strings', {
    reason: 'component_unsupported',
  })
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
    if (typeof item.value !== 'string') {
      throw new BatonError('signature_malformed', 'Covered components must be plain strings', {
        reason: 'component_unsupported',
      })
    }
    const key = componentKey(item)
    const name = item.value
    const id = serializeItem(item)
    // RFC 9421 §2.5: a component may appear at most once, and names are lower case.
    if (seen.has(id) || name !== name.toLowerCase()) {
      throw new BatonError(
        'signature_malformed',
        `Component ${name} is repeated or not lower case`,
        {
          reason: 'component_invalid',
        },
      )
    }
    seen.add(id)
    let value: string
    if (name.startsWith('@')) {
      // The target URI is split once for all the derived components it covers.
      target ??= targetParts(message)
      value = derivedValue(message, target, name)
    } else {
      value = fieldValue(message, name, key)
    }
    if (/[\r\n]/.test(value)) {
      throw new BatonError('signature_malformed', `Component ${name} holds a line break`)
    }
    lines.push(`${id}: ${value}`)
  }
  lines.push(`"@signature-params": ${serializeInnerList(input)}`)
  return lines.join('\n')
}

/**
 * Baton's covered components for a request with or without a body; given the request's fields,
 * also each of PRESENT_COMPONENTS (such as `idempotency-key`) that it carries. Under the Web Bot
 * Auth profile, `@authority` too, and the whole `signature-agent` field when it is sent.
 *
 * @example defaultComponents(true, { 'idempotency-key': 'k-12345678' })
 */
export function defaultComponents(
  hasBody: boolean,
  headers: HttpMessage['headers'] = {},
  profile: SignatureProfile = 'baton',
): string[] {
  const out: string[] = [...REQUIRED_COMPONENTS]
  if (profile === 'web-bot-auth') {
    out.push(...WEB_BOT_AUTH_COMPONENTS)
    if (headers[SIGNATURE_AGENT_FIELD] !== undefined) out.push(SIGNATURE_AGENT_FIELD)
  }
  if (hasBody) out.push(...BODY_COMPONENTS)
  return [...out, ...PRESENT_COMPONENTS.filter((c) => headers[c] !== undefined)]
}

/** A covered component: a derived component or field by name, or one member of a dictionary field. */
export type ComponentId = string | { name: string; key: string }

/** The parameters of a signature to create; `created` and `nonce` are the caller's to choose. */
export interface SignatureParameters {
  keyid: string
  /** Seconds since the epoch. */
  created: number
  expires?: number
  /** Left out when undefined. */
  nonce?: string | undefined
  /**
   * Covered components; defaults to Baton's set for the message (`defaultComponents`). A member
   * of a dictionary field is `{ name, key }` (RFC 9421 §2.1.2).
   */
  components?: readonly ComponentId[]
  /** The application's `tag` (RFC 9421 §2.3), such as `web-bot-auth`; left out when undefined. */
  tag?: string
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
  if (params.tag !== undefined) list.push(['tag', params.tag])
  const input: SfInnerList = {
    items: components.map((c) =>
      typeof c === 'string'
        ? { value: c, params: [] }
        : { value: c.name, params: [['key', c.key]] },
    ),
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
  /** The application's tag (RFC 9421 §2.3), when the signature carries one. */
  tag: string | undefined
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
  const tag = params.get('tag')
  if (tag !== undefined && typeof tag !== 'string') {
    throw malformed('The tag parameter must be a string', 'tag')
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
    tag,
  }
}

/** The two signature profiles a hub verifies: Baton's own, and Web Bot Auth's. */
export type SignatureProfile = 'baton' | 'web-bot-auth'

/** What a request's signature must satisfy before its key is looked up: the hub's policy. */
export interface SignaturePolicy {
  /** The verifier's time, epoch milliseconds. */
  now: number
  skewMs: number
  /** Components every request covers. */
  components: readonly string[]
  /** Components a request with a body covers too. */
  bodyComponents: readonly string[]
  /** Fields covered whenever the request carries them (none when absent). */
  presentComponents?: readonly string[]
  requireNonce: boolean
}

/** A signature that passed every check but its key and the signature itself. */
export interface CheckedSignature extends ParsedSignature {
  profile: SignatureProfile
}

const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/

/**
 * Judges a request's signature fields against a policy, in the order a Baton hub does, up to
 * (not including) the key: present (`signature_missing`), well-formed, of a known profile, with
 * a nonce, covering every required component (`signature_malformed` with its `reason`), and
 * fresh (`signature_stale`). A `tag="web-bot-auth"` signature must also carry `expires`, name a
 * JWK thumbprint as keyid, and cover `@authority` and any `Signature-Agent` it sends (whole, or
 * its member for the signature's label). `declaresBody` says whether the request announces a
 * body, which then must be covered through Content-Digest.
 */
export function checkSignatureHeaders(
  message: HttpMessage,
  declaresBody: boolean,
  policy: SignaturePolicy,
): CheckedSignature {
  const header = (name: string) => {
    const v = message.headers[name]
    return Array.isArray(v) ? v.join(', ') : v
  }
  const inputValue = header('signature-input')
  const signatureValue = header('signature')
  if (inputValue === undefined || signatureValue === undefined) {
    throw new BatonError(
      'signature_missing',
      'The request is not signed (no Signature-Input or Signature)',
    )
  }
  const parsed = parseSignatureFields(inputValue, signatureValue)
  const { label, input: list, created, keyid, nonce, expires, tag } = parsed
  if (tag !== undefined && tag !== WEB_BOT_AUTH_TAG) {
    throw malformed(`The tag parameter, when sent, must be "${WEB_BOT_AUTH_TAG}"`, 'tag')
  }
  const profile: SignatureProfile = tag === WEB_BOT_AUTH_TAG ? 'web-bot-auth' : 'baton'
  if (policy.requireNonce && nonce === undefined) {
    throw malformed('The nonce parameter is required', 'nonce')
  }
  if (profile === 'web-bot-auth') {
    // draft-ietf-webbotauth-httpsig-protocol: created and expires, keyid a JWK thumbprint.
    if (expires === undefined)
      throw malformed('A web-bot-auth signature carries expires', 'expires')
    if (!THUMBPRINT.test(keyid)) {
      throw malformed('A web-bot-auth keyid is a JWK thumbprint (RFC 7638)', 'keyid')
    }
  }

  const covered = new Set(list.items.filter((i) => i.params.length === 0).map((i) => i.value))
  const hasBody = declaresBody || message.headers['content-digest'] !== undefined
  const required = [
    ...policy.components,
    ...(profile === 'web-bot-auth' ? WEB_BOT_AUTH_COMPONENTS : []),
    ...(hasBody ? policy.bodyComponents : []),
    ...(policy.presentComponents ?? []).filter((c) => message.headers[c] !== undefined),
  ]
  const missing = required.filter((c) => !covered.has(c))
  if (profile === 'web-bot-auth' && message.headers[SIGNATURE_AGENT_FIELD] !== undefined) {
    // The agent's Signature-Agent, whole (its older form) or its member for this label.
    const keyed = list.items.some(
      (i) =>
        i.value === SIGNATURE_AGENT_FIELD &&
        i.params.length === 1 &&
        i.params[0]![0] === 'key' &&
        i.params[0]![1] === label,
    )
    if (!keyed && !covered.has(SIGNATURE_AGENT_FIELD)) missing.push(SIGNATURE_AGENT_FIELD)
  }
  if (missing.length > 0) {
    throw new BatonError('signature_malformed', `The signature must cover ${missing.join(', ')}`, {
      reason: 'components',
      missing,
    })
  }

  // RFC 9421 §3.2.1: the verifier decides how old a signature may be; here, the skew window.
  const createdMs = created * 1000
  if (
    Math.abs(policy.now - createdMs) > policy.skewMs ||
    (expires !== undefined && expires * 1000 < policy.now)
  ) {
    throw new BatonError(
      'signature_stale',
      'The signature was not created within the skew window',
      {
        created,
        now: Math.floor(policy.now / 1000),
        skew_seconds: policy.skewMs / 1000,
      },
    )
  }
  return { ...parsed, profile }
}

/**
 * The signature a key directory answer carries for one of its keys (the HTTP Message Signatures
 * directory draft): over the request's `@authority` (`;req`), tagged
 * `http-message-signatures-directory`, with `created`, `expires` and the key's thumbprint as
 * keyid, under the label `binding<index>`.
 */
export function signDirectoryResponse(
  authority: string,
  params: { keyid: string; created: number; expires: number; index?: number },
  sign: SignBytes,
): SignedFields {
  const label = `binding${params.index ?? 0}`
  const input: SfInnerList = {
    items: [{ value: '@authority', params: [['req', true]] }],
    params: [
      ['created', params.created],
      ['keyid', params.keyid],
      ['alg', SIGNATURE_ALGORITHM],
      ['expires', params.expires],
      ['tag', SIGNATURE_DIRECTORY_TAG],
    ],
  }
  // RFC 9421 §2.2.3 and §2.4: the authority of the request the directory answers.
  const base = `"@authority";req: ${authority.toLowerCase()}\n"@signature-params": ${serializeInnerList(input)}`
  const signature = sign(new TextEncoder().encode(base))
  return {
    signatureInput: serializeDictionary([[label, input]]),
    signature: serializeDictionary([[label, { value: signature, params: [] }]]),
    base,
  }
}
