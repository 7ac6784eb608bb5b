import type { DiscoveryDocument, SignatureProfile } from '@baton/protocol'
import { parseWholeNumber } from '@baton/protocol/primitives'
import { resolveApiUrl } from './discovery.js'
import type { Identity } from './identity-file.js'
import { signRequest } from './signing.js'
import { type FetchLike, type RawAnswer, sendRequest } from './transport.js'

/** Options of a signed client. */
export interface SignedClientOptions {
  /** Seconds since the epoch for `created`; tests pass a fixed clock. */
  now?: () => number
  /** The longest Retry-After (ms) the client waits once on a 429 before answering it (default 5000). */
  maxRetryWaitMs?: number
  /** How a Retry-After is waited out (default a timer); tests pass one that moves their clock. */
  sleep?: (ms: number) => Promise<void>
  /**
   * Signs under Baton's profile (keyid the did:key, the default) or Web Bot Auth's (keyid the
   * JWK thumbprint, `tag`, `expires`, `@authority`); the key must be enrolled for the latter.
   */
  profile?: SignatureProfile
  /** Under the Web Bot Auth profile: the URL of the agent's key directory, sent as Signature-Agent. */
  signatureAgent?: string
  /** Sends through this `fetch` instead of the SDK's keep-alive connections. */
  fetch?: FetchLike
}

/** Per-request options: `onUploadProgress` streams the body in chunks and reports bytes sent. */
export interface RequestOptions {
  onUploadProgress?: (sent: number, total: number) => void
  /** Aborts the request (and a retry after a 429) when signalled. */
  signal?: AbortSignal
}

/** The body of a signed call: bytes sent as they are, a string as UTF-8, anything else as JSON. */
export type SignedBody = Uint8Array | string | object | undefined

/** Who signs a request and for which hub: what {@link sendSigned} needs of a client. */
export interface Signer {
  readonly discovery: DiscoveryDocument
  readonly identity: Identity
  readonly options: SignedClientOptions
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

function toBytes(body: SignedBody): Uint8Array | undefined {
  if (body === undefined) return undefined
  if (body instanceof Uint8Array) return body
  if (typeof body === 'string') return Buffer.from(body, 'utf8')
  return Buffer.from(JSON.stringify(body), 'utf8')
}

function sendOnce<T>(
  signer: Signer,
  method: string,
  path: string,
  body: SignedBody,
  headers: Record<string, string>,
  options: RequestOptions,
): Promise<RawAnswer<T>> {
  const { identity, options: opts } = signer
  const signed = signRequest({
    method: method.toUpperCase(),
    url: resolveApiUrl(signer.discovery, path),
    body: toBytes(body),
    headers: { accept: 'application/json', ...headers },
    privateKey: identity.privateKey,
    keyid: identity.principal,
    ...(opts.now ? { created: opts.now() } : {}),
    ...(opts.profile ? { profile: opts.profile } : {}),
    ...(opts.signatureAgent ? { signatureAgent: opts.signatureAgent } : {}),
  })
  // The signature covers the digest of the whole body, so streaming it changes nothing signed.
  return sendRequest<T>(
    {
      url: signed.url,
      method: signed.method,
      headers: signed.headers,
      body: signed.body,
      signal: options.signal,
      onUploadProgress: options.onUploadProgress,
    },
    opts.fetch,
  )
}

/**
 * Sends one request signed afresh (RFC 9421) as the signer's identity and answers status, headers
 * and parsed body whatever the status. A 429 whose Retry-After is at most `maxRetryWaitMs` is
 * retried once, signed afresh. What `SignedClient.request` does, for a program that has no need
 * of the typed calls (and so of their schemas).
 *
 * @example const me = await sendSigned({ discovery, identity, options: {} }, 'GET', '/v1/me')
 */
export async function sendSigned<T = unknown>(
  signer: Signer,
  method: string,
  path: string,
  body?: SignedBody,
  headers: Record<string, string> = {},
  options: RequestOptions = {},
): Promise<RawAnswer<T>> {
  const first = await sendOnce<T>(signer, method, path, body, headers, options)
  if (first.status !== 429) return first
  // A 429 that says no wait (or one that is no whole number of seconds) is answered as it is.
  const seconds = parseWholeNumber(first.headers.get('retry-after'))
  const waitMs = seconds === undefined ? Number.POSITIVE_INFINITY : seconds * 1000
  if (waitMs > (signer.options.maxRetryWaitMs ?? 5000)) return first
  await (signer.options.sleep ?? sleep)(waitMs)
  return sendOnce<T>(signer, method, path, body, headers, options)
}
