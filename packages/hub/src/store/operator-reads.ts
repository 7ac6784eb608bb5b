import { type Kysely, sql } from 'kysely'
import type { Schema } from './schema.js'

/**
 * Shared parts of the operator's reads (the dashboard and its admin operations): each feature's
 * store counts and buckets its own tables with these, in the SQL subset both dialects share.
 */

type Db = Kysely<Schema>

/** An epoch-millisecond time as the wire shows it, or null. */
export const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString()

/** A count or sum as a number, whatever the driver answered (PostgreSQL counts are text). */
export const num = (v: unknown) => Number(v ?? 0)

/** Stored JSON text parsed for display; text that is not JSON is shown as it is. */
export function parseStored(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** How the overview's activity charts are cut: `buckets` intervals of `bucketMs` up to now. */
export const ACTIVITY = { buckets: 60, bucketMs: 60_000 } as const

/** The first bucket's start of the activity ending at `now`. */
export const activityStart = (now: number) =>
  (Math.floor(now / ACTIVITY.bucketMs) + 1 - ACTIVITY.buckets) * ACTIVITY.bucketMs

/** Rows of `table` per activity bucket by their `column` time, oldest bucket first. */
export async function activitySeries(
  db: Db,
  table: 'handoff_moves' | 'messages' | 'resource_versions' | 'transfer_events',
  column: 'at' | 'created_at',
  now: number,
): Promise<number[]> {
  const { buckets, bucketMs } = ACTIVITY
  const end = Math.floor(now / bucketMs) + 1
  const start = end - buckets
  const bucket = sql<number>`(${sql.ref(column)} / ${sql.lit(bucketMs)})`
  const rows = await db
    .selectFrom(table)
    .select([bucket.as('b'), sql<number>`count(*)`.as('n')])
    .where(column, '>=', start * bucketMs)
    .groupBy(bucket)
    .execute()
  const out = new Array<number>(buckets).fill(0)
  for (const r of rows) {
    const i = Math.floor(num(r.b)) - start
    if (i >= 0 && i < buckets) out[i] = (out[i] ?? 0) + num(r.n)
  }
  return out
}

/** Rows of `table` per `state`; states with none are absent. */
export async function countStates(
  db: Db,
  table: 'principals' | 'a2a_tasks' | 'compute_jobs' | 'hops',
): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom(table)
    .select(['state', sql<number>`count(*)`.as('n')])
    .groupBy('state')
    .execute()
  const out: Record<string, number> = {}
  for (const r of rows) out[r.state] = num(r.n)
  return out
}
