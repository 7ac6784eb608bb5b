import type { Kysely } from 'kysely'
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
