import { z } from 'zod'
import { wholeNumber } from './codecs.js'
import { Micros, TRANSFER_LIMITS } from './transfers.js'

/**
 * The member of a signed offer (seed 003) that carries its budget: an extension member beside the
 * draft's, signed with them, so the handoff digest covers it and a chain carries every budget.
 */
export const BUDGET_MEMBER = 'budget'

/**
 * The `type` of a budget crossing notice: the canonical JSON text the hub delivers to a
 * delegator's hop inbox (kind `budget-crossing`) when a report would have crossed a budget, under
 * a hub-signed receipt over its digest.
 */
export const BUDGET_CROSSING_TYPE = 'baton-budget-crossing'

/** Bounds of budgets that no setting changes; the caps an operator sets are within them. */
export const BUDGET_LIMITS = {
  /** Most principals a delegate may name as reporters of one budget (the setting caps lower). */
  maxReporters: 32,
  /** Longest idempotency key of a spend or a reserve. */
  maxIdempotencyKeyChars: TRANSFER_LIMITS.maxIdempotencyKeyChars,
  /** Longest note on a spend report. */
  maxNoteChars: 200,
} as const

/**
 * The unit a budget counts, in integer micro-units: `usd`, `tokens`, `tool_calls`, … A lowercase
 * name; a sub-delegation's budget counts the same unit as its parent's.
 */
export const BudgetUnit = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,31}$/, 'a lowercase unit name: letters, digits and _, at most 32')

/**
 * The `budget` member of a signed offer: an amount in integer micro-units of a named unit, an
 * optional rate (the price of wall time, micro-units per second, as seed 004 meters it) and an
 * optional expiry (NumericDate seconds) no later than the offer's `exp`, which it defaults to.
 *
 * @example { unit: 'usd', amountMicros: 1_000_000, rateMicrosPerSecond: 50 }
 */
export const OfferBudget = z.strictObject({
  unit: BudgetUnit,
  amountMicros: Micros.min(1).describe('The amount granted, in micro-units of `unit`'),
  rateMicrosPerSecond: Micros.optional().describe(
    'The price of wall time in micro-units per second, for a worker that meters it (seed 004)',
  ),
  exp: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("NumericDate seconds, no later than the offer's exp (its default)"),
})
/** A budget as a signed offer carries it. */
export type OfferBudget = z.infer<typeof OfferBudget>

/** An idempotency key of a spend report or a reserve: printable ASCII without spaces. */
export const BudgetKey = z
  .string()
  .min(1)
  .max(BUDGET_LIMITS.maxIdempotencyKeyChars)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')

// hops.ts's HandoffDigest, written again here: HopView holds a BudgetView, so hops.ts imports this.
const HopDigest = z
  .string()
  .regex(/^[A-Za-z0-9_-]{43}$/, 'a handoff digest: 43 base64url characters')

/** The path of a budget: the handoff digest of the hop that carries it. */
export const BudgetRef = z.strictObject({
  digest: HopDigest.describe('The handoff digest of the offer that carries the budget'),
})
/** A parsed budget path. */
export type BudgetRef = z.output<typeof BudgetRef>

/** The path of a hold: its budget's hop, and the hold id a reserve answered. */
export const HoldRef = BudgetRef.extend({
  hold: z
    .string()
    .regex(/^bh_[A-Za-z0-9_-]{22}$/, 'a hold id as a reserve answered it (bh_…)')
    .describe('The hold id'),
})
/** A parsed hold path. */
export type HoldRef = z.output<typeof HoldRef>

/** The body of a spend report: charged once per key, only when it fits (fail-closed). */
export const SpendInput = z.strictObject({
  idempotencyKey: BudgetKey.describe(
    'Charges once: a repeat with the same amount answers the first',
  ),
  amountMicros: Micros.min(1).describe('What was spent, in micro-units of the budget unit'),
  note: z.string().max(BUDGET_LIMITS.maxNoteChars).optional().describe('What it was for'),
})
/** A parsed spend report. */
export type SpendInput = z.infer<typeof SpendInput>

/** The body of a reserve: hold an amount before an expensive call, settled after it. */
export const ReserveInput = z.strictObject({
  idempotencyKey: BudgetKey.describe('Holds once: a repeat with the same amount answers the first'),
  amountMicros: Micros.min(1).describe('The amount to hold, in micro-units of the budget unit'),
  ttlSeconds: wholeNumber({ min: 1 })
    .optional()
    .describe(
      "How long the hold lasts unsettled (default the hub's); clamped to the hub's longest and to the budget's expiry",
    ),
})
/** A parsed reserve. */
export type ReserveInput = z.output<typeof ReserveInput>

