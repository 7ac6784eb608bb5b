import { BatonError, contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'

export const discovery = bind(contracts.discovery, async (ctx, caller) =>
  ctx.identity.discovery(
    caller.origin ?? ctx.config.identity.publicUrl ?? '',
    await ctx.compute.availability(),
  ),
)

export const me = bind(contracts.me, (ctx, caller) => {
  if (!caller.principal) throw new BatonError('signature_missing', 'The request is not signed')
  return ctx.identity.me(caller.principal)
})

export const setMyLabel = bind(contracts.setMyLabel, (ctx, caller, { body }) => {
  if (!caller.principal) throw new BatonError('signature_missing', 'The request is not signed')
  return ctx.identity.setLabel(caller.principal.principal, body.label, caller)
})

export const listPrincipals = bind(contracts.listPrincipals, (ctx, _caller, { query }) =>
  ctx.identity.list(query),
)

export const readPrincipal = bind(contracts.readPrincipal, (ctx, _caller, { params }) =>
  ctx.identity.get(params.principal),
)

export const decidePrincipal = bind(contracts.decidePrincipal, (ctx, caller, { params }) =>
  ctx.identity.decide(params.principal, params.decision, caller),
)

export const labelPrincipal = bind(contracts.labelPrincipal, (ctx, _caller, { params, body }) =>
  ctx.identity.setOperatorLabel(params.principal, body.label),
)

export const readLabels = bind(contracts.readLabels, (ctx, _caller, { query }) =>
  ctx.identity.readLabels(query.principals),
)

/** Every identity operation, in the order they are documented. */
export const identityOperations = [
  discovery,
  me,
  setMyLabel,
  listPrincipals,
  readPrincipal,
  decidePrincipal,
  labelPrincipal,
  readLabels,
]
