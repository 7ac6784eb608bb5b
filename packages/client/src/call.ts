import {
  type Auth,
  BatonError,
  type Contract,
  type ContractInput,
  type ContractOutput,
  contractPath,
} from '@baton/protocol'
import type { RawAnswer } from './http.js'

/** What a contract call may add to its input: the credential its auth takes, and headers. */
export interface ContractCallOptions {
  /** A token handoff's owner or receiver token, for contracts whose auth is `handoff-token`. */
  token?: string
  /** The operator's secret, for contracts whose auth is `operator`. */
  adminToken?: string
  /** Makes a call whose contract takes one safe to repeat (the `Idempotency-Key` header). */
  idempotencyKey?: string
  /** W3C Trace Context to continue: the hub records it with the work and hands it on. */
  traceparent?: string
  tracestate?: string
  /** Extra headers. */
  headers?: Record<string, string>
  signal?: AbortSignal
  /** Streams a signed body in chunks and reports the bytes sent. */
  onUploadProgress?: (sent: number, total: number) => void
}

/** How a client sends one request of a contract call: signed as its identity, or not. */
export type SendRequest = (request: {
  method: string
  path: string
  body: unknown
  headers: Record<string, string>
  signed: boolean
  options: ContractCallOptions
}) => Promise<RawAnswer<unknown>>

/** What each kind of auth asks of a client: a signature, or a bearer token it names. */
const AUTH: {
  readonly [K in Auth]: (o: ContractCallOptions) => { signed: boolean; bearer?: string }
} = {
  none: () => ({ signed: false }),
  'handoff-token': (o) => ({ signed: false, ...(o.token ? { bearer: o.token } : {}) }),
  signature: () => ({ signed: true }),
  operator: (o) => ({ signed: false, ...(o.adminToken ? { bearer: o.adminToken } : {}) }),
}

/** The arguments of a call of `C`: its input (optional when it needs none) and options. */
export type CallArgs<C> =
  // biome-ignore lint/complexity/noBannedTypes: an input of no required member is optional
  {} extends ContractInput<C>
    ? [input?: ContractInput<C>, options?: ContractCallOptions]
    : [input: ContractInput<C>, options?: ContractCallOptions]

/**
 * Sends one call of a contract and answers the raw result, whatever its status: the request is
 * made from the contract (method, path with its parameters, query, body, the credential its auth
 * takes), never written by hand.
 */
export function requestContract<C extends Contract>(
  send: SendRequest,
  contract: C,
  input: ContractInput<C> | undefined,
  options: ContractCallOptions = {},
): Promise<RawAnswer<unknown>> {
  const given = (input ?? {}) as { params?: unknown; query?: unknown; body?: unknown }
  const how = AUTH[contract.auth](options)
  const headers: Record<string, string> = { ...options.headers }
  if (how.bearer) headers.authorization = `Bearer ${how.bearer}`
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey
  if (options.traceparent) headers.traceparent = options.traceparent
  if (options.tracestate) headers.tracestate = options.tracestate
  return send({
    method: contract.method,
    path: contractPath(contract, given),
    body: given.body,
    headers,
    signed: how.signed,
    options,
  })
}

/** Sends one call of a contract and answers its output, or throws the hub's error as a BatonError. */
export async function callContract<C extends Contract>(
  send: SendRequest,
  contract: C,
  input: ContractInput<C> | undefined,
  options: ContractCallOptions = {},
): Promise<ContractOutput<C>> {
  const answer = await requestContract(send, contract, input, options)
  if (answer.status >= 400) throw BatonError.fromBody(answer.body, answer.status)
  return answer.body as ContractOutput<C>
}
