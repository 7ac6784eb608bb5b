import type { Kysely } from 'kysely'
import type { GrantRow, Schema } from '../store/schema.js'

/** SQL for grants, in the subset both dialects share. */

export async function insertGrant(db: Kysely<Schema>, row: GrantRow): Promise<void> {
  await db.insertInto('grants').values(row).execute()
}

export async function findGrant(db: Kysely<Schema>, id: string): Promise<GrantRow | undefined> {
  return db.selectFrom('grants').selectAll().where('id', '=', id).executeTakeFirst()
}

/** Grants held by `subject` on one resource that are neither revoked nor expired at `now`. */
export async function liveGrantsFor(
  db: Kysely<Schema>,
  subject: string,
  resourceId: string,
  now: number,
): Promise<GrantRow[]> {
  return db
    .selectFrom('grants')
    .selectAll()
    .where('subject', '=', subject)
    .where('resource_id', '=', resourceId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .execute()
}

/** Ids of resources on which `subject` holds a grant neither revoked nor expired at `now`. */
export async function liveResourceIdsFor(
  db: Kysely<Schema>,
  subject: string,
  now: number,
): Promise<GrantRow[]> {
  return db
    .selectFrom('grants')
    .selectAll()
    .where('subject', '=', subject)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .execute()
}

/** Grants issued by or held by a principal, newest first. */
export async function listGrantsOf(db: Kysely<Schema>, principal: string, limit: number) {
  return db
    .selectFrom('grants')
    .selectAll()
    .where((eb) => eb.or([eb('issuer', '=', principal), eb('subject', '=', principal)]))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute()
}

/** Marks grants revoked at `at` unless already revoked; answers how many changed. */
export async function revokeGrants(
  db: Kysely<Schema>,
  ids: string[],
  at: number,
  trace: { trace: string | null; trace_state: string | null },
): Promise<number> {
  if (ids.length === 0) return 0
  const res = await db
    .updateTable('grants')
    .set({ revoked_at: at, ...trace })
    .where('id', 'in', ids)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** Direct children of grants: what was passed on from them. */
export async function childGrantIds(db: Kysely<Schema>, parentIds: string[]): Promise<string[]> {
  if (parentIds.length === 0) return []
  const rows = await db
    .selectFrom('grants')
    .select('id')
    .where('parent_id', 'in', parentIds)
    .execute()
  return rows.map((r) => r.id)
}

/**
 * Grants for the operator, newest first, at most 500: `status` live (unrevoked, unexpired),
 * revoked or expired (unrevoked, past expiry), of one subject or on one resource.
 */
export async function listForOperator(
  db: Kysely<Schema>,
  now: number,
  q: { status?: string | undefined; subject?: string | undefined; resourceId?: string | undefined },
): Promise<GrantRow[]> {
  let query = db.selectFrom('grants').selectAll()
  if (q.status === 'revoked') query = query.where('revoked_at', 'is not', null)
  else if (q.status === 'live') {
    query = query.where('revoked_at', 'is', null).where('expires_at', '>', now)
  } else if (q.status === 'expired') {
    query = query.where('revoked_at', 'is', null).where('expires_at', '<=', now)
  }
  if (q.subject) query = query.where('subject', '=', q.subject)
  if (q.resourceId) query = query.where('resource_id', '=', q.resourceId)
  return query.orderBy('created_at', 'desc').orderBy('id', 'asc').limit(500).execute()
}

/** How many grants are live: unrevoked and unexpired. */
export async function countLive(db: Kysely<Schema>, now: number): Promise<number> {
  const row = await db
    .selectFrom('grants')
    .select(db.fn.countAll<number>().as('n'))
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}
