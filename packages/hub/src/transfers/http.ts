import {
  ActivateInput,
  ClaimNextInput,
  CreateTransferInput,
  LeaseInput,
  MintTokenInput,
  ProvisionInput,
  PushInput,
  TerminateInput,
  UsageInput,
} from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import { type Api, bearerToken } from '../http/server.js'
import { requirePrincipal } from '../identity/http.js'
import { parseIdempotencyKey } from '../store/idempotency.js'
import { OPERATOR } from './service.js'

const tags = ['session transfer']
const idParam = { id: 'The transfer id (tr_…)' }
const signed = {
  401: { description: 'The request signature is missing or invalid' },
  404: { description: 'transfer_not_found (also when the caller may not see it)' },
}
const tokenErrors = {
  401: {
    description:
      'transfer_token_malformed, transfer_token_unknown_key, transfer_token_bad_signature or transfer_token_expired',
  },
  403: {
    description:
      'transfer_token_wrong_transfer, transfer_token_wrong_scope or transfer_token_params_mismatch',
  },
  409: { description: 'transfer_state_conflict or transfer_token_replayed' },
  410: { description: 'transfer_expired' },
}
const adminErrors = {
  401: { description: 'admin_token_invalid' },
  403: { description: 'admin_disabled (the hub has no BATON_ADMIN_TOKEN)' },
  404: { description: 'transfer_not_found' },
}

const who = (req: FastifyRequest) => requirePrincipal(req).principal
const idOf = (req: FastifyRequest) => (req.params as { id: string }).id

