import type { ServerResponse } from 'node:http'
import {
  type A2aSendMessageParams,
  A2aTaskRefParams,
  BatonError,
  type ErrorCode,
  wholeNumber,
} from '@baton/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import type { AppContext } from '../app.js'
import type { Api } from '../http/api.js'
import { errorHeaders } from '../http/challenge.js'
import { toBatonError } from '../http/errors.js'
import { localOrigin, requestOrigin, runAdmitted } from '../identity/http.js'
import { requireSigned } from '../ops/auth-kinds.js'
import { CloseSignal } from '../ops/http.js'
import { type Caller, inputSchemas, type Operation } from '../ops/operation.js'
import { handOnTrace } from '../telemetry/http.js'
import { parseInput } from '../validation.js'
import { A2A_RPC_METHODS, A2A_RPC_PATH, a2aSendMessage } from './operations.js'

/**
 * The A2A 1.0 JSON-RPC binding (issue 16): one signed endpoint, declared `auth: 'signature'` in
 * its route config, so the preParsing hook verifies each request as it does every signed
 * operation's. A method is one of the A2A
 * operations (run with the operation's own schemas) or one of the two streams, which write the
 * task's events as SSE with the generation as the event id. The adapter decides nothing.
 */

const Envelope = z.looseObject({
  jsonrpc: z.literal('2.0'),
  method: z.string().max(128),
  id: z.union([z.string().max(256), z.number(), z.null()]).optional(),
  params: z.record(z.string(), z.unknown()).optional(),
})

/** A2A 1.0 §5.4 error codes for the Baton codes that have one; others are server errors. */
const RPC_CODES: Partial<Record<ErrorCode, number>> = {
  a2a_task_not_found: -32001,
  a2a_push_config_not_found: -32001,
  a2a_task_not_cancelable: -32002,
  a2a_task_ended: -32004,
  a2a_generation_mismatch: -32010,
  a2a_version_not_supported: -32009,
  a2a_method_not_found: -32601,
  invalid_request: -32602,
  cursor_invalid: -32602,
  unknown_field: -32602,
  invalid_notify_url: -32602,
  a2a_push_auth_unsupported: -32602,
  recipient_unknown: -32602,
  internal: -32603,
}

/** JSON-RPC 2.0: the server-error range holds every other Baton refusal, its code in `data`. */
const SERVER_ERROR = -32000

type RpcId = string | number | null

/** JSON-RPC 2.0: a body that is JSON but not a request object. */
const INVALID_REQUEST = -32600
/** JSON-RPC 2.0: a body that is not JSON. */
const PARSE_ERROR = -32700

function rpcError(id: RpcId, error: BatonError, code?: number) {
  return {
    jsonrpc: '2.0' as const,
    id,
    error: {
      code: code ?? RPC_CODES[error.code] ?? SERVER_ERROR,
      message: error.message,
      data: { status: error.status, ...error.toBody() },
    },
  }
}

const none = z.object({}).strict()

/** A2A 1.0 §3.6: the protocol versions this endpoint serves, as Major.Minor. */
export const A2A_VERSIONS: readonly string[] = ['1.0']

/**
 * A2A 1.0 §3.6.2: a request is served under the version it names in `A2A-Version` (a header, or
 * a query parameter of that name, §3.6.1), matching Major.Minor (a patch number is not
 * considered); an absent or empty value is 0.3. A version not served is VersionNotSupportedError.
 */
