import { type Kysely, sql } from 'kysely'
import type { HandoffMoveRow, HandoffRow, Schema } from '../store/schema.js'

/** SQL for handoffs, in the subset both dialects share. Every function takes the db or a tx. */

export async function insertHandoff(db: Kysely<Schema>, row: HandoffRow): Promise<void> {
  await db.insertInto('handoffs').values(row).execute()
}

export async function findHandoff(db: Kysely<Schema>, id: string): Promise<HandoffRow | undefined> {
  return db.selectFrom('handoffs').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function listMoves(db: Kysely<Schema>, id: string): Promise<HandoffMoveRow[]> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', '=', id)
    .orderBy('version', 'asc')
    .execute()
}

export async function findMoveByNonce(
  db: Kysely<Schema>,
  id: string,
  nonce: string,
): Promise<HandoffMoveRow | undefined> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', '=', id)
    .where('nonce', '=', nonce)
    .executeTakeFirst()
}

/**
 * The compare-and-set: moves the handoff only if it is still at `expectVersion` in `from`.
 * Answers whether it moved.
 */
export async function casMove(
  db: Kysely<Schema>,
  m: { id: string; from: string; to: string; expectVersion: number; ended: boolean; at: number },
): Promise<boolean> {
  const res = await db
    .updateTable('handoffs')
    .set({ state: m.to, version: m.expectVersion + 1, ended: m.ended ? 1 : 0, updated_at: m.at })
    .where('id', '=', m.id)
    .where('version', '=', m.expectVersion)
    .where('state', '=', m.from)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

export async function insertMove(db: Kysely<Schema>, row: HandoffMoveRow): Promise<void> {
  await db.insertInto('handoff_moves').values(row).execute()
}

/** Removes handoffs that expired at or before `now`, with their history; answers how many. */
export async function deleteExpired(
  db: Kysely<Schema>,
  now: number,
  limit = 1000,
): Promise<number> {
  const ids = (
    await db
      .selectFrom('handoffs')
      .select('id')
      .where('expires_at', '<=', now)
      .limit(limit)
      .execute()
  ).map((r) => r.id)
  if (ids.length === 0) return 0
  await db.deleteFrom('handoff_moves').where('handoff_id', 'in', ids).execute()
  await db.deleteFrom('handoffs').where('id', 'in', ids).where('expires_at', '<=', now).execute()
  return ids.length
}

/** Counts handoffs by state, for metrics and the dashboard. */
export async function countByState(
  db: Kysely<Schema>,
  now: number,
): Promise<{ state: string; ended: number; count: number }[]> {
  const rows = await db
    .selectFrom('handoffs')
    .select(['state', 'ended', db.fn.countAll<number>().as('count')])
    .where('expires_at', '>', now)
    .groupBy(['state', 'ended'])
    .execute()
  return rows.map((r) => ({ state: r.state, ended: Number(r.ended), count: Number(r.count) }))
}

/** A handoff row without its payload: what a move needs. */
export type HandoffMoveState = Omit<HandoffRow, 'payload' | 'note' | 'created_at'>

/**
 * Reads the handoffs a batch of moves touches, in id order, locking them for the rest of the
 * transaction where the dialect needs row locks (so concurrent batches take locks in one order).
 */
export async function lockForMoves(
  db: Kysely<Schema>,
  ids: string[],
  lock: boolean,
): Promise<HandoffMoveState[]> {
  return db
    .selectFrom('handoffs')
    .select([
      'id',
      'owner_token_hash',
      'receiver_token_hash',
      'state',
      'version',
      'ended',
      'machine',
      'notify_url',
      'updated_at',
      'expires_at',
    ])
    .where('id', 'in', ids)
    .orderBy('id')
    .$if(lock, (qb) => qb.forUpdate())
    .execute()
}

/** Committed moves carrying any of `nonces` on any of `ids`. */
export async function findMovesByNonces(
  db: Kysely<Schema>,
  ids: string[],
  nonces: string[],
): Promise<HandoffMoveRow[]> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', 'in', ids)
    .where('nonce', 'in', nonces)
    .execute()
}

/**
 * Applies the final state of many handoffs in one statement, each only if still at its expected
 * version; answers how many rows changed.
 */
export async function applyMoves(
  db: Kysely<Schema>,
  rows: {
    id: string
    state: string
    version: number
    ended: boolean
    at: number
    expect: number
  }[],
): Promise<number> {
  const values = sql.join(
    rows.map(
      (r) =>
        sql`(${r.id}, ${r.state}, cast(${r.version} as integer), cast(${r.ended ? 1 : 0} as integer), cast(${r.at} as bigint), cast(${r.expect} as integer))`,
    ),
  )
  const result = await sql`
    with v (id, state, version, ended, at, expect) as (values ${values})
    update handoffs
    set state = v.state, version = v.version, ended = v.ended, updated_at = v.at
    from v
    where handoffs.id = v.id and handoffs.version = v.expect`.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}

/** Inserts many history rows in one statement. */
export async function insertMoves(db: Kysely<Schema>, rows: HandoffMoveRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('handoff_moves').values(rows).execute()
}
