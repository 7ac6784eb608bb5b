// How the SDK sends a request: node:http(s) over keep-alive connections by default, or a `fetch`
// the caller hands it. A fetch costs web streams, an AbortSignal and a MessageChannel per request
// (17% of a client's profile in one measurement); node:http costs a socket write and a parse.
import http, { type ClientRequest, type IncomingMessage } from 'node:http'

/** A `fetch` with the signature of the global one. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/** A raw answer: status, headers and the parsed JSON body. */
export interface RawAnswer<T = unknown> {
  status: number
  headers: Headers
  body: T
}

/** One request as the SDK sends it: the body already bytes, the headers already final. */
export interface OutgoingRequest {
  url: string
  method: string
  headers: Record<string, string>
  body?: Uint8Array | undefined
  signal?: AbortSignal | undefined
  /** Sends the body in chunks and reports the bytes handed to the connection after each. */
  onUploadProgress?: ((sent: number, total: number) => void) | undefined
}

const UPLOAD_CHUNK = 256 * 1024

/**
 * One keep-alive pool per scheme, shared by every client in the process as fetch's global
 * dispatcher is. At most 256 connections to one origin (long polls each hold one while they
 * wait; beyond that a request waits for a free connection rather than opening more); idle ones
 * are closed after 15 s, or a second before the server's `Keep-Alive: timeout` says it will,
 * and never keep the process alive.
 */
const POOL = {
  keepAlive: true,
  maxSockets: 256,
  maxFreeSockets: 32,
  timeout: 15_000,
  scheduling: 'lifo',
} as const

let httpAgent: http.Agent | undefined
let https: Promise<{ request: typeof http.request; agent: http.Agent }> | undefined

function transportOf(
  protocol: string,
): Promise<{ request: typeof http.request; agent: http.Agent }> {
  if (protocol === 'http:') {
    httpAgent ??= new http.Agent(POOL)
    return Promise.resolve({ request: http.request, agent: httpAgent })
  }
  if (protocol === 'https:') {
    // TLS is loaded only by a process that reaches an https hub.
    https ??= import('node:https').then((m) => ({ request: m.request, agent: new m.Agent(POOL) }))
    return https
  }
  return Promise.reject(new TypeError(`unknown scheme ${protocol}`))
}

/**
 * A node:http answer's fields as a `Headers`: names in any case, a repeated field joined by
 * `, `, `null` for one not sent, iterated in name order. Made without the global `Headers`, whose
 * first use loads fetch's whole implementation.
 */
class AnswerHeaders implements Headers {
  private readonly fields = new Map<string, string[]>()

  constructor(raw: IncomingMessage['headers']) {
    for (const [name, value] of Object.entries(raw)) {
      if (value !== undefined) this.fields.set(name, Array.isArray(value) ? value : [value])
    }
  }

  get(name: string): string | null {
    return this.fields.get(name.toLowerCase())?.join(', ') ?? null
  }

  getSetCookie(): string[] {
    return [...(this.fields.get('set-cookie') ?? [])]
  }

  has(name: string): boolean {
    return this.fields.has(name.toLowerCase())
  }

  set(name: string, value: string): void {
    this.fields.set(name.toLowerCase(), [value])
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase()
    this.fields.set(key, [...(this.fields.get(key) ?? []), value])
  }

  delete(name: string): void {
    this.fields.delete(name.toLowerCase())
  }

  forEach(
    callback: (value: string, name: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this)
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of [...this.fields.keys()].sort()) {
      if (name === 'set-cookie') for (const cookie of this.getSetCookie()) yield [name, cookie]
      else yield [name, this.get(name)!]
    }
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries()
  }
}

/** An answer's text as JSON: nothing for an empty body, and text that is no JSON as `internal`. */
function parseAnswer(text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return { error: text, code: 'internal' }
  }
}

// RFC 9110 §9.2.2: a request may be sent again automatically when its method is idempotent.
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'])

const REDIRECTS = new Set([301, 302, 303, 307, 308])

// Request fields that describe a body, dropped with it when a redirect turns a request into a GET.
const BODY_FIELDS = ['content-type', 'content-encoding', 'content-language', 'content-location']

/**
 * The request a redirect asks for, as fetch follows one (WHATWG Fetch, HTTP-redirect fetch): a
 * 303, or a 301 or 302 of a POST, is a GET without the body; another origin is not sent the
 * `Authorization` header.
 */
function redirected(
  request: OutgoingRequest,
  from: URL,
  to: URL,
  answer: TextAnswer,
): OutgoingRequest {
  const method = request.method.toUpperCase()
  const toGet =
    (answer.status === 303 && method !== 'GET' && method !== 'HEAD') ||
    ((answer.status === 301 || answer.status === 302) && method === 'POST')
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    const key = name.toLowerCase()
    if (toGet && BODY_FIELDS.includes(key)) continue
    if (key === 'authorization' && to.origin !== from.origin) continue
    headers[name] = value
  }
  return {
    ...request,
    url: to.href,
    method: toGet ? 'GET' : request.method,
    headers,
    body: toGet ? undefined : request.body,
  }
}

/**
 * A failure to reach the hub or to read its answer, as `fetch` reports one (a TypeError
 * `fetch failed` whose cause is the socket's error), so code written for the SDK's fetch keeps
 * handling it.
 */
const failed = (cause: unknown) => new TypeError('fetch failed', { cause })

