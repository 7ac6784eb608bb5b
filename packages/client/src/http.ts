import { BatonError } from '@baton/protocol/primitives'
import { type FetchLike, type RawAnswer, sendRequest } from './transport.js'

export type { RawAnswer } from './transport.js'

/** Options every SDK call accepts. */
export interface CallOptions {
  /** Extra headers, e.g. `Idempotency-Key`. */
  headers?: Record<string, string>
  signal?: AbortSignal
  /** Sends through this `fetch` instead of the SDK's keep-alive connections. */
  fetch?: FetchLike | undefined
}

/**
 * Sends one JSON request and answers the raw result, whatever its status.
 *
 * @example const { status, body } = await requestJson('https://hub.example', 'GET', '/healthz')
 */
export function requestJson<T = unknown>(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<RawAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers }
  let payload: Uint8Array | undefined
  if (body !== undefined) {
    payload = Buffer.from(JSON.stringify(body), 'utf8')
    headers['content-type'] = 'application/json'
  }
  return sendRequest<T>(
    {
      url: new URL(path, baseUrl).href,
      method,
      headers,
      body: payload,
      signal: options.signal,
    },
    options.fetch,
  )
}

/** Sends a request and answers its body, or throws the hub's error as a BatonError. */
export async function callJson<T>(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  options?: CallOptions,
): Promise<T> {
  const answer = await requestJson<T>(baseUrl, method, path, body, options)
  if (answer.status >= 400) throw BatonError.fromBody(answer.body, answer.status)
  return answer.body
}
