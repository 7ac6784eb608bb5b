import { BatonError, type UsageView } from '@baton/protocol'
import type { TransferRow } from '../store/schema.js'
import { transition, type WriteSet } from './machine.js'
import { conflict, iso, type Outcome, toUsage } from './views.js'

/** A usage report of the claiming runtime (seed 004 report_usage). */
export interface UsageReport {
  runtime: string
  key: string
  amount: number
}

/** The key of a usage report in a write set. */
export const usageKey = (id: string, key: string) => `${id}\0${key}`

/**
 * Decides one usage report in the write set: idempotent by key, spend added only while active or
 * insolvent, and the insolvency flip exactly once, in the same commit as the spend that caused it.
 */
export function decideUsage(
  w: WriteSet,
  row: TransferRow,
  m: UsageReport,
  graceMs: number,
): Outcome<UsageView> {
  const prior = w.usage.get(usageKey(row.id, m.key))
  if (prior) {
    if (prior.amount_micros !== m.amount) {
      return {
        ok: false,
        error: new BatonError(
          'idempotency_conflict',
          'This usage key was already reported with another amount',
          { amountMicros: prior.amount_micros },
        ),
      }
    }
    return { ok: true, value: toUsage(row, true) }
  }
  if (row.state !== 'active' && row.state !== 'insolvent') {
    return { ok: false, error: conflict(row, 'report usage') }
  }
  w.patch(row, { spent_micros: row.spent_micros + m.amount, updated_at: w.now })
  const report = {
    transfer_id: row.id,
    idempotency_key: m.key,
    amount_micros: m.amount,
    spent_after: row.spent_micros,
    reporter: m.runtime,
    at: w.now,
  }
  w.usage.set(usageKey(row.id, m.key), report)
  w.newUsage.push(report)
  if (
    row.state === 'active' &&
    row.budget_micros !== null &&
    row.spent_micros >= row.budget_micros
  ) {
    const graceEndsAt = w.now + graceMs
    transition(w, row, 'insolvent', {
      actor: m.runtime,
      patch: { grace_ends_at: graceEndsAt },
      data: {
        spentMicros: row.spent_micros,
        budgetMicros: row.budget_micros,
        graceEndsAt: iso(graceEndsAt),
      },
    })
  }
  return { ok: true, value: toUsage(row, false) }
}
