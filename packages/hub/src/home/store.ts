import { type Kysely, sql } from 'kysely'
import type { HomeFileRow, Schema } from '../store/schema.js'

/** SQL for home files, in the subset both dialects share. Every function takes the db or a tx. */

export async function findFile(
  db: Kysely<Schema>,
  principal: string,
  path: string,
): Promise<HomeFileRow | undefined> {
  return db
    .selectFrom('home_files')
    .selectAll()
    .where('principal', '=', principal)
    .where('path', '=', path)
    .executeTakeFirst()
}

export async function insertFile(db: Kysely<Schema>, row: HomeFileRow): Promise<void> {
  await db.insertInto('home_files').values(row).execute()
}

/** The compare-and-set: replaces the file only if it is still at `expectRevision`. */
export async function casUpdate(
  db: Kysely<Schema>,
  u: {
    principal: string
    path: string
    expectRevision: number
    content: string
    size: number
    at: number
    trace: { trace: string | null; trace_state: string | null }
  },
): Promise<boolean> {
  const res = await db
    .updateTable('home_files')
    .set({
      revision: u.expectRevision + 1,
      content: u.content,
      size: u.size,
      updated_at: u.at,
      ...u.trace,
    })
    .where('principal', '=', u.principal)
    .where('path', '=', u.path)
    .where('revision', '=', u.expectRevision)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Deletes the file only if it is still at `expectRevision`; answers whether it did. */
export async function casDelete(
  db: Kysely<Schema>,
  principal: string,
  path: string,
  expectRevision: number,
): Promise<boolean> {
  const res = await db
    .deleteFrom('home_files')
    .where('principal', '=', principal)
    .where('path', '=', path)
    .where('revision', '=', expectRevision)
    .executeTakeFirst()
  return Number(res.numDeletedRows) === 1
}

/**
 * A principal's files whose path starts with `prefix`, after an exclusive path cursor, by path.
 * `substr` rather than LIKE: LIKE is case-insensitive on SQLite and treats `_` as a wildcard.
 */
export async function listFiles(
  db: Kysely<Schema>,
  q: { principal: string; prefix: string; after: string | undefined; limit: number },
): Promise<Omit<HomeFileRow, 'content' | 'trace' | 'trace_state'>[]> {
  let query = db
    .selectFrom('home_files')
    .select(['principal', 'path', 'revision', 'size', 'created_at', 'updated_at'])
    .where('principal', '=', q.principal)
  if (q.prefix !== '') {
    query = query.where(sql<string>`substr(path, 1, ${q.prefix.length})`, '=', q.prefix)
  }
  if (q.after !== undefined) query = query.where('path', '>', q.after)
  return query.orderBy('path', 'asc').limit(q.limit).execute()
}

/** The bytes of content a principal keeps in its home. */
export async function homeBytes(db: Kysely<Schema>, principal: string): Promise<number> {
  const row = await db
    .selectFrom('home_files')
    .select((eb) => eb.fn.sum<number | string | null>('size').as('bytes'))
    .where('principal', '=', principal)
    .executeTakeFirst()
  return Number(row?.bytes ?? 0)
}
