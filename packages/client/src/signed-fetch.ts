import type { Identity } from './identity-file.js'
import { signRequest } from './signing.js'
import type { FetchLike } from './transport.js'

export type { FetchLike } from './transport.js'

/** Options of {@link signedFetch}. */
export interface SignedFetchOptions {
  /** The fetch that sends the signed request (default: the global one). */
  fetch?: FetchLike
  /** The signature's `created` time in seconds (default: now), for tests with a clock. */
  now?: () => number
}

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {}
  new Headers(headers).forEach((value, key) => {
    out[key] = value
  })
  return out
}

async function bodyBytes(body: RequestInit['body']): Promise<Uint8Array | undefined> {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return new TextEncoder().encode(body)
  if (body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  // Anything else (a stream, form data, a blob) is read whole: the digest covers every byte.
  return new Uint8Array(await new Response(body).arrayBuffer())
}

/**
 * A `fetch` that signs every request as `identity` (RFC 9421 over method, target URI,
 * `Content-Digest` and `Idempotency-Key`, with a fresh nonce), so any HTTP client that takes a
 * fetch — the MCP SDK's Streamable HTTP transport among them — speaks to the hub as an agent.
 *
 * @example
 * const transport = new StreamableHTTPClientTransport(new URL('https://hub.example/mcp'), {
 *   fetch: signedFetch(identity),
 * })
 */
export function signedFetch(identity: Identity, options: SignedFetchOptions = {}): FetchLike {
  const send = options.fetch ?? ((input, init) => fetch(input, init))
  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined
    const url = request ? request.url : String(input)
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase()
    const headers = headerRecord(init.headers ?? request?.headers)
    const body = await bodyBytes(init.body ?? (request ? await request.arrayBuffer() : undefined))
    const signed = signRequest({
      method,
      url,
      body: body && body.length > 0 ? body : undefined,
      headers,
      privateKey: identity.privateKey,
      keyid: identity.principal,
      ...(options.now ? { created: options.now() } : {}),
    })
    const { body: _unsent, headers: _old, method: _m, ...rest } = init
    return send(signed.url, {
      ...rest,
      method,
      headers: signed.headers,
      ...(signed.body ? { body: signed.body as NonNullable<RequestInit['body']> } : {}),
    })
  }
}
