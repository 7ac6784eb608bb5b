import { type Kysely, sql } from 'kysely'
import type { ResourceRow, ResourceVersionRow, Schema } from '../store/schema.js'
import { type HandedTrace, traceColumns } from '../telemetry/trace-context.js'

/** SQL for resources, in the subset both dialects share. */

export async function insertResource(db: Kysely<Schema>, row: ResourceRow): Promise<void> {
  await db.insertInto('resources').values(row).execute()
}

export async function findResource(
  db: Kysely<Schema>,
  id: string,
): Promise<ResourceRow | undefined> {
  return db.selectFrom('resources').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function insertVersion(db: Kysely<Schema>, row: ResourceVersionRow): Promise<void> {
  await db.insertInto('resource_versions').values(row).execute()
}

export async function listVersions(db: Kysely<Schema>, id: string): Promise<ResourceVersionRow[]> {
  return db
    .selectFrom('resource_versions')
    .selectAll()
    .where('resource_id', '=', id)
    .orderBy('version', 'asc')
    .execute()
}

/** The compare-and-set: replaces data only if the resource is still at `expectVersion`. */
export async function casUpdate(
  db: Kysely<Schema>,
  u: {
    id: string
    expectVersion: number
    data: string
    size: number
    at: number
    actor: string
    trace: HandedTrace | undefined
  },
): Promise<boolean> {
  const res = await db
    .updateTable('resources')
    .set({
      data: u.data,
      size: u.size,
      version: u.expectVersion + 1,
      updated_at: u.at,
      updated_by: u.actor,
      ...traceColumns(u.trace),
    })
    .where('id', '=', u.id)
    .where('version', '=', u.expectVersion)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Resources owned by `owner` or with an id in `sharedIds`, filtered, in id order after `after`. */
export async function listVisible(
  db: Kysely<Schema>,
  q: {
    owner: string
    sharedIds: string[]
    namespace?: string | undefined
    kind?: string | undefined
    after?: string | undefined
    limit: number
  },
): Promise<ResourceRow[]> {
  let query = db
    .selectFrom('resources')
    .selectAll()
    .where((eb) =>
      q.sharedIds.length > 0
        ? eb.or([eb('owner', '=', q.owner), eb('id', 'in', q.sharedIds)])
        : eb('owner', '=', q.owner),
    )
  if (q.namespace !== undefined) query = query.where('namespace', '=', q.namespace)
  if (q.kind !== undefined) query = query.where('kind', '=', q.kind)
  if (q.after !== undefined) query = query.where('id', '>', q.after)
  return query.orderBy('id', 'asc').limit(q.limit).execute()
}

/** Total bytes of resource data a principal owns, summed from the rows (the quota keeps a counter). */
export async function ownedBytes(db: Kysely<Schema>, owner: string): Promise<number> {
  const row = await db
    .selectFrom('resources')
    .select((eb) => eb.fn.sum<number>('size').as('bytes'))
    .where('owner', '=', owner)
    .executeTakeFirst()
  return Number(row?.bytes ?? 0)
}

/** Resources for the operator by namespace and owner, at most 500, namespaces in order. */
export async function listForOperator(
  db: Kysely<Schema>,
  q: { namespace?: string | undefined; owner?: string | undefined },
): Promise<ResourceRow[]> {
  let query = db.selectFrom('resources').selectAll()
  if (q.namespace) query = query.where('namespace', '=', q.namespace)
  if (q.owner) query = query.where('owner', '=', q.owner)
  return query.orderBy('namespace', 'asc').orderBy('updated_at', 'desc').limit(500).execute()
}

/** Every namespace with how many resources it holds, at most 500. */
export async function namespaceSizes(
  db: Kysely<Schema>,
): Promise<{ namespace: string; n: number }[]> {
  return db
    .selectFrom('resources')
    .select(['namespace', sql<number>`count(*)`.as('n')])
    .groupBy('namespace')
    .orderBy('namespace', 'asc')
    .limit(500)
    .execute()
}

/** How many resources there are. */
export async function countAll(db: Kysely<Schema>): Promise<number> {
  const row = await db
    .selectFrom('resources')
    .select(sql<number>`count(*)`.as('n'))
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

/** A resource's versions for the operator, oldest first, at most 500. */
export async function versionsForOperator(
  db: Kysely<Schema>,
  id: string,
): Promise<ResourceVersionRow[]> {
  return db
    .selectFrom('resource_versions')
    .selectAll()
    .where('resource_id', '=', id)
    .orderBy('version', 'asc')
    .limit(500)
    .execute()
}
