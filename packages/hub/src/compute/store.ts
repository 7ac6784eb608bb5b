import type { Kysely } from 'kysely'
import { utcDayStart } from '../store/quota.js'
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

/**
 * The oldest jobs a runtime serving `languages` may claim now, everything that decides
 * claimability checked in the query so no job the runtime may not take holds up those behind
 * it: queued, or leased past their lease; claimed fewer than `maxAttempts` times (the reaper
 * fails the rest); and not of an owner whose steps of the day are all reserved by other jobs
 * still running (it waits for their unused steps). One statement, whose two branches each read
 * `compute_jobs_claimable` (language, state, created_at) in order and stop at `limit`. With
 * `idleOwners`, only queued jobs of owners with no job running, for a claim that serves a
 * principal with nothing running before another principal's queue.
 */
export async function claimable(
  db: Db,
  c: {
    languages: readonly string[]
    now: number
    maxAttempts: number
    steps: { scope: string; limit: number }
    limit: number
    idleOwners?: boolean
  },
): Promise<ComputeJobRow[]> {
  const day = utcDayStart(c.now)
  const oldest = (state: 'queued' | 'running') => {
    let q = db
      .selectFrom('compute_jobs as j')
      .selectAll('j')
      .where('j.language', 'in', c.languages)
      .where('j.state', '=', state)
    if (state === 'running') q = q.where('j.lease_until', '<=', c.now)
    if (c.idleOwners) {
      q = q.where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('compute_jobs as r')
              .select('r.id')
              .whereRef('r.owner', '=', 'j.owner')
              .where('r.state', '=', 'running'),
          ),
        ),
      )
    }
    return q
      .where('j.attempts', '<', c.maxAttempts)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('quota_counters as q')
              .select('q.count')
              .where('q.scope', '=', c.steps.scope)
              .whereRef('q.subject', '=', 'j.owner')
              .where('q.window_start', '=', day)
              .where('q.count', '>=', c.steps.limit)
              .where((inner) =>
                inner.exists(
                  inner
                    .selectFrom('compute_jobs as o')
                    .select('o.id')
                    .whereRef('o.owner', '=', 'j.owner')
                    .where('o.state', '=', 'running')
                    .whereRef('o.id', '!=', 'j.id'),
                ),
              ),
          ),
        ),
      )
      .orderBy('j.created_at')
      .orderBy('j.id')
      .limit(c.limit)
  }
  if (c.idleOwners) return oldest('queued').execute()
  const both = db
    .selectFrom(oldest('queued').as('queued'))
    .selectAll()
    .unionAll(db.selectFrom(oldest('running').as('lapsed')).selectAll())
  return db
    .selectFrom(both.as('c'))
    .selectAll()
    .orderBy('created_at')
    .orderBy('id')
    .limit(c.limit)
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
    /** Only while the job is still at this version (nobody moved it since it was read). */
    version?: number
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
  if (m.version !== undefined) q = q.where('version', '=', m.version)
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

/**
 * Ends a runtime's liveness now. The row stays (pruned a day later) so the reaper still knows
 * when its languages last had a live runtime.
 */
