import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

export const readBudget = bind(contracts.readBudget, (ctx, caller, { params }) =>
  ctx.budgets.read(signer(caller), params.digest),
)

export const reportSpend = bind(contracts.reportSpend, (ctx, caller, { params, body }) =>
  ctx.budgets.spend(signer(caller), params.digest, body, caller),
)

export const reserveBudget = bind(contracts.reserveBudget, (ctx, caller, { params, body }) =>
  ctx.budgets.reserve(signer(caller), params.digest, body, caller),
)

export const settleBudget = bind(contracts.settleBudget, (ctx, caller, { params, body }) =>
  ctx.budgets.settle(signer(caller), params, body, caller),
)

export const nameBudgetReporters = bind(
  contracts.nameBudgetReporters,
  (ctx, caller, { params, body }) =>
    ctx.budgets.nameReporters(signer(caller), params.digest, body, caller),
)

export const operatorListBudgets = bind(contracts.operatorListBudgets, (ctx, _caller, { query }) =>
  ctx.budgets.operatorList(query),
)

/** Every budget operation, in the order they are documented. */
export const budgetOperations = [
  readBudget,
  reportSpend,
  reserveBudget,
  settleBudget,
  nameBudgetReporters,
]

/** The operator's budget reads. */
export const budgetDashboardOperations = [operatorListBudgets]
