import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

export const createGrant = bind(contracts.createGrant, (ctx, caller, { body }) =>
  ctx.grants.create(signer(caller), body, caller.idempotencyKey, caller),
)

export const listGrants = bind(contracts.listGrants, (ctx, caller) =>
  ctx.grants.list(signer(caller)),
)

export const revokeGrant = bind(contracts.revokeGrant, (ctx, caller, { params }) =>
  ctx.grants.revoke(signer(caller), params.id, caller),
)

export const operatorListGrants = bind(
  contracts.operatorListGrants,
  async (ctx, _caller, { query }) => ({ grants: await ctx.grants.operatorList(query) }),
)

/** Every grant operation, in the order they are documented. */
export const grantOperations = [createGrant, listGrants, revokeGrant]

/** The operator's grant reads. */
export const grantDashboardOperations = [operatorListGrants]
