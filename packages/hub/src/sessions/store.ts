import type { Kysely } from 'kysely'
import type { Schema } from '../store/schema.js'

/** SQL for remembered dashboard sign-outs. */

export async function insertSignout(
  db: Kysely<Schema>,
  row: { session_id: string; expires_at: number },
): Promise<void> {
  await db
    .insertInto('dashboard_signouts')
    .values(row)
    .onConflict((oc) => oc.column('session_id').doNothing())
    .execute()
}

/** Sign-outs of sessions that have not expired yet. */
export async function liveSignouts(
  db: Kysely<Schema>,
  now: number,
): Promise<{ session_id: string; expires_at: number }[]> {
  return db
    .selectFrom('dashboard_signouts')
    .select(['session_id', 'expires_at'])
    .where('expires_at', '>', now)
    .execute()
}

/** Forgets sign-outs of sessions that expired anyway; answers how many. */
export async function pruneSignouts(db: Kysely<Schema>, now: number): Promise<number> {
  const res = await db
    .deleteFrom('dashboard_signouts')
    .where('expires_at', '<=', now)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}
