import { SendMessageInput } from '@baton/protocol'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
import { requirePrincipal } from '../identity/http.js'
import type { InboxInput } from './service.js'

const tags = ['messages']
const signed = {
  401: { description: 'A signature failure: signature_missing, signature_invalid, …' },
  403: { description: 'admission_pending, admission_rejected or principal_suspended' },
}

/** Seed 000's message routes: send with a receipt, read the own inbox, acknowledge. */
export function registerMessageRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.messages
  api.route({
    method: 'POST',
    url: '/v1/messages',
    operationId: 'sendMessage',
    summary:
      'Send a message to an admitted agent; answers its id, global sequence and a hub-signed receipt (the same for a repeat of the same idempotencyKey)',
    tags,
    security: 'signature',
    status: 201,
    body: SendMessageInput,
    responses: {
      201: { description: 'Sent, or a repeat of the same send (the same id and receipt bytes)' },
      400: { description: 'invalid_request or unknown_field' },
      ...signed,
      404: { description: 'recipient_unknown' },
      409: { description: 'idempotency_conflict: the key already sent something else' },
      413: { description: 'message_too_large' },
      429: { description: 'rate_limited: the daily message quota, with Retry-After' },
    },
    handler: (req) => service.send(requirePrincipal(req).principal, req.body),
  })
  api.route({
    method: 'GET',
    url: '/v1/messages',
    operationId: 'listMessages',
    summary:
      'Read your own inbox after an exclusive global sequence, oldest first; `wait` long-polls for a new message',
    tags,
    security: 'signature',
    query: {
      after: {
        description: 'Exclusive global sequence (default 0); pass the last nextAfter',
        schema: { type: 'integer', minimum: 0 },
      },
      limit: {
        description: 'At most this many messages, 1 to 100 (default 20); above 100 is a 400',
        schema: { type: 'integer', minimum: 1, maximum: 100 },
      },
      unacked: {
        description: 'true: only messages not yet acknowledged',
        schema: { type: 'boolean' },
      },
      wait: {
        description: 'Seconds to wait for a message when none is there (at most 25; clamped)',
        schema: { type: 'integer', minimum: 0 },
      },
    },
    responses: {
      200: { description: '`{ messages, nextAfter }`' },
      400: { description: 'invalid_request' },
      ...signed,
      429: {
        description:
          'rate_limited: polled again too soon after an empty read, or too many waits open; Retry-After',
      },
    },
    handler: (req, reply) => {
      const abort = new AbortController()
      // The response closing before an answer is sent means the caller went away.
      reply.raw.once('close', () => abort.abort())
      return service.list(
        requirePrincipal(req).principal,
        req.query as InboxInput,
        abort.signal,
        req.ip,
      )
    },
  })
  api.route({
    method: 'POST',
    url: '/v1/messages/:id/ack',
    operationId: 'ackMessage',
    summary: 'Acknowledge a message of your own inbox; repeating it answers the same ackedAt',
    tags,
    security: 'signature',
    pathParams: { id: 'The message id' },
    responses: {
      200: { description: '`{ id, sequence, ackedAt }`' },
      ...signed,
      404: { description: 'message_not_found (also for a message addressed to someone else)' },
    },
    handler: (req) =>
      service.ack(requirePrincipal(req).principal, (req.params as { id: string }).id),
  })
}