export async function expireRuntime(
  db: Db,
  c: { id: string; principal: string; now: number },
): Promise<number> {
  const res = await db
    .updateTable('compute_runtimes')
    .set({ expires_at: c.now })
    .where('id', '=', c.id)
    .where('principal', '=', c.principal)
    .where('expires_at', '>', c.now)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** Runtimes live at some moment after `since` (those live now among them). */
export async function liveRuntimes(db: Db, since: number): Promise<ComputeRuntimeRow[]> {
  return db.selectFrom('compute_runtimes').selectAll().where('expires_at', '>', since).execute()
}

/**
 * Jobs of `languages` waiting for a runtime since `before` or earlier: queued since then, or
 * claimed under a lease that ran out then. Nothing will run them while no runtime serves them.
 */
export async function stranded(
  db: Db,
  languages: readonly string[],
  before: number,
): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .where('language', 'in', languages)
    .where((eb) =>
      eb.or([
        eb.and([eb('state', '=', 'queued'), eb('updated_at', '<=', before)]),
        eb.and([eb('state', '=', 'running'), eb('lease_until', '<=', before)]),
      ]),
    )
    .limit(100)
    .execute()
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

/** The quota scope of a job's reserved steps: one row per job, its subject the job id. */
const RESERVATION_SCOPE = 'compute_steps_reserved'

/**
 * Reserves up to `want` of the owner's remaining steps in the day holding `now`, for a job just
 * claimed; answers the steps reserved (0 when none remain). The counter grows only while it stays
 * within `limit`, checked and written in one conditional statement, so concurrent claims on any
 * instance never together pass the limit. The reservation is kept beside the counter, keyed by
 * the job, so its result can give back what it did not use.
 */
export async function reserveSteps(
  db: Db,
  c: { scope: string; owner: string; jobId: string; want: number; limit: number; now: number },
): Promise<number> {
  const day = utcDayStart(c.now)
  for (let attempt = 0; attempt < 5; attempt++) {
    const used = await db
      .selectFrom('quota_counters')
      .select('count')
      .where('scope', '=', c.scope)
      .where('subject', '=', c.owner)
      .where('window_start', '=', day)
      .executeTakeFirst()
    const grant = Math.min(c.want, c.limit - Number(used?.count ?? 0))
    if (grant <= 0) return 0
    const row = await db
      .insertInto('quota_counters')
      .values({ scope: c.scope, subject: c.owner, window_start: day, count: grant })
      .onConflict((oc) =>
        oc
          .columns(['scope', 'subject', 'window_start'])
          .doUpdateSet((eb) => ({ count: eb('quota_counters.count', '+', grant) }))
          .where((eb) => eb(eb('quota_counters.count', '+', grant), '<=', c.limit)),
      )
      .returning('count')
      .executeTakeFirst()
    // No row: another claim took steps between the read and the write; read again.
    if (row === undefined || Number(row.count) > c.limit) continue
    // The caller released the job's earlier reservation (a lost lease's) in this transaction.
    await db
      .insertInto('quota_counters')
      .values({ scope: RESERVATION_SCOPE, subject: c.jobId, window_start: day, count: grant })
      .execute()
    return grant
  }
  return 0
}

/**
 * Ends a job's reservation: of the steps reserved, `used` stay counted and the rest go back to
 * the owner's counter of the day they were reserved in. Answers the steps given back. The
 * reservation is taken by one conditional delete, so of two ends (or a retry of one) racing on
 * any instance only one gives its steps back; a job holding none gives back nothing.
 */
export async function releaseSteps(
  db: Db,
  c: { scope: string; owner: string; jobId: string; used: number },
): Promise<number> {
  const held = await db
    .deleteFrom('quota_counters')
    .where('scope', '=', RESERVATION_SCOPE)
    .where('subject', '=', c.jobId)
    .returning(['window_start', 'count'])
    .executeTakeFirst()
  if (!held) return 0
  const refund = Math.max(0, Number(held.count) - Math.max(0, c.used))
  if (refund > 0) {
    await db
      .updateTable('quota_counters')
      .set((eb) => ({ count: eb('count', '-', refund) }))
      .where('scope', '=', c.scope)
      .where('subject', '=', c.owner)
      .where('window_start', '=', held.window_start)
      .execute()
  }
  return refund
}

/** Whether the owner has jobs other than `except` claimed now (each holding reserved steps). */
export async function othersRunning(db: Db, owner: string, except: string): Promise<boolean> {
  const row = await db
    .selectFrom('compute_jobs')
    .select('id')
    .where('owner', '=', owner)
    .where('state', '=', 'running')
    .where('id', '!=', except)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Jobs per language and state, of the states not yet ended: the queue the dashboard shows. */
export async function activeCounts(
  db: Db,
): Promise<{ language: string; state: string; n: number }[]> {
  const rows = await db
    .selectFrom('compute_jobs')
    .select(['language', 'state', (eb) => eb.fn.countAll<number>().as('n')])
    .where('state', 'in', ACTIVE_STATES)
    .groupBy(['language', 'state'])
    .execute()
  return rows.map((r) => ({ language: r.language, state: r.state, n: Number(r.n) }))
}

/** The most recent jobs of every principal, newest first. */
export async function recentJobs(db: Db, limit: number): Promise<ComputeJobRow[]> {
  return db
    .selectFrom('compute_jobs')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute()
}
