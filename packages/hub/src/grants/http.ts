import { CreateGrantInput } from '@baton/protocol'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
import { requirePrincipal } from '../identity/http.js'
import { parseIdempotencyKey } from '../store/idempotency.js'

const tags = ['grants']

/** Seed 000's capability routes: grant, list, revoke. */
export function registerGrantRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.grants
  api.route({
    method: 'POST',
    url: '/v1/capabilities',
    operationId: 'createGrant',
    summary: 'Grant a principal actions on one resource until expiresAt',
    tags,
    security: 'signature',
    status: 201,
    body: CreateGrantInput,
    headers: { 'Idempotency-Key': { description: 'Makes the grant safe to repeat' } },
    responses: {
      201: { description: 'The grant' },
      400: { description: 'invalid_request, unknown_field or invalid_grant' },
      401: { description: 'The request signature is missing or invalid' },
      403: { description: 'resource_forbidden or grant_forbidden' },
      409: { description: 'idempotency_conflict' },
    },
    handler: (req) =>
      service.create(
        requirePrincipal(req).principal,
        req.body,
        parseIdempotencyKey(req.headers['idempotency-key']),
      ),
  })
  api.route({
    method: 'GET',
    url: '/v1/capabilities',
    operationId: 'listGrants',
    summary: 'Grants the caller issued or holds, with their status',
    tags,
    security: 'signature',
    responses: { 200: { description: '`{ capabilities }`' } },
    handler: (req) => service.list(requirePrincipal(req).principal),
  })
  api.route({
    method: 'DELETE',
    url: '/v1/capabilities/:id',
    operationId: 'revokeGrant',
    summary: 'Revoke a grant and everything passed on from it (idempotent)',
    tags,
    security: 'signature',
    pathParams: { id: 'The grant id' },
    responses: {
      200: { description: 'The grant with revokedAt' },
      403: { description: 'grant_forbidden' },
      404: { description: 'grant_not_found' },
    },
    handler: (req) =>
      service.revoke(requirePrincipal(req).principal, (req.params as { id: string }).id),
  })
}