/** The abort's reason, as fetch rejects with it. */
const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException('This operation was aborted', 'AbortError')

function writeBody(req: ClientRequest, request: OutgoingRequest): void {
  const { body, onUploadProgress: report } = request
  if (!body || !report) {
    req.end(body)
    return
  }
  let offset = 0
  const next = () => {
    while (offset < body.length) {
      const end = Math.min(body.length, offset + UPLOAD_CHUNK)
      const flushed = req.write(body.subarray(offset, end), (error) => {
        if (!error) report(end, body.length)
      })
      offset = end
      if (!flushed) {
        req.once('drain', next)
        return
      }
    }
    req.end()
  }
  next()
}

/** An answer before its body is read as JSON. */
export interface TextAnswer {
  status: number
  headers: Headers
  text: string
}

/** One attempt over node:http; `retry` says whether a reused connection's reset may be retried. */
function attempt(
  request: OutgoingRequest,
  target: URL,
  via: { request: typeof http.request; agent: http.Agent },
  retry: boolean,
): Promise<TextAnswer> {
  return new Promise((resolve, reject) => {
    const { signal } = request
    let settled = false
    const settle = (outcome: () => void) => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', onAbort)
      outcome()
    }
    const headers: Record<string, string | number> = { ...request.headers }
    if (request.body) headers['content-length'] = request.body.length
    const req = via.request({
      protocol: target.protocol,
      hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: request.method,
      headers,
      agent: via.agent,
    })
    function onAbort() {
      settle(() => reject(abortReason(signal!)))
      req.destroy()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    req.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed as this request went out: nothing was
      // answered, so an idempotent request is sent once more on a fresh connection.
      const stale = req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE')
      if (stale && retry && !settled) {
        settled = true
        signal?.removeEventListener('abort', onAbort)
        attempt(request, target, via, false).then(resolve, reject)
        return
      }
      settle(() => reject(failed(error)))
    })
    req.once('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', (error) => settle(() => reject(failed(error))))
      res.once('close', () => {
        if (!res.complete) settle(() => reject(failed(new Error('terminated'))))
      })
      res.once('end', () => {
        // As fetch's `text()`: UTF-8, a byte order mark dropped.
        const text = Buffer.concat(chunks)
          .toString('utf8')
          .replace(/^\uFEFF/, '')
        settle(() =>
          resolve({ status: res.statusCode ?? 0, headers: new AnswerHeaders(res.headers), text }),
        )
      })
    })
    writeBody(req, request)
  })
}

async function exchangeWithFetch(request: OutgoingRequest, fetch: FetchLike): Promise<TextAnswer> {
  const { body, onUploadProgress: report } = request
  let payload: Uint8Array | ReadableStream<Uint8Array> | undefined = body
  if (body && report) {
    let offset = 0
    payload = new ReadableStream({
      pull(controller) {
        if (offset >= body.length) {
          controller.close()
          return
        }
        const end = Math.min(body.length, offset + UPLOAD_CHUNK)
        controller.enqueue(body.subarray(offset, end))
        offset = end
        report(offset, body.length)
      },
    })
  }
  const res = await fetch(request.url, {
    method: request.method,
    headers: request.headers,
    ...(payload ? { body: payload as NonNullable<RequestInit['body']> } : {}),
    ...(payload instanceof ReadableStream ? { duplex: 'half' } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
  } as RequestInit)
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/**
 * Sends one request and answers its status, headers and body text: through `fetch` when one is
 * given, else over the SDK's keep-alive connections, following redirects as fetch does. Aborting rejects with the signal's reason; a
 * failure to reach the hub rejects with a TypeError `fetch failed` whose cause says why.
 */
export async function exchange(request: OutgoingRequest, fetch?: FetchLike): Promise<TextAnswer> {
  if (fetch) return exchangeWithFetch(request, fetch)
  if (request.signal?.aborted) throw abortReason(request.signal)
  const target = new URL(request.url)
  let via: Awaited<ReturnType<typeof transportOf>>
  try {
    via = await transportOf(target.protocol)
  } catch (error) {
    throw failed(error)
  }
  let answer = await attempt(request, target, via, IDEMPOTENT.has(request.method.toUpperCase()))
  for (let hops = 0; ; hops++) {
    const location = REDIRECTS.has(answer.status) ? answer.headers.get('location') : null
    if (location === null) return answer
    if (hops === 20) throw failed(new Error('redirect count exceeded'))
    const next = redirected(request, new URL(request.url), new URL(location, request.url), answer)
    request = next
    const nextTarget = new URL(next.url)
    try {
      via = await transportOf(nextTarget.protocol)
    } catch (error) {
      throw failed(error)
    }
    answer = await attempt(next, nextTarget, via, IDEMPOTENT.has(next.method.toUpperCase()))
  }
}

/**
 * Sends one request as {@link exchange} does and answers its status, headers and JSON body,
 * whatever the status (a body that is no JSON as an `internal` error body).
 *
 * @example const answer = await sendRequest({ url: 'http://127.0.0.1:8080/healthz', method: 'GET', headers: {} })
 */
export async function sendRequest<T = unknown>(
  request: OutgoingRequest,
  fetch?: FetchLike,
): Promise<RawAnswer<T>> {
  const { status, headers, text } = await exchange(request, fetch)
  return { status, headers, body: parseAnswer(text) as T }
}
