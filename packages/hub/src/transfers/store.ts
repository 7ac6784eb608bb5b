import { type Kysely, sql } from 'kysely'
import type {
  Schema,
  TransferEventRow,
  TransferRow,
  TransferTokenUseRow,
  TransferUsageRow,
} from '../store/schema.js'

/** SQL for session transfers, in the subset both dialects share. Every function takes db or tx. */

type Db = Kysely<Schema>

/** Inserts many staged transfers and their snapshots, one statement each. */
export async function insertTransfers(
  db: Db,
  created: { row: TransferRow; content: string }[],
): Promise<void> {
  if (created.length === 0) return
  await db
    .insertInto('transfers')
    .values(created.map((c) => c.row))
    .execute()
  await db
    .insertInto('transfer_snapshots')
    .values(created.map((c) => ({ transfer_id: c.row.id, content: c.content })))
    .execute()
}

/** Transfers of any of `owners` under any of `keys` (a superset of the pairs asked for). */
export async function findByOwnerKeys(
  db: Db,
  owners: string[],
  keys: string[],
): Promise<TransferRow[]> {
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('owner', 'in', owners)
    .where('idempotency_key', 'in', keys)
    .execute()
}

export async function findTransfer(db: Db, id: string): Promise<TransferRow | undefined> {
  return db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function readSnapshot(db: Db, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('transfer_snapshots')
    .select('content')
    .where('transfer_id', '=', id)
    .executeTakeFirst()
  return row?.content
}

export async function listEvents(db: Db, id: string): Promise<TransferEventRow[]> {
  return db
    .selectFrom('transfer_events')
    .selectAll()
    .where('transfer_id', '=', id)
    .orderBy('seq', 'asc')
    .execute()
}

/** Provisioned, unclaimed, live transfers of a tier, oldest first. */
export async function claimable(db: Db, tier: string, now: number, limit = 8): Promise<string[]> {
  const rows = await db
    .selectFrom('transfers')
    .select('id')
    .where('state', '=', 'provisioned')
    .where('tier', '=', tier)
    .where('runtime', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'asc')
    .limit(limit)
    .execute()
  return rows.map((r) => r.id)
}

/** Transfers whose pre-active TTL passed, and insolvent ones past their grace, for the reaper. */
export async function dueForReaping(
  db: Db,
  now: number,
  limit = 200,
): Promise<{ expired: TransferRow[]; graceOver: TransferRow[] }> {
  const expired = await db
    .selectFrom('transfers')
    .selectAll()
    .where('state', 'in', ['staged', 'provisioned', 'pushed'])
    .where('expires_at', '<=', now)
    .limit(limit)
    .execute()
  const graceOver = await db
    .selectFrom('transfers')
    .selectAll()
    .where('state', '=', 'insolvent')
    .where('grace_ends_at', '<=', now)
    .limit(limit)
    .execute()
  return { expired, graceOver }
}

/** Transfers a principal owns or runs, newest first. */
export async function listFor(
  db: Db,
  q: { principal: string; role: 'owner' | 'runtime'; state?: string; limit: number },
): Promise<TransferRow[]> {
  let query = db
    .selectFrom('transfers')
    .selectAll()
    .where(q.role, '=', q.principal)
    .orderBy('created_at', 'desc')
    .limit(q.limit)
  if (q.state) query = query.where('state', '=', q.state)
  return query.execute()
}

/** How many transfers are stored in each state; states with none are absent. */
export async function countByState(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('transfers')
    .select(['state', db.fn.countAll<string | number>().as('n')])
    .groupBy('state')
    .execute()
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

/** A transfer as a group of writes reads it, with what its writes need beside the row. */
export interface LockedTransfer extends TransferRow {
  /** The tokens used on it, one per scope at most (each token-gated move happens once). */
  provision_jti?: string | null
  activate_jti?: string | null
  /** The snapshot's canonical content, when asked for. */
  content?: string | null
}

/**
 * The transfers of a group of writes, in id order, locked for update where rows lock; with the
 * tokens used on them when `tokens`, and the snapshot content of those in `content`, so a group
 * reads what it decides on in one statement.
 */
export async function lockTransfers(
  db: Db,
  ids: string[],
  m: { lock: boolean; tokens: boolean; content: string[] },
): Promise<LockedTransfer[]> {
  return db
    .selectFrom('transfers')
    .selectAll('transfers')
    .$if(m.tokens, (qb) =>
      qb.select((eb) =>
        (['provision', 'activate'] as const).map((scope) =>
          eb
            .selectFrom('transfer_token_uses')
            .select('transfer_token_uses.jti')
            .whereRef('transfer_token_uses.transfer_id', '=', 'transfers.id')
            .where('transfer_token_uses.scope', '=', scope)
            .limit(1)
            .as(`${scope}_jti`),
        ),
      ),
    )
    .$if(m.content.length > 0, (qb) =>
      qb.select((eb) =>
        eb
          .case()
          .when('transfers.id', 'in', m.content)
          .then(
            eb
              .selectFrom('transfer_snapshots')
              .select('transfer_snapshots.content')
              .whereRef('transfer_snapshots.transfer_id', '=', 'transfers.id'),
          )
          .end()
          .as('content'),
      ),
    )
    .where('transfers.id', 'in', ids)
    .orderBy('transfers.id')
    .$if(m.lock, (qb) => qb.forUpdate('transfers'))
    .execute() as Promise<LockedTransfer[]>
}

/** The event logs of many transfers, each in order. */
export async function listEventsOf(db: Db, ids: string[]): Promise<TransferEventRow[]> {
  return db
    .selectFrom('transfer_events')
    .selectAll()
    .where('transfer_id', 'in', ids)
    .orderBy('transfer_id')
    .orderBy('seq')
    .execute()
}

/** Usage reports of any of `ids` under any of `keys` (a superset of the pairs asked for). */
export async function findUsages(
  db: Db,
  ids: string[],
  keys: string[],
): Promise<TransferUsageRow[]> {
  return db
    .selectFrom('transfer_usage')
    .selectAll()
    .where('transfer_id', 'in', ids)
    .where('idempotency_key', 'in', keys)
    .execute()
}

/**
 * Writes the decided rows of a group in one statement, each only if still at the version it was
 * read at; answers how many rows changed.
 */
export async function applyTransfers(
  db: Db,
  rows: TransferRow[],
  readVersion: Map<string, number>,
): Promise<number> {
  const text = (v: string | null) => sql`cast(${v} as text)`
  const big = (v: number | null) => sql`cast(${v} as bigint)`
  const int = (v: number) => sql`cast(${v} as integer)`
  const values = sql.join(
    rows.map(
      (r) =>
        sql`(${sql.join([
          text(r.id),
          int(readVersion.get(r.id)!),
          text(r.state),
          int(r.version),
          big(r.updated_at),
          big(r.expires_at),
          text(r.tier),
          big(r.budget_micros),
          big(r.rate_micros),
          big(r.spent_micros),
          text(r.runtime),
          text(r.lease_instance),
          big(r.lease_ends_at),
          big(r.grace_ends_at),
          text(r.end_reason),
        ])})`,
    ),
  )
  const result = await sql`
    with v (id, expect, state, version, updated_at, expires_at, tier, budget_micros, rate_micros,
            spent_micros, runtime, lease_instance, lease_ends_at, grace_ends_at, end_reason)
    as (values ${values})
    update transfers
    set state = v.state, version = v.version, updated_at = v.updated_at,
        expires_at = v.expires_at, tier = v.tier, budget_micros = v.budget_micros,
        rate_micros = v.rate_micros, spent_micros = v.spent_micros, runtime = v.runtime,
        lease_instance = v.lease_instance, lease_ends_at = v.lease_ends_at,
        grace_ends_at = v.grace_ends_at, end_reason = v.end_reason
    from v
    where transfers.id = v.id and transfers.version = v.expect`.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}

export async function insertEvents(db: Db, rows: TransferEventRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('transfer_events').values(rows).execute()
}

export async function useTokens(db: Db, rows: TransferTokenUseRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('transfer_token_uses').values(rows).execute()
}

export async function insertUsages(db: Db, rows: TransferUsageRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('transfer_usage').values(rows).execute()
}