/** The body of a settle: what the held call really cost; 0 releases the hold. */
export const SettleInput = z.strictObject({
  amountMicros: Micros.describe(
    'What the call cost: the hold is released and this is charged; above the hold, the excess must fit',
  ),
})
/** A parsed settle. */
export type SettleInput = z.infer<typeof SettleInput>

const DidKey = z
  .string()
  .regex(/^did:key:z[1-9A-HJ-NP-Za-km-z]{1,128}$/, 'a did:key')
  .describe('A principal (did:key)')

/** The body that names who may report spend on a budget beside its delegate, replacing the list. */
export const ReportersInput = z.strictObject({
  reporters: z
    .array(DidKey)
    .max(BUDGET_LIMITS.maxReporters)
    .describe('Runtimes that report spend for the delegate; an empty list names none'),
})
/** A parsed reporters list. */
export type ReportersInput = z.infer<typeof ReportersInput>

/** Where a budget stands: open, closed (its hop ended, or an ancestor's), or past its expiry. */
export const BudgetState = z.enum(['open', 'closed', 'expired'])

/**
 * One hop's ledger, in micro-units of `unit`: `granted` = `reserved` (what its open
 * sub-delegations hold unspent) + `held` (open holds) + `spent` (its own spend and every
 * descendant's) + `remaining`. A closed budget has released `released` to its parent.
 */
export const BudgetView = z.object({
  hop: z.string().describe('The handoff digest of the hop'),
  parent: z.string().nullable().describe('The hop it was reserved from; null for a root budget'),
  iss: z.string().describe('The delegator, who granted it'),
  aud: z.string().describe('The delegate, who spends it'),
  unit: z.string(),
  grantedMicros: z.number().int(),
  reservedMicros: z.number().int().describe('Reserved by open sub-delegations, unspent'),
  heldMicros: z.number().int().describe('Held by open reserves, unsettled'),
  spentMicros: z.number().int().describe('Spent here and below'),
  remainingMicros: z.number().int(),
  releasedMicros: z.number().int().describe('What went back to the parent when it closed'),
  rateMicrosPerSecond: z.number().int().nullable(),
  state: BudgetState,
  closedReason: z
    .string()
    .nullable()
    .describe('completed, failed, canceled, rejected, expired, or upstream (an ancestor closed)'),
  children: z.number().int().describe('Open sub-delegations'),
  holds: z.number().int().describe('Open holds'),
  crossings: z.number().int().describe('Reports refused because they would have crossed it'),
  reporters: z.array(z.string()).describe('Principals the delegate named to report spend'),
  expiresAt: z.iso.datetime(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  closedAt: z.iso.datetime().nullable(),
})
/** One hop's ledger. */
export type BudgetView = z.infer<typeof BudgetView>

/** The budgets of a delegation chain through a hop, oldest first, as far as the caller took part. */
export const BudgetChainView = z.object({ budgets: z.array(BudgetView) })
/** A budget chain. */
export type BudgetChainView = z.infer<typeof BudgetChainView>

/** The answer to a spend report: the ledger after it; `repeated` for a key already charged. */
export const SpendView = z.object({
  hop: z.string(),
  idempotencyKey: z.string(),
  amountMicros: z.number().int(),
  repeated: z
    .boolean()
    .describe('True when this key was already charged; nothing was charged again'),
  budget: BudgetView,
})
/** A spend answer. */
export type SpendView = z.infer<typeof SpendView>

/** Where a hold stands: held, settled (charged what the call cost) or released unsettled. */
export const HoldState = z.enum(['held', 'settled', 'released'])

/** A hold: an amount reserved before a call, settled or released after. */
export const HoldView = z.object({
  holdId: z.string(),
  hop: z.string(),
  holder: z.string().describe('Who reserved it, and may settle it beside the delegate'),
  idempotencyKey: z.string(),
  amountMicros: z.number().int(),
  state: HoldState,
  settledMicros: z.number().int().nullable().describe('What the settle charged; null before'),
  expiresAt: z.iso.datetime(),
  createdAt: z.iso.datetime(),
  settledAt: z.iso.datetime().nullable(),
  repeated: z.boolean().describe('True when this reserve or settle repeats one already made'),
  budget: BudgetView,
})
/** A hold answer. */
export type HoldView = z.infer<typeof HoldView>

/**
 * A budget crossing as the hub records it and delivers it to the delegator: the report that was
 * refused, the remaining it would have crossed, and who sent it. Its canonical JSON is the
 * delivery's `element`; the delivery receipt signs its digest.
 */
export interface BudgetCrossing {
  v: 1
  type: typeof BUDGET_CROSSING_TYPE
  hop: string
  unit: string
  kind: 'spend' | 'hold' | 'settle'
  key: string
  requestedMicros: number
  remainingMicros: number
  reporter: string
  at: string
}
