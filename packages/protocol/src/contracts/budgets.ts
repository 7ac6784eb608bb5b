import { z } from 'zod'
import {
  BudgetChainView,
  BudgetRef,
  BudgetView,
  HoldRef,
  HoldView,
  ReportersInput,
  ReserveInput,
  SettleInput,
  SpendInput,
  SpendView,
} from '../budgets.js'
import { defineContract } from '../contract.js'

const tags = ['budgets']

/** The budgets of a delegation chain through a hop, for its parties. */
export const readBudget = defineContract({
  name: 'readBudget',
  cli: ['budget', 'read'],
  summary:
    'The budget ledgers of the delegation chain through a hop (granted, reserved, held, spent, remaining per hop), as far as you took part',
  description:
    'The hop must carry a budget and the caller must be its delegator, its delegate or a reporter its delegate named; anyone else is answered budget_not_found, as for a digest that names nothing. The chain lists, oldest first, the budgets of the hops linked to it by prev that the caller took part in.',
  tags,
  method: 'GET',
  path: '/v1/budgets/:digest',
  auth: 'signature',
  params: BudgetRef,
  output: BudgetChainView,
  errors: ['budget_not_found'],
  tool: {
    name: 'read_budget',
    title: 'Read a delegation budget',
    description:
      'How much of the budget on a hop is granted, reserved by sub-delegations, held, spent and remaining, for each hop of its chain you took part in.',
    annotations: { readOnlyHint: true },
  },
})

/** Spend reported by the delegate (or a reporter it named): charged only when it fits. */
export const reportSpend = defineContract({
  name: 'reportSpend',
  cli: {
    name: ['budget', 'spend'],
    aliases: { key: 'idempotencyKey', amount: 'amountMicros' },
  },
  summary:
    'Report spend on a hop’s budget, once per key: charged to the hop and counted in every ancestor’s, or refused before anything is charged when it would cross',
  description:
    'A report that would cross the budget is refused with budget_exceeded, nothing is charged, and the crossing is recorded and delivered to the delegator with a hub-signed receipt. A repeat with the same idempotencyKey and amount answers the first (repeated: true); another amount is idempotency_conflict.',
  tags,
  method: 'POST',
  path: '/v1/budgets/:digest/spend',
  auth: 'signature',
  params: BudgetRef,
  body: SpendInput,
  output: SpendView,
  errors: [
    'budget_not_found',
    'budget_forbidden',
    'budget_exceeded',
    'budget_closed',
    'budget_expired',
    'budget_limit_reached',
    'idempotency_conflict',
  ],
  tool: {
    name: 'report_spend',
    title: 'Report spend on a budget',
    description:
      'Report what your work on a delegated hop cost, in micro-units of its budget unit, with a key that makes a retry safe. It is refused, and nothing is charged, when it would cross the budget: stop the work then.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** Hold an amount before an expensive call (settled after it, released at expiry). */
export const reserveBudget = defineContract({
  name: 'reserveBudget',
  cli: {
    name: ['budget', 'reserve'],
    aliases: { key: 'idempotencyKey', amount: 'amountMicros', ttl: 'ttlSeconds' },
  },
  summary:
    'Hold an amount of a hop’s budget before an expensive call, once per key; settle it after the call, or it is released at its expiry',
  description:
    'A hold that does not fit what remains is refused with budget_exceeded (recorded and delivered to the delegator, nothing held). Settle it with settleBudget; an unsettled hold is released when it expires, when its budget closes, or when the hop ends.',
  tags,
  method: 'POST',
  path: '/v1/budgets/:digest/holds',
  auth: 'signature',
  params: BudgetRef,
  body: ReserveInput,
  output: HoldView,
  errors: [
    'budget_not_found',
    'budget_forbidden',
    'budget_exceeded',
    'budget_closed',
    'budget_expired',
    'budget_limit_reached',
    'idempotency_conflict',
  ],
  tool: {
    name: 'reserve_budget',
    title: 'Reserve budget before a call',
    description:
      'Before an expensive call (a model call, a paid tool), hold its worst-case cost on the budget of the hop you work on. If it is refused, do not make the call. Afterwards settle the hold with what the call really cost.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** Settle a hold with what the call cost; 0 releases it. */
export const settleBudget = defineContract({
  name: 'settleBudget',
  cli: { name: ['budget', 'settle'], aliases: { amount: 'amountMicros' } },
  summary:
    'Settle a hold with what the call cost: the hold is released and the amount charged (0 releases it); more than was held is charged only when the excess fits',
  description:
    'Settling again with the same amount answers the first settle (repeated: true); another amount is idempotency_conflict. A hold released by its expiry is settled as a plain spend: the amount must fit what remains.',
  tags,
  method: 'POST',
  path: '/v1/budgets/:digest/holds/:hold/settle',
  auth: 'signature',
  params: HoldRef,
  body: SettleInput,
  output: HoldView,
  errors: [
    'budget_not_found',
    'budget_forbidden',
    'budget_hold_not_found',
    'budget_exceeded',
    'budget_closed',
    'budget_expired',
    'budget_limit_reached',
    'idempotency_conflict',
  ],
  tool: {
    name: 'settle_budget',
    title: 'Settle a budget hold',
    description:
      'After the call you reserved for, settle its hold with what the call really cost (0 releases it). Repeating the same settle answers the same.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** The delegate names the runtimes that report spend for it. */
export const nameBudgetReporters = defineContract({
  name: 'nameBudgetReporters',
  cli: ['budget', 'reporters'],
  summary:
    'As a hop’s delegate, name the principals (runtimes) that may report spend and reserve on its budget beside you, replacing the list',
  tags,
  method: 'PUT',
  path: '/v1/budgets/:digest/reporters',
  auth: 'signature',
  params: BudgetRef,
  body: ReportersInput,
  output: BudgetView,
  errors: ['budget_not_found', 'budget_forbidden', 'budget_closed', 'budget_limit_reached'],
  tool: {
    name: 'name_budget_reporters',
    title: 'Name budget reporters',
    description:
      'As the delegate of a hop with a budget, name the runtimes allowed to report spend on it for you (seed 004: the runtime meters its own usage). The list replaces the one before.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** Every budget operation, in the order they are documented. */
export const budgetContracts = [
  readBudget,
  reportSpend,
  reserveBudget,
  settleBudget,
  nameBudgetReporters,
]

// The operator's read, which the dashboard's hop and transfer pages show.

export const operatorListBudgets = defineContract({
  name: 'operatorListBudgets',
  summary:
    'Budget ledgers with their latest entries: the chain through a hop, or the hops whose offers name a transfer (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/budgets',
  auth: 'operator',
  query: z.object({
    hop: z.string().max(200).optional().describe('A handoff digest: the budgets of its chain'),
    transfer: z
      .string()
      .max(200)
      .optional()
      .describe('A transfer id: the budgets of hops whose offers reference it'),
  }),
  output: z.object({ budgets: z.array(z.looseObject({ hop: z.string() })) }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'budgets'],
})

/** The operator's budget reads. */
export const budgetDashboardContracts = [operatorListBudgets]
