import { type Kysely, sql } from 'kysely'
import type { NotifyOutboxRow, Schema } from '../store/schema.js'

/** SQL for the notify outbox, in the subset both dialects share. Every function takes the db or a tx. */

/**
 * Adds signals in one statement, called inside the transaction of the moves that caused them.
 * Their numbers come from one counter row, locked until that transaction ends, so numbers
 * follow commit order on every instance and a rolled-back move frees its numbers.
 */
export async function insertSignals(
  db: Kysely<Schema>,
  rows: Omit<NotifyOutboxRow, 'seq'>[],
): Promise<void> {
  if (rows.length === 0) return
  const counter = await db
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', rows.length) }))
    .where('name', '=', 'notify_sequence')
    .returning('value')
    .executeTakeFirstOrThrow()
  const first = Number(counter.value) - rows.length + 1
  await db
    .insertInto('notify_outbox')
    .values(rows.map((r, i) => ({ ...r, seq: first + i })))
    .execute()
}

/**
 * Pending signals due at `now`, not leased, and each the oldest pending signal to its URL:
 * a later signal waits for every earlier one to the same URL to be delivered or dead.
 */
export async function dueHeads(
  db: Kysely<Schema>,
  now: number,
  limit: number,
): Promise<NotifyOutboxRow[]> {
  return db
    .selectFrom('notify_outbox as o')
    .selectAll('o')
    .where('o.status', '=', 'pending')
    .where('o.next_at', '<=', now)
    .where('o.leased_until', '<', now)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('notify_outbox as p')
            .select(sql`1`.as('one'))
            .whereRef('p.url', '=', 'o.url')
            .where('p.status', '=', 'pending')
            .whereRef('p.seq', '<', 'o.seq'),
        ),
      ),
    )
    .orderBy('o.next_at')
    .orderBy('o.seq')
    .limit(limit)
    .execute()
}

/**
 * Claims one signal for `owner` until `until` by compare-and-set on the lease: of many hub
 * instances, only the one whose update changes the row delivers it.
 */
export async function claim(
  db: Kysely<Schema>,
  eventId: string,
  owner: string,
  now: number,
  until: number,
): Promise<boolean> {
  const res = await db
    .updateTable('notify_outbox')
    .set({ leased_until: until, lease_owner: owner })
    .where('event_id', '=', eventId)
    .where('status', '=', 'pending')
    .where('next_at', '<=', now)
    .where('leased_until', '<', now)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Records an attempt's result, only while `owner` still holds the lease. */
export async function settle(
  db: Kysely<Schema>,
  eventId: string,
  owner: string,
  change: Pick<NotifyOutboxRow, 'status' | 'attempts' | 'next_at' | 'last_outcome' | 'done_at'>,
): Promise<boolean> {
  const res = await db
    .updateTable('notify_outbox')
    .set({ ...change, leased_until: 0, lease_owner: null })
    .where('event_id', '=', eventId)
    .where('lease_owner', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Signals by status, for metrics and the dashboard. */
export async function countByStatus(db: Kysely<Schema>): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('notify_outbox')
    .select(['status', sql<number>`count(*)`.as('n')])
    .groupBy('status')
    .execute()
  const out: Record<string, number> = { pending: 0, delivered: 0, dead: 0 }
  for (const r of rows) out[r.status] = Number(r.n)
  return out
}

/** The oldest signals of one status, without their URL's path or query. */
export async function oldest(
  db: Kysely<Schema>,
  status: NotifyOutboxRow['status'],
  limit: number,
): Promise<NotifyOutboxRow[]> {
  return db
    .selectFrom('notify_outbox')
    .selectAll()
    .where('status', '=', status)
    .orderBy('seq')
    .limit(limit)
    .execute()
}

/** One signal by its event id. */
export async function findSignal(
  db: Kysely<Schema>,
  eventId: string,
): Promise<NotifyOutboxRow | undefined> {
  return db
    .selectFrom('notify_outbox')
    .selectAll()
    .where('event_id', '=', eventId)
    .executeTakeFirst()
}

/** Removes delivered signals finished before `deliveredBefore` and dead ones before `deadBefore`. */
export async function prune(
  db: Kysely<Schema>,
  deliveredBefore: number,
  deadBefore: number,
): Promise<number> {
  const res = await db
    .deleteFrom('notify_outbox')
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'delivered'), eb('done_at', '<', deliveredBefore)]),
        eb.and([eb('status', '=', 'dead'), eb('done_at', '<', deadBefore)]),
      ]),
    )
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}