/** Session transfer routes (seed 004): signed `/v1/transfers` and the orchestrator's admin routes. */
export function registerTransferRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.transfers
  api.route({
    method: 'POST',
    url: '/v1/transfers',
    operationId: 'snapshotState',
    summary: 'Snapshot a session: stage a transfer owned by the caller (seed 004 snapshot_state)',
    tags,
    security: 'signature',
    status: 201,
    bodyLimit: ctx.config.transfer.snapshotMaxBytes,
    body: CreateTransferInput,
    headers: { 'Idempotency-Key': { description: 'Alternative to `idempotencyKey` in the body' } },
    responses: {
      201: { description: 'The transfer, staged (or the first answer for a repeated key)' },
      400: { description: 'snapshot_invalid, snapshot_contains_secret, invalid_request' },
      401: signed[401],
      409: { description: 'idempotency_conflict' },
      413: { description: 'body_too_large or snapshot_too_large' },
    },
    handler: (req) =>
      service.create(who(req), req.body, parseIdempotencyKey(req.headers['idempotency-key'])),
  })
  api.route({
    method: 'GET',
    url: '/v1/transfers',
    operationId: 'listTransfers',
    summary: 'Transfers the caller owns (role=owner) or runs (role=runtime), newest first',
    tags,
    security: 'signature',
    query: {
      role: { description: 'owner (default) or runtime' },
      state: { description: 'Only transfers in this state' },
    },
    responses: { 200: { description: '`{ transfers }`' }, 401: signed[401] },
    handler: (req) => service.list(who(req), req.query as Record<string, unknown>),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/claim',
    operationId: 'claimNextTransfer',
    summary: 'A runtime claims the oldest provisioned, unclaimed transfer of a tier',
    tags,
    security: 'signature',
    body: ClaimNextInput,
    responses: {
      200: { description: '`{ transfer }`, null when none waits' },
      400: { description: 'tier_unknown' },
      401: signed[401],
      403: { description: 'transfer_forbidden (not an allowed runtime)' },
    },
    handler: (req) => service.claimNext(who(req), req.body),
  })
  api.route({
    method: 'GET',
    url: '/v1/transfers/:id',
    operationId: 'getStatus',
    summary: 'The transfer, its budget and its ordered event log (owner or runtime)',
    tags,
    security: 'signature',
    pathParams: idParam,
    responses: { 200: { description: 'The transfer' }, ...signed },
    handler: (req) => service.get(who(req), idOf(req)),
  })
  api.route({
    method: 'GET',
    url: '/v1/transfers/:id/wait',
    operationId: 'waitTransfer',
    summary: 'Answer as soon as the transfer passes `version` or ends, within `seconds` (max 25)',
    tags,
    security: 'signature',
    pathParams: idParam,
    query: {
      seconds: { description: 'How long to wait; larger values are clamped' },
      version: { description: 'The version the caller has seen' },
    },
    responses: {
      200: { description: 'The transfer, with `changed`' },
      ...signed,
      403: { description: 'principal_suspended or admission_rejected, also ending an open wait' },
      429: {
        description: 'rate_limited: too many waits open on this transfer or from this address',
      },
    },
    handler: (req, reply) => {
      const { seconds, version } = req.query as { seconds?: string; version?: string }
      const abort = new AbortController()
      reply.raw.once('close', () => abort.abort())
      return service.wait(who(req), idOf(req), seconds, version, abort.signal, req.ip)
    },
  })
  api.route({
    method: 'GET',
    url: '/v1/transfers/:id/snapshot',
    operationId: 'readSnapshot',
    summary: 'The snapshot content and checksum (owner, or the runtime after its claim)',
    tags,
    security: 'signature',
    pathParams: idParam,
    responses: {
      200: { description: '`{ transferId, checksum, snapshot }`' },
      ...signed,
      403: { description: 'transfer_forbidden' },
    },
    handler: (req) => service.snapshot(who(req), idOf(req)),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/provision',
    operationId: 'provisionRuntime',
    summary: 'staged → provisioned with a provision token bound to tier, budget and rate',
    tags,
    security: 'signature',
    pathParams: idParam,
    body: ProvisionInput,
    responses: {
      200: { description: 'The transfer, provisioned' },
      400: { description: 'tier_unknown, tier_limit_exceeded, invalid_request' },
      ...tokenErrors,
      404: signed[404],
    },
    handler: (req) => service.provision(who(req), idOf(req), req.body),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/claim',
    operationId: 'claimTransfer',
    summary: 'A runtime claims a provisioned transfer; only it may then push, run and report',
    tags,
    security: 'signature',
    pathParams: idParam,
    responses: {
      200: { description: 'The transfer, claimed by the caller' },
      ...signed,
      403: { description: 'transfer_forbidden (not an allowed runtime)' },
      409: {
        description:
          'transfer_claimed or transfer_state_conflict, to the owner; any other caller gets 404 unless the transfer is provisioned, unclaimed and live',
      },
      410: { description: 'transfer_expired' },
    },
    handler: (req) => service.claim(who(req), idOf(req)),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/push',
    operationId: 'pushState',
    summary: 'provisioned → pushed: the claiming runtime confirms the checksum it computed',
    tags,
    security: 'signature',
    pathParams: idParam,
    body: PushInput,
    responses: {
      200: { description: 'The transfer, pushed' },
      ...signed,
      403: { description: 'transfer_forbidden (the owner, not the claiming runtime)' },
      409: { description: 'transfer_state_conflict' },
      410: { description: 'transfer_expired' },
      422: { description: 'checksum_mismatch (recorded in the event log)' },
    },
    handler: (req) => service.push(who(req), idOf(req), req.body),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/activate',
    operationId: 'activate',
    summary: 'pushed → active with an activate token: the one irreversible step',
    tags,
    security: 'signature',
    pathParams: idParam,
    body: ActivateInput,
    responses: { 200: { description: 'The transfer, active' }, ...tokenErrors, 404: signed[404] },
    handler: (req) => service.activate(who(req), idOf(req), req.body),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/lease',
    operationId: 'leaseTransfer',
    summary: 'The claiming runtime takes or renews the lease to run the active agent',
    tags,
    security: 'signature',
    pathParams: idParam,
    body: LeaseInput,
    responses: {
      200: { description: '`{ transferId, instance, leaseEndsAt, renewed }`' },
      ...signed,
      403: { description: 'transfer_forbidden (the owner, not the claiming runtime)' },
      409: { description: 'transfer_lease_held or transfer_state_conflict' },
    },
    handler: (req) => service.lease(who(req), idOf(req), req.body),
  })
  api.route({
    method: 'POST',
    url: '/v1/transfers/:id/usage',
    operationId: 'reportUsage',
    summary: 'The claiming runtime reports spend, idempotent by key; answers `stop` once insolvent',
    tags,
    security: 'signature',
    pathParams: idParam,
    body: UsageInput,
    responses: {
      200: { description: 'Where the budget stands, and whether to stop' },
      ...signed,
      403: { description: 'transfer_forbidden (the owner, not the runtime that holds it)' },
      409: { description: 'transfer_state_conflict or idempotency_conflict' },
    },
    handler: (req) => service.usage(who(req), idOf(req), req.body),
  })

  api.route({
    method: 'GET',
    url: '/admin/v1/transfers/:id',
    operationId: 'adminGetTransfer',
    summary: 'The transfer and its event log (orchestrator)',
    tags: ['admin'],
    security: 'bearer',
    pathParams: idParam,
    responses: { 200: { description: 'The transfer' }, ...adminErrors },
    handler: async (req) => {
      ctx.identity.assertAdmin(bearerToken(req))
      return service.get(OPERATOR, idOf(req))
    },
  })
  api.route({
    method: 'POST',
    url: '/admin/v1/transfers/:id/tokens',
    operationId: 'mintTransferToken',
    summary: 'Mint a single-use provision or activate token (orchestrator only, never MCP)',
    tags: ['admin'],
    security: 'bearer',
    status: 201,
    pathParams: idParam,
    body: MintTokenInput,
    responses: {
      201: { description: '`{ token, transferId, scope, kid, jti, expiresAt }`, shown once' },
      400: { description: 'invalid_request, tier_unknown, tier_limit_exceeded' },
      ...adminErrors,
    },
    handler: async (req) => {
      ctx.identity.assertAdmin(bearerToken(req))
      return service.mint(idOf(req), req.body)
    },
  })
  api.route({
    method: 'POST',
    url: '/admin/v1/transfers/:id/terminate',
    operationId: 'terminateTransfer',
    summary: 'Terminate a transfer in any state (orchestrator); repeating it is answered',
    tags: ['admin'],
    security: 'bearer',
    pathParams: idParam,
    body: TerminateInput,
    responses: { 200: { description: 'The transfer, terminated' }, ...adminErrors },
    handler: async (req) => {
      ctx.identity.assertAdmin(bearerToken(req))
      return service.terminate(idOf(req), req.body)
    },
  })
}
