import { BatonError } from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Schema } from './schema.js'

const DAY_MS = 24 * 60 * 60 * 1000

/** The start of the UTC day holding `at`, in epoch milliseconds. */
export function utcDayStart(at: number): number {
  return Math.floor(at / DAY_MS) * DAY_MS
}

/**
 * Counts one use against a per-UTC-day quota inside the caller's transaction, so a refused or
 * rolled-back write is never counted. Throws `rate_limited` with Retry-After when over the limit.
 */
export async function consumeDailyQuota(
  db: Kysely<Schema>,
  q: { scope: string; subject: string; limit: number; now: number },
): Promise<void> {
  const windowStart = utcDayStart(q.now)
  const row = await db
    .insertInto('quota_counters')
    .values({ scope: q.scope, subject: q.subject, window_start: windowStart, count: 1 })
    .onConflict((oc) =>
      oc
        .columns(['scope', 'subject', 'window_start'])
        .doUpdateSet((eb) => ({ count: eb('quota_counters.count', '+', 1) })),
    )
    .returning('count')
    .executeTakeFirstOrThrow()
  if (row.count > q.limit) throw quotaExceeded(q.scope, q.limit, q.now)
}

/** The refusal of a used-up daily quota, with Retry-After until the next UTC day. */
export function quotaExceeded(scope: string, limit: number, now: number): BatonError {
  return windowQuotaExceeded(scope, limit, now, DAY_MS)
}

/**
 * Counts many uses against per-UTC-day quotas at once (one row per subject) and answers each
 * subject's count after them, so the caller can tell which uses passed the limit.
 */
export function consumeDailyQuotas(
  db: Kysely<Schema>,
  q: { scope: string; uses: Map<string, number>; now: number },
): Promise<Map<string, number>> {
  return consumeWindowQuotas(db, { ...q, windowMs: DAY_MS })
}

/**
 * Counts many uses against per-UTC-day quotas at once, only as far as each subject's `limit`:
 * answers how many of each subject's uses were counted (its first ones), the rest refused and
 * not counted. One statement when nobody reaches a limit; one more for subjects that do.
 */
export async function consumeDailyQuotasUpTo(
  db: Kysely<Schema>,
  q: { scope: string; uses: Map<string, number>; limit: number; now: number },
): Promise<Map<string, number>> {
  const after = await consumeDailyQuotas(db, q)
  const counted = new Map<string, number>()
  const windowStart = utcDayStart(q.now)
  for (const [subject, uses] of q.uses) {
    const over = Math.min(uses, Math.max(0, after.get(subject)! - q.limit))
    counted.set(subject, uses - over)
    if (over > 0) {
      await db
        .updateTable('quota_counters')
        .set((eb) => ({ count: eb('count', '-', over) }))
        .where('scope', '=', q.scope)
        .where('subject', '=', subject)
        .where('window_start', '=', windowStart)
        .execute()
    }
  }
  return counted
}

/** Deletes counters of days before `now`'s day. */
export async function pruneQuotaCounters(db: Kysely<Schema>, now: number): Promise<number> {
  const res = await db
    .deleteFrom('quota_counters')
    .where('window_start', '<', utcDayStart(now))
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/** The start of the fixed window of `windowMs` holding `at`, in epoch milliseconds. */
export function windowStart(at: number, windowMs: number): number {
  return Math.floor(at / windowMs) * windowMs
}

/**
 * Counts uses against a fixed-window quota (such as per hour) inside the caller's transaction,
 * one row per subject, and answers each subject's count after them; the caller decides which
 * uses passed the limit. Windows shorter than a day are pruned with the daily counters.
 */
export async function consumeWindowQuotas(
  db: Kysely<Schema>,
  q: { scope: string; uses: Map<string, number>; now: number; windowMs: number },
): Promise<Map<string, number>> {
  if (q.uses.size === 0) return new Map()
  const start = windowStart(q.now, q.windowMs)
  const rows = await db
    .insertInto('quota_counters')
    .values(
      [...q.uses].map(([subject, n]) => ({
        scope: q.scope,
        subject,
        window_start: start,
        count: n,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['scope', 'subject', 'window_start']).doUpdateSet((eb) => ({
        count: eb('quota_counters.count', '+', eb.ref('excluded.count')),
      })),
    )
    .returning(['subject', 'count'])
    .execute()
  return new Map(rows.map((r) => [r.subject, r.count]))
}

/** The refusal of a used-up fixed-window quota, with Retry-After until the window ends. */
export function windowQuotaExceeded(
  scope: string,
  limit: number,
  now: number,
  windowMs: number,
): BatonError {
  const retryAfter = Math.max(1, Math.ceil((windowStart(now, windowMs) + windowMs - now) / 1000))
  const per = windowMs === DAY_MS ? 'UTC day' : `${windowMs / 1000} s`
  return new BatonError(
    'rate_limited',
    `Quota of ${limit} ${scope} per ${per} is used up`,
    { limit, retry_after: retryAfter },
    { 'retry-after': String(retryAfter) },
  )
}

/**
 * Changes a principal's stored bytes by `delta` inside the caller's transaction: a growth commits
 * only if the total stays within `limit`, checked and written in one conditional statement (the
 * row lock of that update orders writers on every instance; never read-then-write). A shrink
 * always commits. Throws `storage_quota_exceeded` with what is used when over the limit.
 */
export async function changeStoredBytes(
  db: Kysely<Schema>,
  c: { principal: string; delta: number; limit?: number | undefined },
): Promise<void> {
  if (c.delta === 0) return
  const { delta, limit } = c
  const guarded = delta > 0 && limit !== undefined
  if (guarded && delta > limit)
    throw storageQuotaExceeded(delta, limit, await storedBytes(db, c.principal))
  const row = await db
    .insertInto('usage_counters')
    .values({ principal: c.principal, stored_bytes: Math.max(0, delta) })
    .onConflict((oc) => {
      const update = oc.column('principal').doUpdateSet((eb) => ({
        stored_bytes: eb('usage_counters.stored_bytes', '+', delta),
      }))
      return guarded
        ? update.where((eb) => eb(eb('usage_counters.stored_bytes', '+', delta), '<=', limit))
        : update
    })
    .returning('stored_bytes')
    .executeTakeFirst()
  if (!row && guarded) {
    throw storageQuotaExceeded(delta, limit, await storedBytes(db, c.principal))
  }
}

/**
 * {@link changeStoredBytes} that answers whether a growth fits within `limit` (and was counted)
 * instead of refusing it, for a charge the caller drops when it does not fit.
 */
export async function tryChangeStoredBytes(
  db: Kysely<Schema>,
  c: { principal: string; delta: number; limit: number },
): Promise<boolean> {
  try {
    await changeStoredBytes(db, c)
    return true
  } catch (error) {
    if (error instanceof BatonError && error.code === 'storage_quota_exceeded') return false
    throw error
  }
}

/** A principal's stored bytes over its resources and home files, 0 when it stores nothing. */
export async function storedBytes(db: Kysely<Schema>, principal: string): Promise<number> {
  const row = await db
    .selectFrom('usage_counters')
    .select('stored_bytes')
    .where('principal', '=', principal)
    .executeTakeFirst()
  return Number(row?.stored_bytes ?? 0)
}

function storageQuotaExceeded(adding: number, limit: number, used: number): BatonError {
  return new BatonError(
    'storage_quota_exceeded',
    `Storing ${adding} more bytes would pass the quota of ${limit} bytes`,
    { limit, used },
  )
}
