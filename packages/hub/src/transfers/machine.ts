import { BatonError, type TransferState } from '@baton/protocol'
import type { TransferEventRow, TransferRow, TransferUsageRow } from '../store/schema.js'
import { type HandedTrace, traceColumns } from '../telemetry/trace-context.js'
import { conflict } from './views.js'

/**
 * The transfer lifecycle as data (seed 004): every change of a transfer's state or version is one
 * of these transitions, named by the event it writes. `to: null` keeps the state (a claim, a
 * refused push, a lease taken): the version still moves, so waiters wake and readers see it.
 */
export const TRANSITIONS = {
  provisioned: { from: ['staged'], to: 'provisioned' },
  claimed: { from: ['provisioned'], to: null },
  checksum_mismatch: { from: ['provisioned'], to: null },
  pushed: { from: ['provisioned'], to: 'pushed' },
  active: { from: ['pushed'], to: 'active' },
  started: { from: ['active'], to: null },
  restarted: { from: ['active'], to: null },
  insolvent: { from: ['active'], to: 'insolvent' },
  // seed 004 fault: expiry logged no event; here it is one, in the same transaction.
  expired: { from: ['staged', 'provisioned', 'pushed'], to: 'terminated' },
  terminated: {
    from: ['staged', 'provisioned', 'pushed', 'active', 'insolvent'],
    to: 'terminated',
  },
} as const satisfies Record<string, { from: readonly TransferState[]; to: TransferState | null }>

/** A transition's name: the type of the event it writes. */
export type TransitionName = keyof typeof TRANSITIONS

/**
 * What a group of transfer writes decided, in memory, before any of it is written: the rows it
 * read (locked) and changed, the events, token uses and usage reports to insert, and what to
 * publish once they commit. Every input's decisions see those of the inputs before it.
 */
export class WriteSet {
  /** The rows as read, by id; changed in place as inputs are decided. */
  readonly rows = new Map<string, TransferRow>()
  /** The version each row had when read: the compare-and-set of the one update. */
  readonly readVersion = new Map<string, number>()
  readonly dirty = new Set<string>()
  /** Each row's event log as read, with the group's own events appended. */
  readonly logs = new Map<string, TransferEventRow[]>()
  readonly events: TransferEventRow[] = []
  readonly tokenUses: { jti: string; transfer_id: string; scope: string; used_at: number }[] = []
  readonly usedJtis = new Set<string>()
  /** Usage reports by transfer and key, as read and as reported by the group. */
  readonly usage = new Map<string, Pick<TransferUsageRow, 'amount_micros'>>()
  readonly newUsage: TransferUsageRow[] = []
  readonly snapshots = new Map<string, string>()
  /** Transfers staged by the group, with their snapshot content. */
  readonly created: { row: TransferRow; content: string }[] = []
  /** Transfers by owner and idempotency key, as read and as staged by the group. */
  readonly keyed = new Map<string, TransferRow>()

  constructor(readonly now: number) {}

  /** Changes fields of a row without an event or a new version (spend, a lease renewal). */
  patch(row: TransferRow, patch: Partial<TransferRow>): void {
    Object.assign(row, patch)
    this.dirty.add(row.id)
  }
}

/** A transition applied in memory, and the event it wrote. */
export interface Applied {
  row: TransferRow
  event: TransferEventRow
}

/**
 * The one conditional write of the lifecycle: refuses a transition whose `from` does not hold
 * (`transfer_state_conflict`, naming `wanted`), else moves the row, bumps its version and writes
 * the transition's event, all in the write set. The write set's one update compares each row's
 * version with the one it read, so a concurrent writer makes the whole group retry, never lose.
 */
export function transition(
  w: WriteSet,
  row: TransferRow,
  name: TransitionName,
  m: {
    actor: string
    data: Record<string, unknown>
    patch?: Partial<TransferRow>
    wanted?: string
    /** The trace context the move hands on to the runtime (`TransferEventRow.trace`). */
    trace?: HandedTrace | undefined
  },
): Applied | BatonError {
  const t = TRANSITIONS[name]
  if (!(t.from as readonly string[]).includes(row.state)) return conflict(row, m.wanted ?? name)
  const from = row.state as TransferState
  const to = t.to ?? from
  Object.assign(row, m.patch, { state: to, version: row.version + 1, updated_at: w.now })
  w.dirty.add(row.id)
  const event: TransferEventRow = {
    transfer_id: row.id,
    seq: row.version,
    type: name,
    from_state: from,
    to_state: to,
    actor: m.actor,
    data: JSON.stringify(m.data),
    at: w.now,
    ...traceColumns(m.trace),
  }
  w.events.push(event)
  w.logs.get(row.id)?.push(event)
  return { row, event }
}

/** Whether a transition failed. */
export const refused = (a: Applied | BatonError): a is BatonError => a instanceof BatonError
