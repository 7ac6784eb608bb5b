import { createHash, createPublicKey, type KeyObject, randomBytes } from 'node:crypto'
import {
  type ComponentId,
  createSignature,
  defaultComponents,
  type HttpMessage,
  SIGNATURE_AGENT_FIELD,
  SIGNATURE_LABEL,
  type SignatureProfile,
  type SignedFields,
  thumbprintInput,
  WEB_BOT_AUTH_TAG,
} from '@baton/protocol/primitives'
import { contentDigest } from './content-digest.js'
import { ed25519Signer } from './node-crypto.js'

// The RFC 8941 and RFC 9421 primitives live in @baton/protocol; the SDK keeps exporting them.
export {
  componentValue,
  defaultComponents,
  type HttpMessage,
  parseDictionary,
  type SfBareItem,
  type SfDictionary,
  type SfInnerList,
  type SfItem,
  type SfParams,
  type SfToken,
  type SignedFields,
  StructuredFieldError,
  serializeInnerList,
  signatureBase,
} from '@baton/protocol/primitives'

/** What `signMessage` needs: the key, the keyid, and optionally every parameter. */
export interface SignOptions {
  privateKey: KeyObject
  keyid: string
  /** Covered components; defaults to Baton's set for the message. */
  components?: readonly ComponentId[]
  /** The application's `tag` parameter, such as `web-bot-auth`. */
  tag?: string
  /** Seconds since the epoch; defaults to now. */
  created?: number
  expires?: number
  /** A fresh random nonce by default; null leaves it out. */
  nonce?: string | null
  /** `ed25519` by default; null leaves the parameter out. */
  alg?: string | null
  label?: string
}

/**
 * The RFC 7638 JWK thumbprint of an Ed25519 key (RFC 8037 §A.3): a Web Bot Auth keyid.
 *
 * @example jwkThumbprint(identity.publicKey) // 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k'
 */
export function jwkThumbprint(key: KeyObject): string {
  const { x } = createPublicKey(key).export({ format: 'jwk' }) as { x: string }
  return createHash('sha256').update(thumbprintInput(x)).digest('base64url')
}

/** A fresh nonce: 16 random bytes, base64url. */
export function newNonce(): string {
  return randomBytes(16).toString('base64url')
}

/**
 * Signs a request with Ed25519 (RFC 9421 §3.1, §3.3.6) and answers the Signature-Input and
 * Signature field values.
 *
 * @example const { signatureInput, signature } = signMessage(msg, { privateKey, keyid: principal })
 */
export function signMessage(message: HttpMessage, opts: SignOptions): SignedFields {
  const nonce = opts.nonce === undefined ? newNonce() : opts.nonce
  return createSignature(
    message,
    {
      keyid: opts.keyid,
      created: opts.created ?? Math.floor(Date.now() / 1000),
      ...(opts.expires !== undefined ? { expires: opts.expires } : {}),
      ...(nonce !== null ? { nonce } : {}),
      ...(opts.components !== undefined ? { components: opts.components } : {}),
      ...(opts.alg !== undefined ? { alg: opts.alg } : {}),
      ...(opts.label !== undefined ? { label: opts.label } : {}),
      ...(opts.tag !== undefined ? { tag: opts.tag } : {}),
    },
    ed25519Signer(opts.privateKey),
  )
}

/** A request ready to send: method, URL, headers with signature fields, and the body bytes. */
export interface SignedRequest {
  method: string
  url: string
  headers: Record<string, string>
  body: Uint8Array | undefined
}

/** Seconds a Web Bot Auth signature stays valid after `created` unless told otherwise. */
export const WEB_BOT_AUTH_LIFETIME_S = 60

/**
 * Builds and signs a Baton request: adds Content-Type and Content-Digest (RFC 9530) when there is
 * a body, then Signature-Input and Signature over Baton's covered components (with
 * `idempotency-key` when the headers carry one, so it cannot be added or changed after signing).
 *
 * With `profile: 'web-bot-auth'` the same request is signed under the Web Bot Auth profile: the
 * keyid is the key's JWK thumbprint, `tag="web-bot-auth"`, `expires` follows `created`, and
 * `@authority` is covered, with the whole `Signature-Agent` field when `signatureAgent` names
 * the agent's key directory (sent as the dictionary `sig1="<url>"`). A hub accepts it once the key
 * is enrolled (by a request signed with the did:key).
 *
 * @example const req = signRequest({ method: 'GET', url: 'https://hub.example/v1/me', privateKey, keyid })
 */
export function signRequest(req: {
  method: string
  url: string
  body?: Uint8Array | undefined
  contentType?: string
  headers?: Record<string, string>
  privateKey: KeyObject
  keyid: string
  created?: number
  nonce?: string
  profile?: SignatureProfile
  /** Under the Web Bot Auth profile: the HTTPS URL of the agent's key directory. */
  signatureAgent?: string
  /** Under the Web Bot Auth profile: seconds from `created` to `expires`. */
  lifetimeS?: number
}): SignedRequest {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v
  const hasBody = req.body !== undefined && req.body.length > 0
  if (hasBody) {
    headers['content-type'] ??= req.contentType ?? 'application/json'
    headers['content-digest'] = contentDigest(req.body!)
  }
  const web = req.profile === 'web-bot-auth'
  if (web && req.signatureAgent !== undefined) {
    headers[SIGNATURE_AGENT_FIELD] = `${SIGNATURE_LABEL}=${JSON.stringify(req.signatureAgent)}`
  }
  const created = req.created ?? Math.floor(Date.now() / 1000)
  const signed = signMessage(
    { method: req.method, targetUri: req.url, headers },
    {
      privateKey: req.privateKey,
      keyid: web ? jwkThumbprint(req.privateKey) : req.keyid,
      components: defaultComponents(hasBody, headers, req.profile),
      created,
      ...(web
        ? { tag: WEB_BOT_AUTH_TAG, expires: created + (req.lifetimeS ?? WEB_BOT_AUTH_LIFETIME_S) }
        : {}),
      ...(req.nonce !== undefined ? { nonce: req.nonce } : {}),
    },
  )
  headers['signature-input'] = signed.signatureInput
  headers.signature = signed.signature
  return { method: req.method, url: req.url, headers, body: hasBody ? req.body : undefined }
}
