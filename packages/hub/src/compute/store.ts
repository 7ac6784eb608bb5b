import type { Kysely } from 'kysely'
import type { ComputeJobRow, ComputeRuntimeRow, Schema } from '../store/schema.js'

type Db = Kysely<Schema>

/** States of a job that is not yet ended; `finishing` is a result accepted, its write pending. */
export const ACTIVE_STATES = ['queued', 'running', 'finishing'] as const

export async function insertJob(db: Db, row: ComputeJobRow): Promise<void> {
  await db.insertInto('compute_jobs').values(row).execute()
}

export async function findJob(db: Db, id: string): Promise<ComputeJobRow | undefined> {
  return db.selectFrom('compute_jobs').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function findByKey(
  db: Db,
  owner: string,
  key: string,
): Promise<ComputeJobRow | undefined> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('owner', '=', owner)
    .where('idempotency_key', '=', key)
    .executeTakeFirst()
}

/** The owner's most recent jobs, newest first. */
export async function listJobs(db: Db, owner: string, limit: number): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('owner', '=', owner)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute()
}

/** The oldest jobs a runtime serving `languages` may claim now: queued, or leased past their lease. */
export async function claimable(
  db: Db,
  languages: readonly string[],
  now: number,
  limit: number,
): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('language', 'in', languages)
    .where((eb) =>
      eb.or([
        eb('state', '=', 'queued'),
        eb.and([eb('state', '=', 'running'), eb('lease_until', '<=', now)]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute()
}

/**
 * Claims a job by compare-and-set on its version: it commits only if nobody moved the job since
 * it was read, so of many runtimes (on many instances) exactly one wins each claim.
 */
export async function casClaim(
  db: Db,
  c: {
    id: string
    version: number
    runtimeId: string
    leaseId: string
    now: number
    until: number
  },
): Promise<boolean> {
  const res = await db
    .updateTable('compute_jobs')
    .set((eb) => ({
      state: 'running',
      version: c.version + 1,
      attempts: eb('attempts', '+', 1),
      runtime_id: c.runtimeId,
      lease_id: c.leaseId,
      lease_until: c.until,
      updated_at: c.now,
    }))
    .where('id', '=', c.id)
    .where('version', '=', c.version)
    .where((eb) =>
      eb.or([
        eb('state', '=', 'queued'),
        eb.and([eb('state', '=', 'running'), eb('lease_until', '<=', c.now)]),
      ]),
    )
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Extends a lease only for its holder while it is still live. */
export async function casRenew(
  db: Db,
  c: { id: string; leaseId: string; now: number; until: number },
): Promise<boolean> {
  const res = await db
    .updateTable('compute_jobs')
    .set({ lease_until: c.until })
    .where('id', '=', c.id)
    .where('state', '=', 'running')
    .where('lease_id', '=', c.leaseId)
    .where('lease_until', '>', c.now)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/**
 * Moves a job from one of `from` to `to` with its patch, checked and written in one statement;
 * with `leaseId`, only while that lease is the job's and live. Answers the new version.
 */
export async function casMove(
  db: Db,
  m: {
    id: string
    from: readonly string[]
    to: string
    now: number
    leaseId?: string
    /** Only while the job's lease has run out (the reaper's guard against a renewal). */
    expiredLease?: boolean
    patch?: Partial<ComputeJobRow>
  },
): Promise<number | undefined> {
  let q = db
    .updateTable('compute_jobs')
    .set((eb) => ({
      ...m.patch,
      state: m.to,
      version: eb('version', '+', 1),
      updated_at: m.now,
    }))
    .where('id', '=', m.id)
    .where('state', 'in', m.from)
  if (m.leaseId !== undefined) {
    q = q.where('lease_id', '=', m.leaseId).where('lease_until', '>', m.now)
  }
  if (m.expiredLease) q = q.where('lease_until', '<=', m.now)
  const row = await q.returning('version').executeTakeFirst()
  return row?.version
}

/** Jobs whose lease ran out `maxAttempts` times: no runtime will be offered them again. */
export async function exhausted(
  db: Db,
  now: number,
  maxAttempts: number,
): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('state', '=', 'running')
    .where('lease_until', '<=', now)
    .where('attempts', '>=', maxAttempts)
    .limit(100)
    .execute()
}

/** Jobs whose result was accepted but whose resource write did not finish (a crash between). */
export async function finishing(db: Db, before: number): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('state', '=', 'finishing')
    .where('updated_at', '<=', before)
    .limit(100)
    .execute()
}

/**
 * Changes a principal's count of active jobs by `delta`; a growth commits only while the count
 * stays within `limit`, checked and written in one conditional statement. Answers whether it did.
 */
export async function changeActive(
  db: Db,
  c: { principal: string; delta: number; limit?: number },
): Promise<boolean> {
  const { delta, limit } = c
  const row = await db
    .insertInto('compute_active')
    .values({ principal: c.principal, active: Math.max(0, delta) })
    .onConflict((oc) => {
      const update = oc.column('principal').doUpdateSet((eb) => ({
        active: eb('compute_active.active', '+', delta),
      }))
      return limit === undefined
        ? update
        : update.where((eb) => eb(eb('compute_active.active', '+', delta), '<=', limit))
    })
    .returning('active')
    .executeTakeFirst()
  return row !== undefined && (limit === undefined || row.active <= limit)
}

export async function upsertRuntime(db: Db, row: ComputeRuntimeRow): Promise<void> {
  await db
    .insertInto('compute_runtimes')
    .values(row)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({ languages: row.languages, expires_at: row.expires_at }),
    )
    .execute()
}

export async function findRuntime(db: Db, id: string): Promise<ComputeRuntimeRow | undefined> {
  return db.selectFrom('compute_runtimes').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function deleteRuntime(db: Db, id: string, principal: string): Promise<number> {
  const res = await db
    .deleteFrom('compute_runtimes')
    .where('id', '=', id)
    .where('principal', '=', principal)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

export async function liveRuntimes(db: Db, now: number): Promise<ComputeRuntimeRow[]> {
  return db.selectFrom('compute_runtimes').selectAll().where('expires_at', '>', now).execute()
}

export async function pruneRuntimes(db: Db, before: number): Promise<number> {
  const res = await db
    .deleteFrom('compute_runtimes')
    .where('expires_at', '<=', before)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/** Queued jobs per language. */
export async function queuedCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('compute_jobs')
    .select(['language', (eb) => eb.fn.countAll<number>().as('n')])
    .where('state', '=', 'queued')
    .groupBy('language')
    .execute()
  return new Map(rows.map((r) => [r.language, Number(r.n)]))
}
