import type { Contract, ContractOutput } from '@baton/protocol'
import {
  type CallArgs,
  type ContractCallOptions,
  callContract,
  requestContract,
  type SendRequest,
} from './call.js'
import { type RawAnswer, requestJson } from './http.js'
import type { SignedClient } from './signed-client.js'
import type { FetchLike } from './transport.js'

/** Options of a {@link BatonClient}: what it sends with every call unless a call says otherwise. */
export interface BatonClientOptions {
  /** Signs the calls whose contract's auth is a signature, as this client's identity. */
  signer?: SignedClient
  /** The operator's secret, for the contracts whose auth is `operator`. */
  adminToken?: string
  /** Sends unsigned calls through this `fetch` instead of the SDK's keep-alive connections. */
  fetch?: FetchLike
}

/**
 * Calls any operation of a Baton hub by its contract: one typed call for every operation the
 * hub serves, its request made from the contract (`contracts` of `@baton/protocol`).
 *
 * @example
 * const hub = new BatonClient('http://127.0.0.1:8080')
 * const created = await hub.call(contracts.createHandoff, { body: { payload: { task: 'x' } } })
 * await hub.call(contracts.readHandoff, { params: { handoff_id: created.handoff_id } }, {
 *   token: created.receiver_token,
 * })
 */
export class BatonClient {
  constructor(
    readonly hubUrl: string,
    private readonly defaults: BatonClientOptions = {},
  ) {}

  /** Calls an operation and answers its output, or throws the hub's error as a BatonError. */
  call<C extends Contract>(
    contract: C,
    ...[input, options]: CallArgs<C>
  ): Promise<ContractOutput<C>> {
    return callContract(this.send, contract, input, this.with(options))
  }

  /** Calls an operation and answers status, headers and body, whatever the status. */
  request<C extends Contract>(
    contract: C,
    ...[input, options]: CallArgs<C>
  ): Promise<RawAnswer<unknown>> {
    return requestContract(this.send, contract, input, this.with(options))
  }

  private with(options: ContractCallOptions = {}): ContractCallOptions {
    const adminToken = options.adminToken ?? this.defaults.adminToken
    return { ...options, ...(adminToken ? { adminToken } : {}) }
  }

  private readonly send: SendRequest = (request) => {
    if (request.signed) {
      const signer = this.defaults.signer
      if (!signer) {
        throw new TypeError('This operation is signed: give the BatonClient a signer')
      }
      return signer.request(request.method, request.path, request.body as object, request.headers, {
        ...(request.options.signal ? { signal: request.options.signal } : {}),
        ...(request.options.onUploadProgress
          ? { onUploadProgress: request.options.onUploadProgress }
          : {}),
      })
    }
    return requestJson(this.hubUrl, request.method, request.path, request.body, {
      headers: request.headers,
      fetch: this.defaults.fetch,
      ...(request.options.signal ? { signal: request.options.signal } : {}),
    })
  }
}
