import { contracts } from '@baton/protocol'
import { found } from '../ops/found.js'
import { bind } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

export const createResource = bind(contracts.createResource, (ctx, caller, { body }) =>
  ctx.resources.create(signer(caller), body, caller.idempotencyKey, caller),
)

export const listResources = bind(contracts.listResources, (ctx, caller, { query }) =>
  ctx.resources.list(signer(caller), query),
)

export const readResource = bind(contracts.readResource, (ctx, caller, { params }) =>
  ctx.resources.get(signer(caller), params.id),
)

export const updateResource = bind(contracts.updateResource, (ctx, caller, { params, body }) =>
  ctx.resources.update(signer(caller), params.id, body, caller),
)

export const resourceHistory = bind(contracts.resourceHistory, (ctx, caller, { params }) =>
  ctx.resources.history(signer(caller), params.id),
)

export const operatorListResources = bind(
  contracts.operatorListResources,
  (ctx, _caller, { query }) => ctx.resources.operatorList(query),
)

export const operatorReadResource = bind(
  contracts.operatorReadResource,
  async (ctx, _caller, { params }) =>
    found(await ctx.resources.operatorRead(params.id), 'resource'),
)

/** Every resource operation, in the order they are documented. */
export const resourceOperations = [
  createResource,
  listResources,
  readResource,
  updateResource,
  resourceHistory,
]

/** The operator's resource reads. */
export const resourceDashboardOperations = [operatorListResources, operatorReadResource]
