import { BatonError } from '@baton/protocol'

/** Options every SDK call accepts. */
export interface CallOptions {
  /** Extra headers, e.g. `Idempotency-Key`. */
  headers?: Record<string, string>
  signal?: AbortSignal
}

/** A raw answer: status, headers and the parsed JSON body. */
export interface RawAnswer<T = unknown> {
  status: number
  headers: Headers
  body: T
}

/**
 * Sends one JSON request and answers the raw result, whatever its status.
 *
 * @example const { status, body } = await requestJson('https://hub.example', 'GET', '/healthz')
 */
export async function requestJson<T = unknown>(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<RawAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers }
  let payload: string | undefined
  if (body !== undefined) {
    payload = JSON.stringify(body)
    headers['content-type'] = 'application/json'
  }
  const res = await fetch(new URL(path, baseUrl), {
    method,
    headers,
    ...(payload !== undefined ? { body: payload } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  })
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = { error: text, code: 'internal' }
  }
  return { status: res.status, headers: res.headers, body: parsed as T }
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
