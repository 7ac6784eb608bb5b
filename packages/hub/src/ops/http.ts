import type { ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import { sharedAnswerBytes } from '../events/shared-answer.js'
import type { WaitAbortEvent, WaitSignal } from '../events/wait.js'
import { sendCacheable } from '../http/cacheable.js'
import { isDepthRefusal } from '../http/json-guard.js'
import { localOrigin, requestOrigin, runAdmitted } from '../identity/http.js'
import { parseIdempotencyKey } from '../store/idempotency.js'
import { handOnTrace } from '../telemetry/http.js'
import { AUTH_KINDS } from './auth-kinds.js'
import { HTTP_INPUT, parseOperationInput } from './input.js'
import type { Caller, Operation, OperationInput } from './operation.js'

// The signal of an operation that answers at once: its caller going away changes nothing it
// does, so no close listener is made for it.
const NEVER_ABORTED: WaitSignal = {
  aborted: false,
  addEventListener() {},
  removeEventListener() {},
}

type AbortListener = (event: WaitAbortEvent) => void

/**
 * Aborted when the response closes before its answer was sent (the caller left). An
 * AbortController, its signal and a `once` close listener held about 1.1 KB per long poll; this
 * holds the response, one close listener and the wait's own listener, about 90 bytes.
 */
export class CloseSignal implements WaitSignal {
  aborted = false
  private listeners: AbortListener | AbortListener[] | undefined

  constructor(private readonly res: ServerResponse) {
    res.on('close', this.onClose)
  }

  private readonly onClose = () => {
    this.res.off('close', this.onClose)
    if (this.res.writableFinished) return
    this.aborted = true
    const listeners = this.listeners
    this.listeners = undefined
    if (typeof listeners === 'function') listeners({ target: this })
    else if (listeners) for (const l of listeners) l({ target: this })
  }

  addEventListener(_type: 'abort', listener: AbortListener): void {
    if (this.aborted) return
    const held = this.listeners
    if (held === undefined) this.listeners = listener
    else if (typeof held === 'function') this.listeners = [held, listener]
    else held.push(listener)
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const held = this.listeners
    if (held === listener) this.listeners = undefined
    else if (Array.isArray(held)) {
      const i = held.indexOf(listener)
      if (i >= 0) held.splice(i, 1)
    }
  }
}

/** The caller of an HTTP request, after the operation's auth has been checked. */
function httpCaller(ctx: AppContext, op: Operation, req: FastifyRequest, reply: FastifyReply) {
  let origin: string | undefined
  const caller: Caller = {
    ip: req.ip,
    // Worked out only for the operation that reads it (`/v1/me`).
    get origin() {
      origin ??= requestOrigin(ctx, req) ?? localOrigin(req)
      return origin
    },
    signal: op.longPoll ? new CloseSignal(reply.raw) : NEVER_ABORTED,
    carry: req.signed?.carry,
    trace: handOnTrace(req),
  }
  AUTH_KINDS[op.auth].fromHttp(ctx, req, caller)
  if (op.idempotencyKey) caller.idempotencyKey = parseIdempotencyKey(req.headers['idempotency-key'])
  return caller
}

/** Validates the three parts of a request's input with the operation's schemas. */
export function httpInput(
  op: Operation,
  req: FastifyRequest,
  config: AppContext['config'],
): OperationInput<never, never, never> {
  return parseOperationInput(
    op,
    { params: req.params, query: req.query, body: req.body },
    HTTP_INPUT,
    config,
  )
}

/**
 * The route's error handler of an operation with its own depth code: the JSON guard's depth
 * refusal of its body becomes that code, and every error goes on to the hub's error handler.
 */
function mapTooDeep(tooDeep: NonNullable<Operation['tooDeep']>) {
  return (error: Error): never => {
    if (isDepthRefusal(error)) throw tooDeep(error.context.field as string) ?? error
    throw error
  }
}

/**
 * Registers every operation as a fastify route: auth first (a refused caller learns nothing
 * about its input), then validation by the declared schemas, then the one service call.
 */
export function registerHttpOperations(
  app: FastifyInstance,
  ctx: AppContext,
  ops: readonly Operation[],
): void {
  for (const op of ops) {
    const bodyLimit = typeof op.bodyLimit === 'function' ? op.bodyLimit(ctx.config) : op.bodyLimit
    app.route({
      method: op.method,
      url: op.path,
      ...(bodyLimit ? { bodyLimit } : {}),
      ...(op.tooDeep ? { errorHandler: mapTooDeep(op.tooDeep) } : {}),
      // The signature hook reads the declared auth here; a signed request's nonce and quota
      // charge commit with the operation's own write.
      config: {
        auth: op.auth,
        carriesAdmission: true,
        ...(op.admissionExempt ? { admissionExempt: true } : {}),
      },
      handler: async (req, reply) => {
        const result = await runAdmitted(ctx, req, () =>
          op.run(ctx, httpCaller(ctx, op, req, reply), httpInput(op, req, ctx.config)),
        )
        if (reply.sent) return reply
        reply.code(op.status ?? 200)
        if (op.cache) return sendCacheable(req, reply, op.cache.maxAgeSeconds, result)
        // An answer many replies share goes as the octets its first reply encoded.
        const bytes = sharedAnswerBytes(result)
        if (bytes) return reply.type('application/json; charset=utf-8').send(bytes)
        return result
      },
    })
  }
}
