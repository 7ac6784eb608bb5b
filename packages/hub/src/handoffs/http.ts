import {
  AdvanceInput,
  CreatedHandoffView,
  CreateHandoffInput,
  HandoffView,
  MoveResultView,
  WaitView,
} from '@baton/protocol'
import type { AppContext } from '../app.js'
import { type Api, bearerToken } from '../http/server.js'
import { parseIdempotencyKey } from '../store/idempotency.js'

const tags = ['token handoffs']
const idParam = { id: 'The handoff id' }
const errors = {
  400: {
    description: 'Bad input: invalid_request, unknown_field, unknown_state, invalid_machine, …',
  },
  401: { description: 'token_missing' },
  404: { description: 'handoff_not_found (also for a wrong token)' },
  410: { description: 'handoff_expired' },
}

/** Seed 002's paths, so a client written for that service works by changing only the host. */
export function registerHandoffRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.handoffs
  api.route({
    method: 'POST',
    url: '/services/v1/handoff',
    operationId: 'createHandoff',
    summary: 'Create a handoff; answers both tokens, shown only this once',
    tags,
    security: 'none',
    status: 201,
    bodyLimit: 64 * 1024,
    body: CreateHandoffInput,
    headers: { 'Idempotency-Key': { description: 'Makes the create safe to repeat' } },
    responses: {
      201: { description: 'Created', schema: CreatedHandoffView },
      400: errors[400],
      409: { description: 'idempotency_conflict' },
      413: { description: 'payload_too_large or body_too_large' },
      429: { description: 'rate_limited, with Retry-After' },
    },
    handler: (req) =>
      service.create(req.body, {
        ip: req.ip,
        idempotencyKey: parseIdempotencyKey(req.headers['idempotency-key']),
      }),
  })
  api.route({
    method: 'GET',
    url: '/services/v1/handoff/:id',
    operationId: 'readHandoff',
    summary: 'Read a handoff with either token',
    tags,
    security: 'bearer',
    pathParams: idParam,
    responses: { 200: { description: 'The handoff', schema: HandoffView }, ...errors },
    handler: (req) => service.read((req.params as { id: string }).id, bearerToken(req)),
  })
  api.route({
    method: 'POST',
    url: '/services/v1/handoff/:id/:state',
    operationId: 'advanceHandoff',
    summary: 'Move a handoff to {state}, only from exactly `from`',
    tags,
    security: 'bearer',
    bodyLimit: 16 * 1024,
    body: AdvanceInput,
    pathParams: { ...idParam, state: 'The state to enter' },
    responses: {
      200: {
        description: 'Moved, or a repeat of a committed move (`repeated: true`)',
        schema: MoveResultView,
      },
      ...errors,
      409: { description: 'state_conflict, transition_not_allowed or idempotency_conflict' },
    },
    handler: (req) => {
      const { id, state } = req.params as { id: string; state: string }
      return service.advance(id, state, req.body, bearerToken(req))
    },
  })
  api.route({
    method: 'GET',
    url: '/services/v1/handoff/:id/wait/:seconds',
    operationId: 'waitHandoff',
    summary: 'Answer as soon as the handoff changes or ends, within {seconds} (at most 25)',
    tags,
    security: 'bearer',
    pathParams: { ...idParam, seconds: 'How long to wait; larger values are clamped' },
    query: {
      version: {
        description: 'The version the caller has seen; a later version answers at once',
        schema: { type: 'integer', minimum: 0 },
      },
    },
    responses: {
      200: { description: 'The handoff, with `changed`', schema: WaitView },
      ...errors,
      429: {
        description: 'rate_limited: too many waits open on this handoff or from this address',
      },
    },
    handler: (req, reply) => {
      const { id, seconds } = req.params as { id: string; seconds: string }
      const { version } = req.query as { version?: string }
      const abort = new AbortController()
      // The response closing before an answer is sent means the caller went away.
      reply.raw.once('close', () => abort.abort())
      return service.wait(id, bearerToken(req), seconds, version, abort.signal, req.ip)
    },
  })
}
