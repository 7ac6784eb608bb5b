import { CreateResourceInput, UpdateResourceInput } from '@baton/protocol'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
import { requirePrincipal } from '../identity/http.js'
import { parseIdempotencyKey } from '../store/idempotency.js'

const tags = ['resources']
const idParam = { id: 'The resource id' }
const refusals = {
  401: { description: 'The request signature is missing or invalid' },
  403: { description: 'resource_forbidden, or an admission code' },
}

/** Seed 000's resource routes; every one signed, every one checked for the caller's access. */
export function registerResourceRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.resources
  api.route({
    method: 'POST',
    url: '/v1/resources',
    operationId: 'createResource',
    summary: 'Create a versioned resource owned by the caller (version 1)',
    tags,
    security: 'signature',
    status: 201,
    body: CreateResourceInput,
    headers: { 'Idempotency-Key': { description: 'Makes the create safe to repeat' } },
    responses: {
      201: { description: 'The resource' },
      400: { description: 'invalid_request or unknown_field' },
      ...refusals,
      409: { description: 'idempotency_conflict' },
      413: { description: 'resource_too_large or storage_quota_exceeded' },
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
    url: '/v1/resources',
    operationId: 'listResources',
    summary: 'Resources the caller owns or holds a live grant for',
    tags,
    security: 'signature',
    query: {
      namespace: { description: 'Only this namespace' },
      kind: { description: 'Only this kind' },
      after: { description: 'Continue after this resource id (from `next`)' },
      limit: { description: 'At most this many (1-100, default 100)' },
    },
    responses: { 200: { description: '`{ resources, next }`' }, ...refusals },
    handler: (req) =>
      service.list(requirePrincipal(req).principal, req.query as Record<string, unknown>),
  })
  api.route({
    method: 'GET',
    url: '/v1/resources/:id',
    operationId: 'readResource',
    summary: 'Read a resource (owner or resource:read grant)',
    tags,
    security: 'signature',
    pathParams: idParam,
    responses: { 200: { description: 'The resource' }, ...refusals },
    handler: (req) =>
      service.get(requirePrincipal(req).principal, (req.params as { id: string }).id),
  })
  api.route({
    method: 'PATCH',
    url: '/v1/resources/:id',
    operationId: 'updateResource',
    summary: 'Replace the data, only at expectedVersion (owner or resource:update grant)',
    tags,
    security: 'signature',
    body: UpdateResourceInput,
    pathParams: idParam,
    responses: {
      200: { description: 'The resource at its new version' },
      ...refusals,
      409: { description: 'version_conflict, with currentVersion' },
      413: { description: 'resource_too_large or storage_quota_exceeded' },
    },
    handler: (req) =>
      service.update(requirePrincipal(req).principal, (req.params as { id: string }).id, req.body),
  })
  api.route({
    method: 'GET',
    url: '/v1/resources/:id/history',
    operationId: 'resourceHistory',
    summary: 'Every version with its data, actor and time (owner or resource:read grant)',
    tags,
    security: 'signature',
    pathParams: idParam,
    responses: { 200: { description: '`{ resourceId, versions }`' }, ...refusals },
    handler: (req) =>
      service.history(requirePrincipal(req).principal, (req.params as { id: string }).id),
  })
}
