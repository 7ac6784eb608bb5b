import { BatonError } from '@baton/protocol'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { z } from 'zod'
import type { AppContext } from '../app.js'
import { bearerToken } from '../http/bearer.js'
import { localOrigin, requestOrigin, requirePrincipal } from '../identity/http.js'
import { parseIdempotencyKey } from '../store/idempotency.js'
import { parseInput } from '../validation.js'
import type { Caller, Operation, OperationInput } from './operation.js'

const none = z.object({}).strict()

/** The caller of an HTTP request, after the operation's auth has been checked. */
function httpCaller(ctx: AppContext, op: Operation, req: FastifyRequest, reply: FastifyReply) {
  const abort = new AbortController()
  // The response closing before an answer is sent means the caller went away; one closing after
  // its answer aborts nothing (an abort makes an Event and a DOMException per request).
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) abort.abort()
  })
  const caller: Caller = {
    ip: req.ip,
    origin: requestOrigin(ctx, req) ?? localOrigin(req),
    signal: abort.signal,
  }
  switch (op.auth) {
    case 'handoff-token': {
      caller.token = bearerToken(req)
      if (!caller.token) {
        throw new BatonError('token_missing', 'Send the token as Authorization: Bearer <token>')
      }
      break
    }
    case 'signature':
      caller.principal = requirePrincipal(req)
      break
    case 'operator':
      ctx.identity.assertAdmin(bearerToken(req))
      break
    case 'none':
      break
  }
  if (op.idempotencyKey) caller.idempotencyKey = parseIdempotencyKey(req.headers['idempotency-key'])
  return caller
}

/** Validates the three parts of a request's input with the operation's schemas. */
export function httpInput(op: Operation, req: FastifyRequest): OperationInput<never, never, never> {
  return {
    params: parseInput(op.params ?? none, req.params ?? {}, 'path'),
    query: parseInput(op.query ?? none.passthrough(), req.query ?? {}, 'query'),
    body: op.body ? parseInput(op.body, req.body, 'body') : undefined,
  } as OperationInput<never, never, never>
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
      handler: async (req, reply) => {
        const caller = httpCaller(ctx, op, req, reply)
        const input = httpInput(op, req)
        const result = await op.run(ctx, caller, input)
        if (reply.sent) return reply
        reply.code(op.status ?? 200)
        return result
      },
    })
  }
}