function assertVersion(req: FastifyRequest): void {
  const header = req.headers['a2a-version']
  const query = (req.query as Record<string, unknown> | undefined)?.['A2A-Version']
  const raw =
    (Array.isArray(header) ? header[0] : header) ?? (typeof query === 'string' ? query : '')
  const requested = raw.trim() || '0.3'
  const m = /^(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?$/.exec(requested)
  if (m && A2A_VERSIONS.includes(`${Number(m[1])}.${Number(m[2] ?? 0)}`)) return
  throw new BatonError('a2a_version_not_supported', `A2A ${requested} is not served here`, {
    requested: requested.slice(0, 64),
    supportedVersions: [...A2A_VERSIONS],
  })
}

/**
 * A Baton service parameter (A2A 1.0 §3.2.6: service parameters travel as headers): a client
 * whose GetTask type drops the dev-1.1 `currentGeneration` (the official SDK's 1.x) sends it as
 * `Baton-Current-Generation`; a value in params wins.
 */
export const CURRENT_GENERATION_HEADER = 'baton-current-generation'

function withServiceParameters(
  req: FastifyRequest,
  method: string,
  params: Record<string, unknown>,
): Record<string, unknown> {
  const current = req.headers[CURRENT_GENERATION_HEADER]
  if (method !== 'GetTask' || params.currentGeneration !== undefined || current === undefined) {
    return params
  }
  return { ...params, currentGeneration: Array.isArray(current) ? current[0] : current }
}

/** Runs an operation with input built from JSON-RPC params, validated by its own schemas. */
function runOperation(
  ctx: AppContext,
  caller: Caller,
  op: Operation,
  input: Record<string, unknown>,
) {
  const defined = (v: unknown) =>
    Object.fromEntries(Object.entries((v ?? {}) as object).filter(([, x]) => x !== undefined))
  const schemas = inputSchemas(op, ctx.config)
  return op.run(ctx, caller, {
    params: parseInput(schemas.params ?? none, defined(input.params), 'params'),
    query: parseInput(schemas.query ?? none.passthrough(), defined(input.query), 'params'),
    body: schemas.body ? parseInput(schemas.body, input.body, 'params') : undefined,
  } as never)
}

/** Registers `POST /v1/a2a`; the agent card and the plain routes come from the registry. */
export function registerA2aRoutes(api: Api, ctx: AppContext): void {
  // What fails before the handler (the signature, the body's bytes) is answered in JSON-RPC too,
  // so an A2A client reads Baton's code in `data` whatever refused it.
  const errorHandler = (error: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const e = toBatonError(error)
    ctx.metrics.recordError(e.code)
    if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
    const code = e.code === 'invalid_json' ? PARSE_ERROR : undefined
    return reply
      .headers(errorHeaders(e, req))
      .code(e.status)
      .send(rpcError(null, e, code))
  }
  // A signed call's nonce and quota charge commit with its method's first write, as for the
  // operations' own routes; a call refused before its method ran spends them as it is answered.
  const config = { auth: 'signature', carriesAdmission: true } as const
  api.app.post(A2A_RPC_PATH, { errorHandler, config }, async (req, reply) => {
    const { principal, carry } = requireSigned(req)
    const caller: Caller = {
      ip: req.ip,
      origin: requestOrigin(ctx, req) ?? localOrigin(req),
      principal,
      signal: new CloseSignal(reply.raw),
      carry,
      trace: handOnTrace(req),
    }
    let id: RpcId = null
    let envelope = false
    try {
      const rpc = parseInput(Envelope, req.body, 'body')
      envelope = true
      id = rpc.id ?? null
      assertVersion(req)
      const params = withServiceParameters(req, rpc.method, rpc.params ?? {})
      if (rpc.method === 'SendStreamingMessage' || rpc.method === 'SubscribeToTask') {
        return await stream(ctx, req, reply, caller, rpc.method, params, id)
      }
      const method = A2A_RPC_METHODS[rpc.method]
      if (!method) {
        throw new BatonError('a2a_method_not_found', `No A2A method ${rpc.method}`, {
          method: rpc.method,
        })
      }
      const result = await runAdmitted(ctx, req, () =>
        runOperation(ctx, caller, method.op, method.input(params)),
      )
      return { jsonrpc: '2.0', id, result }
    } catch (error) {
      const e = toBatonError(error)
      ctx.metrics.recordError(e.code)
      if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
      return reply
        .headers(errorHeaders(e, req))
        .code(e.status)
        .send(rpcError(id, e, envelope ? undefined : INVALID_REQUEST))
    }
  })
}

/**
 * A2A SendStreamingMessage and SubscribeToTask as SSE. The first event is the task as it stands
 * (or, on resubscription with `Last-Event-ID` or `lastEventId`, the events after that generation,
 * so a dropped stream loses nothing); then each event as it commits, until the task is terminal
 * or interrupted, the client leaves or the hub closes. Refusals before the stream starts are
 * ordinary JSON-RPC errors.
 */
async function stream(
  ctx: AppContext,
  req: FastifyRequest,
  reply: FastifyReply,
  caller: Caller,
  method: string,
  params: Record<string, unknown>,
  id: RpcId,
): Promise<FastifyReply> {
  const principal = caller.principal!.principal
  let taskId: string
  let after: number
  let first: unknown
  if (method === 'SendStreamingMessage') {
    // The stream is SendMessage's answer as it goes on: its params are SendMessage's.
    const schema = inputSchemas(a2aSendMessage, ctx.config).body!
    const sent = parseInput(schema, params, 'params') as A2aSendMessageParams
    const body = { ...sent, configuration: { ...sent.configuration, returnImmediately: true } }
    const { task } = await ctx.a2a.send(principal, body, undefined, undefined, caller)
    taskId = task.id
    after = task.generation
    first = { task }
  } else {
    const ref = parseInput(A2aTaskRefParams, params, 'params')
    taskId = ref.id
    const resume = lastEventId(req, params)
    if (resume === undefined) {
      const task = await ctx.a2a.snapshot(principal, taskId)
      after = task.generation
      first = { task }
    } else {
      await ctx.a2a.snapshot(principal, taskId)
      after = resume
    }
  }
  // Nothing is streamed before the request's admission is durable: committed with the send, or
  // alone now for a subscription, which writes nothing.
  const carry = req.signed?.carry
  if (carry) await ctx.identity.settle(carry)
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  })
  const frame = (generation: number, result: unknown) =>
    `id: ${generation}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`
  if (first !== undefined) res.write(frame(after, first))
  try {
    while (!caller.signal.aborted && !ctx.isClosing()) {
      const { events, more, ended } = await ctx.a2a.eventsAfter(principal, taskId, after)
      for (const e of events) {
        if (!write(res, frame(e.generation, e.event))) return reply
        after = e.generation
      }
      if (ended) break
      if (more) continue
      await ctx.a2a.waitForChange(principal, taskId, after, caller.signal, caller.ip)
      if (!write(res, ': keep-alive\n\n')) return reply
    }
  } catch (error) {
    // A refusal mid-stream (the caller suspended, say) is the stream's last event.
    const e = toBatonError(error)
    if (!caller.signal.aborted) write(res, `data: ${JSON.stringify(rpcError(id, e))}\n\n`)
  }
  res.end()
  return reply
}

/** Writes unless the reader has gone or stopped reading; a stalled reader is dropped. */
function write(res: ServerResponse, text: string): boolean {
  if (res.writableEnded || res.destroyed) return false
  if (res.writableLength > 1 << 20) {
    res.destroy()
    return false
  }
  res.write(text)
  return true
}

/** A resubscription's `Last-Event-ID`: the generation of the last event the client saw. */
const LastEventId = wholeNumber()

/** The generation a resubscribing client saw last: the SSE `Last-Event-ID`, or a param. */
function lastEventId(req: FastifyRequest, params: Record<string, unknown>): number | undefined {
  const raw = req.headers['last-event-id'] ?? params.lastEventId
  return raw === undefined ? undefined : parseInput(LastEventId, raw, 'Last-Event-ID')
}
