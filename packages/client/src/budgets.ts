import { randomBytes } from 'node:crypto'
import {
  BatonError,
  type BudgetChainView,
  type BudgetView,
  contracts,
  type HoldView,
  type SpendView,
} from '@baton/protocol'
import type { SignedClient } from './signed-client.js'

/** A fresh idempotency key: 128 random bits, base64url. */
const newKey = () => randomBytes(16).toString('base64url')

/**
 * Budgets on delegations through a hub (issue 28): read the ledgers of a chain, report spend,
 * reserve before an expensive call and settle after it, and name the runtimes that report for you.
 * Each method throws a BatonError with the hub's code (`budget_exceeded` when a report would
 * cross the budget: nothing was charged, and the delegator was told).
 *
 * @example
 * const budgets = new BudgetClient(client)
 * await budgets.spend(hop.digest, 12_500, { idempotencyKey: 'call-17' })
 */
export class BudgetClient {
  constructor(readonly client: SignedClient) {}

  /** The budgets of the delegation chain through a hop, as far as this identity took part. */
  read(digest: string): Promise<BudgetChainView> {
    return this.client.call(contracts.readBudget, { params: { digest } })
  }

  /** Reports spend once per key (a fresh key when none is given; give one to retry safely). */
  spend(
    digest: string,
    amountMicros: number,
    opts: { idempotencyKey?: string; note?: string } = {},
  ): Promise<SpendView> {
    return this.client.call(contracts.reportSpend, {
      params: { digest },
      body: {
        idempotencyKey: opts.idempotencyKey ?? newKey(),
        amountMicros,
        ...(opts.note === undefined ? {} : { note: opts.note }),
      },
    })
  }

  /** Holds an amount before a call, once per key; settle it after with {@link settle}. */
  reserve(
    digest: string,
    amountMicros: number,
    opts: { idempotencyKey?: string; ttlSeconds?: number } = {},
  ): Promise<HoldView> {
    return this.client.call(contracts.reserveBudget, {
      params: { digest },
      body: {
        idempotencyKey: opts.idempotencyKey ?? newKey(),
        amountMicros,
        ...(opts.ttlSeconds === undefined ? {} : { ttlSeconds: opts.ttlSeconds }),
      },
    })
  }

  /** Settles a hold with what the call cost (0 releases it); repeating it answers the same. */
  settle(digest: string, holdId: string, amountMicros: number): Promise<HoldView> {
    return this.client.call(contracts.settleBudget, {
      params: { digest, hold: holdId },
      body: { amountMicros },
    })
  }

  /** As the delegate, names the runtimes that may report on the budget, replacing the list. */
  nameReporters(digest: string, reporters: readonly string[]): Promise<BudgetView> {
    return this.client.call(contracts.nameBudgetReporters, {
      params: { digest },
      body: { reporters: [...reporters] },
    })
  }

  /** The budget of one hop, to wrap calls in reserve and settle. */
  of(digest: string): Budget {
    return new Budget(this, digest)
  }
}

/** What {@link Budget.run} accepts beside the estimate and the call. */
export interface BudgetRunOptions {
  /** The key of the reserve (a fresh one by default); the same key retries the same hold. */
  idempotencyKey?: string
  /** How long the hold lasts unsettled (the hub's default when absent; it clamps). */
  ttlSeconds?: number
  /**
   * Whether a settle adds wall time at the budget's `rateMicrosPerSecond`, metered as seed 004's
   * runtime does (default true when the budget has a rate).
   */
  meterWallTime?: boolean
  /** Clock in milliseconds for wall time (default performance.now). */
  now?: () => number
}

/** Settles the hold of a {@link Budget.run} with what the call cost. */
export type Settle = (amountMicros: number) => Promise<HoldView>

/**
 * One hop's budget, to wrap an expensive call (a model call, a paid tool) in reserve and settle:
 * the worst case is held before the call, and the call is never made when the hold is refused.
 *
 * @example
 * const budget = new BudgetClient(client).of(hop.digest)
 * const reply = await budget.run(40_000, async (settle) => {
 *   const res = await model.generate(prompt)
 *   await settle(res.usage.costMicros)
 *   return res
 * })
 */
export class Budget {
  constructor(
    private readonly budgets: BudgetClient,
    readonly digest: string,
  ) {}

  /**
   * Holds `estimateMicros`, runs `call`, and settles the hold: with what `call` passes to
   * `settle` (plus wall time at the budget's rate), or, when it settles nothing, with the whole
   * estimate, whether it returned or threw. A refused hold throws `budget_exceeded` before `call`
   * runs. A settle above the hold that does not fit is refused (the hub records the crossing);
   * the hold is then settled at its own amount and the refusal is thrown.
   */
  async run<T>(
    estimateMicros: number,
    call: (settle: Settle) => Promise<T>,
    opts: BudgetRunOptions = {},
  ): Promise<T> {
    const hold = await this.budgets.reserve(this.digest, estimateMicros, {
      ...(opts.idempotencyKey === undefined ? {} : { idempotencyKey: opts.idempotencyKey }),
      ...(opts.ttlSeconds === undefined ? {} : { ttlSeconds: opts.ttlSeconds }),
    })
    const now = opts.now ?? (() => performance.now())
    const started = now()
    const rate = hold.budget.rateMicrosPerSecond ?? 0
    const meter = opts.meterWallTime ?? rate > 0
    let settled: Promise<HoldView> | undefined
    const settle: Settle = (amountMicros) => {
      if (settled) return settled
      // seed 004: wall time is charged as (elapsed ms × rate) / 1000 in integer arithmetic.
      const wall = meter
        ? Number((BigInt(Math.max(0, Math.round(now() - started))) * BigInt(rate)) / 1000n)
        : 0
      settled = this.settleHold(hold, amountMicros + wall)
      return settled
    }
    try {
      const result = await call(settle)
      await settle(estimateMicros)
      return result
    } catch (error) {
      if (!settled) await settle(estimateMicros).catch(() => {})
      throw error
    }
  }

  private async settleHold(hold: HoldView, amountMicros: number): Promise<HoldView> {
    try {
      return await this.budgets.settle(this.digest, hold.holdId, amountMicros)
    } catch (error) {
      if (!(error instanceof BatonError) || error.code !== 'budget_exceeded') throw error
      // What was held is charged; the excess that did not fit is on record as a crossing.
      await this.budgets.settle(this.digest, hold.holdId, hold.amountMicros).catch(() => {})
      throw error
    }
  }
}
