import {
  BatonError,
  type Contract,
  type ContractInput,
  type ContractOutput,
  contracts,
  type DiscoveryDocument,
  type MeView,
  type PrincipalView,
} from '@baton/protocol'
import { DISCOVERY_PATH } from '@baton/protocol/primitives'
import {
  type CallArgs,
  type ContractCallOptions,
  callContract,
  requestContract,
  type SendRequest,
} from './call.js'
import { fetchDiscovery, resolveApiUrl } from './discovery.js'
import { type RawAnswer, requestJson } from './http.js'
import { type Identity, loadIdentity } from './identity-file.js'
import {
  type RequestOptions,
  type SignedBody,
  type SignedClientOptions,
  type Signer,
  sendSigned,
} from './signed-request.js'

export type { RequestOptions, SignedBody, SignedClientOptions } from './signed-request.js'

/**
 * Calls any route of a Baton hub with a fresh RFC 9421 signature per request.
 *
 * @example
 * const client = await SignedClient.connect(discoveryUrl, await loadIdentity('agent.identity.json'))
 * const me = await client.call(contracts.me)
 */
export class SignedClient implements Signer {
  private constructor(
    readonly discovery: DiscoveryDocument,
    readonly identity: Identity,
    readonly options: SignedClientOptions,
  ) {}

  /** Reads discovery and answers a client for the identity. */
  static async connect(
    discoveryUrl: string,
    identity: Identity,
    opts: SignedClientOptions = {},
  ): Promise<SignedClient> {
    const discovery = await fetchDiscovery(discoveryUrl, opts.fetch ? { fetch: opts.fetch } : {})
    return new SignedClient(discovery, identity, opts)
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
  request<T = unknown>(
    method: string,
    path: string,
    body?: SignedBody,
    headers: Record<string, string> = {},
    options: RequestOptions = {},
  ): Promise<RawAnswer<T>> {
    return sendSigned<T>(this, method, path, body, headers, options)
  }

  /**
   * Reads the hub's discovery document afresh, past every cache: its live parts, such as
   * `runtimeAvailability`. The client goes on signing for the document it connected with.
   */
  refreshDiscovery(): Promise<DiscoveryDocument> {
    const url = new URL(DISCOVERY_PATH, resolveApiUrl(this.discovery, '/')).href
    return fetchDiscovery(url, { fresh: true, fetch: this.options.fetch })
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
      fetch: this.options.fetch,
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
}
