import {
  BatonError,
  type Contract,
  type ContractInput,
  type ContractOutput,
  contracts,
  type DiscoveryDocument,
  type MeView,
  type PrincipalView,
  parseWholeNumber,
  type SignatureProfile,
} from '@baton/protocol'
import {
  type CallArgs,
  type ContractCallOptions,
  callContract,
  requestContract,
  type SendRequest,
} from './call.js'
import { fetchDiscovery, resolveApiUrl } from './discovery.js'
import { type RawAnswer, requestJson } from './http.js'
import { type Identity, loadIdentity } from './identity.js'
import { signRequest } from './signing.js'

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
}

/** Per-request options: `onUploadProgress` streams the body in chunks and reports bytes sent. */
export interface RequestOptions {
  onUploadProgress?: (sent: number, total: number) => void
  /** Aborts the request (and a retry after a 429) when signalled. */
  signal?: AbortSignal
}

const UPLOAD_CHUNK = 256 * 1024

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** The body as a stream of chunks that reports how much of it has been handed to the socket. */
function progressStream(
  body: Uint8Array,
  report: (sent: number, total: number) => void,
): ReadableStream<Uint8Array> {
  let offset = 0
  return new ReadableStream({
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

/** The body of a signed call: bytes sent as they are, a string as UTF-8, anything else as JSON. */
export type SignedBody = Uint8Array | string | object | undefined

function toBytes(body: SignedBody): Uint8Array | undefined {
  if (body === undefined) return undefined
  if (body instanceof Uint8Array) return body
  if (typeof body === 'string') return Buffer.from(body, 'utf8')
  return Buffer.from(JSON.stringify(body), 'utf8')
}

/**
 * Calls any route of a Baton hub with a fresh RFC 9421 signature per request.
 *
 * @example
 * const client = await SignedClient.connect(discoveryUrl, await loadIdentity('agent.identity.json'))
 * const me = await client.call(contracts.me)
 */
export class SignedClient {
  private constructor(
    readonly discovery: DiscoveryDocument,
    readonly identity: Identity,
    private readonly opts: SignedClientOptions,
  ) {}

  /** Reads discovery and answers a client for the identity. */
  static async connect(
    discoveryUrl: string,
    identity: Identity,
    opts: SignedClientOptions = {},
  ): Promise<SignedClient> {
    return new SignedClient(await fetchDiscovery(discoveryUrl), identity, opts)
  }

  /** Like `connect`, loading the identity file first (refusing a file others can read). */
  static async fromFile(
    discoveryUrl: string,
    identityPath: string,
    opts: SignedClientOptions = {},
  ): Promise<SignedClient> {
    return SignedClient.connect(discoveryUrl, await loadIdentity(identityPath), opts)
  }

  /** The principal this client signs as. */
  get principal(): string {
    return this.identity.principal
  }

  /**
   * Sends one signed request and answers status, headers and parsed body whatever the status. A
   * 429 whose Retry-After is at most `maxRetryWaitMs` is retried once, signed afresh.
   */
  async request<T = unknown>(
    method: string,
    path: string,
    body?: SignedBody,
    headers: Record<string, string> = {},
    options: RequestOptions = {},
  ): Promise<RawAnswer<T>> {
    const first = await this.send<T>(method, path, body, headers, options)
    if (first.status !== 429) return first
    // A 429 that says no wait (or one that is no whole number of seconds) is answered as it is.
    const seconds = parseWholeNumber(first.headers.get('retry-after'))
    const waitMs = seconds === undefined ? Number.POSITIVE_INFINITY : seconds * 1000
    if (waitMs > (this.opts.maxRetryWaitMs ?? 5000)) return first
    await (this.opts.sleep ?? sleep)(waitMs)
    return this.send<T>(method, path, body, headers, options)
  }

  /**
   * Calls an operation by its contract (`contracts` of `@baton/protocol`) and answers its typed
   * output, or throws the hub's error as a BatonError; a contract whose auth is a signature is
   * signed as this identity, any other sent with the credential the options give.
   *
   * @example
   * const task = await client.call(contracts.createResource, {
   *   body: { namespace: 'tasks', kind: 'task/v1', data: { title: 'translate' } },
   * })
   */
  call<C extends Contract>(contract: C, ...args: CallArgs<C>): Promise<ContractOutput<C>>
  /** Sends a signed request to any path and answers its body, or throws the hub's error. */
  call<T>(method: string, path: string, body?: SignedBody, options?: RequestOptions): Promise<T>
  async call(what: Contract | string, ...args: unknown[]): Promise<unknown> {
    if (typeof what !== 'string') {
      const [input, options] = args as [ContractInput<Contract> | undefined, ContractCallOptions?]
      return callContract((request) => this.sendContract(request), what, input, options)
    }
    const [path, body, options] = args as [string, SignedBody, RequestOptions?]
    const answer = await this.request(what, path, body, {}, options ?? {})
    if (answer.status >= 400) throw BatonError.fromBody(answer.body, answer.status)
    return answer.body
  }

  /** Like {@link call} of a contract, answering status, headers and body whatever the status. */
  requestContract<C extends Contract>(
    contract: C,
    ...[input, options]: CallArgs<C>
  ): Promise<RawAnswer<unknown>> {
    return requestContract((request) => this.sendContract(request), contract, input, options)
  }

  /**
   * How a contract call is sent: signed as this identity (through `request`, so a client made
   * from this one with its own `request` sends them its way), or plain to the same hub.
   */
  private sendContract({
    method,
    path,
    body,
    headers,
    signed,
    options,
  }: Parameters<SendRequest>[0]): ReturnType<SendRequest> {
    if (signed) {
      return this.request(method, path, body as SignedBody, headers, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onUploadProgress ? { onUploadProgress: options.onUploadProgress } : {}),
      })
    }
    return requestJson(this.discovery.apiBase, method, path, body, {
      headers,
      ...(options.signal ? { signal: options.signal } : {}),
    })
  }

  /** `GET /v1/me`: the principal, its admission state, quotas and usage. */
  me(): Promise<MeView> {
    return this.call(contracts.me)
  }

  /**
   * `PUT /v1/me/label`: gives this agent a display label shown beside its did:key, replacing
   * any before it; a label names the agent for people and grants nothing.
   *
   * @example await client.setLabel('planner')
   */
  setLabel(label: string): Promise<PrincipalView> {
    return this.call(contracts.setMyLabel, { body: { label } })
  }

  private async send<T>(
    method: string,
    path: string,
    body: SignedBody,
    headers: Record<string, string>,
    options: RequestOptions,
  ): Promise<RawAnswer<T>> {
    const signed = signRequest({
      method: method.toUpperCase(),
      url: resolveApiUrl(this.discovery, path),
      body: toBytes(body),
      headers: { accept: 'application/json', ...headers },
      privateKey: this.identity.privateKey,
      keyid: this.identity.principal,
      ...(this.opts.now ? { created: this.opts.now() } : {}),
      ...(this.opts.profile ? { profile: this.opts.profile } : {}),
      ...(this.opts.signatureAgent ? { signatureAgent: this.opts.signatureAgent } : {}),
    })
    const report = options.onUploadProgress
    // The signature covers the digest of the whole body, so streaming it changes nothing signed.
    const payload = signed.body && report ? progressStream(signed.body, report) : signed.body
    const res = await fetch(signed.url, {
      method: signed.method,
      headers: signed.headers,
      ...(payload ? { body: payload } : {}),
      ...(payload instanceof ReadableStream ? { duplex: 'half' } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    } as RequestInit)
    const text = await res.text()
    let parsed: unknown
    try {
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      parsed = { error: text, code: 'internal' }
    }
    return { status: res.status, headers: res.headers, body: parsed as T }
  }
}
