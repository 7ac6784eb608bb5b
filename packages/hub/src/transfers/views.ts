import {
  BatonError,
  EXPIRING_STATES,
  type TransferEventView,
  type TransferState,
  type TransferView,
  type UsageView,
} from '@baton/protocol'
import type { TransferEventRow, TransferRow } from '../store/schema.js'
import { type HandedTrace, traceFields } from '../telemetry/trace-context.js'

/** What callers see of a transfer, and the refusals every transfer write shares. */

/** The actor name of the operator (admin token); principals are did:key URIs, never this. */
export const OPERATOR = 'operator'
/** The actor name of the hub itself (the reaper). */
export const HUB = 'hub'

/** The event topic of one transfer. */
export const transferTopic = (id: string) => `transfer:${id}`

export const iso = (ms: number) => new Date(ms).toISOString()
export const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms))

export const isTransferId = (id: string) => /^tr_[A-Za-z0-9_-]{22}$/.test(id)

/** A write's outcome: a value to answer, or an error to throw once its own writes commit. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: BatonError }

export function notFound(id: string): BatonError {
  return new BatonError('transfer_not_found', `No transfer ${JSON.stringify(id)} visible to you`)
}

export function conflict(row: TransferRow, wanted: string): BatonError {
  return new BatonError(
    'transfer_state_conflict',
    `Transfer is ${row.state}; ${wanted} is not possible from there`,
    { state: row.state, version: row.version, endReason: row.end_reason },
  )
}

export function expiredError(row: TransferRow): BatonError {
  return new BatonError('transfer_expired', `Transfer ${row.id} expired in state ${row.state}`, {
    state: 'terminated',
    expiredFrom: row.state,
    expiredAt: isoOrNull(row.expires_at),
  })
}

export const isDue = (row: TransferRow, now: number) =>
  (EXPIRING_STATES as string[]).includes(row.state) &&
  row.expires_at !== null &&
  row.expires_at <= now

export function toUsage(row: TransferRow, repeated: boolean): UsageView {
  const budget = row.budget_micros ?? 0
  return {
    transferId: row.id,
    state: row.state as TransferState,
    spentMicros: row.spent_micros,
    budgetMicros: budget,
    remainingMicros: Math.max(0, budget - row.spent_micros),
    stop: row.state !== 'active',
    graceEndsAt: isoOrNull(row.grace_ends_at),
    repeated,
  }
}

function toEventView(e: TransferEventRow): TransferEventView {
  return {
    seq: e.seq,
    type: e.type,
    from: e.from_state as TransferState | null,
    to: e.to_state as TransferState,
    actor: e.actor,
    at: iso(e.at),
    data: JSON.parse(e.data) as Record<string, unknown>,
  }
}

export function toView(row: TransferRow, events: TransferEventRow[]): TransferView {
  return {
    transferId: row.id,
    state: row.state as TransferState,
    version: row.version,
    owner: row.owner,
    runtime: row.runtime,
    tier: row.tier,
    budgetMicros: row.budget_micros,
    rateMicrosPerSecond: row.rate_micros,
    spentMicros: row.spent_micros,
    remainingMicros:
      row.budget_micros === null ? null : Math.max(0, row.budget_micros - row.spent_micros),
    checksum: row.checksum,
    snapshotBytes: row.snapshot_bytes,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    expiresAt: (EXPIRING_STATES as string[]).includes(row.state) ? isoOrNull(row.expires_at) : null,
    graceEndsAt: isoOrNull(row.grace_ends_at),
    endReason: row.end_reason,
    events: events.map(toEventView),
    ...handedOnTrace(events),
  }
}

/** The trace context of the latest event that handed the transfer on (staged, then provisioned). */
function handedOnTrace(events: TransferEventRow[]): Partial<HandedTrace> {
  const handed = events.findLast((e) => e.trace)
  return handed ? traceFields(handed) : {}
}
