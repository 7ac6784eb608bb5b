import type { Kysely } from 'kysely'
import type {
  A2aEventRow,
  A2aPushConfigRow,
  A2aSendRow,
  A2aTaskRow,
  Schema,
} from '../store/schema.js'

/** SQL for A2A tasks, in the subset both dialects share. Every function takes the db or a tx. */

export async function findTask(
  db: Kysely<Schema>,
  id: string,
  lock = false,
): Promise<A2aTaskRow | undefined> {
  return db
    .selectFrom('a2a_tasks')
    .selectAll()
    .where('id', '=', id)
    .$if(lock, (qb) => qb.forUpdate())
    .executeTakeFirst()
}

export async function insertTask(db: Kysely<Schema>, row: A2aTaskRow): Promise<void> {
  await db.insertInto('a2a_tasks').values(row).execute()
}

/**
 * Moves a task from exactly generation `from` to the given state and generation; answers whether
 * it did. The generation in the `where` is the compare-and-set: of two writers that read the same
 * generation, one changes the row and the other changes nothing.
 */
export async function advanceTask(
  db: Kysely<Schema>,
  id: string,
  from: number,
  to: { state: string; generation: number; status: string; updated_at: number },
): Promise<boolean> {
  const res = await db
    .updateTable('a2a_tasks')
    .set(to)
    .where('id', '=', id)
    .where('generation', '=', from)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

export async function insertEvents(db: Kysely<Schema>, rows: A2aEventRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('a2a_events').values(rows).execute()
}

/** A task's events after an exclusive generation, oldest first. */
export async function eventsAfter(
  db: Kysely<Schema>,
  taskId: string,
  after: number,
  limit?: number,
): Promise<A2aEventRow[]> {
  let q = db
    .selectFrom('a2a_events')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('generation', '>', after)
    .orderBy('generation', 'asc')
  if (limit !== undefined) q = q.limit(limit)
  return q.execute()
}

/** Kinds of event that may put a message in a task's history (a status may carry none). */
export const TALK_KINDS = ['created', 'message', 'status'] as const

/**
 * A task's newest events of {@link TALK_KINDS} before an exclusive generation (all when
 * undefined), newest first: one range of the (task, generation) key read backwards. With
 * `witnessedOnly`, only those whose stored body may hold a top-level `witnessed` (a text match
 * the caller confirms by parsing): the database filters the bodies, so a task's messages are not
 * read into the hub to find its hop.
 */
export async function talkBefore(
  db: Kysely<Schema>,
  taskId: string,
  before: number | undefined,
  limit: number,
  witnessedOnly = false,
): Promise<A2aEventRow[]> {
  return db
    .selectFrom('a2a_events')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('kind', 'in', TALK_KINDS)
    .$if(witnessedOnly, (qb) => qb.where('body', 'like', '%"witnessed":%'))
    .$if(before !== undefined, (qb) => qb.where('generation', '<', before!))
    .orderBy('generation', 'desc')
    .limit(limit)
    .execute()
}

/** A task's artifact events, oldest first. */
export async function artifactEvents(db: Kysely<Schema>, taskId: string): Promise<A2aEventRow[]> {
  return db
    .selectFrom('a2a_events')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('kind', '=', 'artifact')
    .orderBy('generation', 'asc')
    .execute()
}

/** The tasks a principal sent or is the agent of, most recently changed first. */
export async function listTasks(
  db: Kysely<Schema>,
  q: {
    principal: string
    contextId?: string | undefined
    state?: string | undefined
    /** Exclusive keyset position: tasks changed before it, or at it with a smaller id. */
    before?: { updatedAt: number; id: string } | undefined
    limit: number
  },
): Promise<A2aTaskRow[]> {
  return db
    .selectFrom('a2a_tasks')
    .selectAll()
    .where((eb) => eb.or([eb('owner', '=', q.principal), eb('agent', '=', q.principal)]))
    .$if(q.contextId !== undefined, (qb) => qb.where('context_id', '=', q.contextId!))
    .$if(q.state !== undefined, (qb) => qb.where('state', '=', q.state!))
    .$if(q.before !== undefined, (qb) =>
      qb.where((eb) =>
        eb.or([
          eb('updated_at', '<', q.before!.updatedAt),
          eb.and([eb('updated_at', '=', q.before!.updatedAt), eb('id', '<', q.before!.id)]),
        ]),
      ),
    )
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(q.limit)
    .execute()
}

/** How many tasks a principal sees under the same filters, for `totalSize`. */
export async function countTasks(
  db: Kysely<Schema>,
  q: { principal: string; contextId?: string | undefined; state?: string | undefined },
): Promise<number> {
  const row = await db
    .selectFrom('a2a_tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => eb.or([eb('owner', '=', q.principal), eb('agent', '=', q.principal)]))
    .$if(q.contextId !== undefined, (qb) => qb.where('context_id', '=', q.contextId!))
    .$if(q.state !== undefined, (qb) => qb.where('state', '=', q.state!))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function findSend(
  db: Kysely<Schema>,
  principal: string,
  messageId: string,
): Promise<A2aSendRow | undefined> {
  return db
    .selectFrom('a2a_sends')
    .selectAll()
    .where('principal', '=', principal)
    .where('message_id', '=', messageId)
    .executeTakeFirst()
}

export async function insertSend(db: Kysely<Schema>, row: A2aSendRow): Promise<void> {
  await db.insertInto('a2a_sends').values(row).execute()
}

export async function pushConfigsOf(
  db: Kysely<Schema>,
  taskId: string,
  owner?: string,
): Promise<A2aPushConfigRow[]> {
  return db
    .selectFrom('a2a_push_configs')
    .selectAll()
    .where('task_id', '=', taskId)
    .$if(owner !== undefined, (qb) => qb.where('owner', '=', owner!))
    .orderBy('created_at')
    .orderBy('id')
    .execute()
}

export async function findPushConfig(
  db: Kysely<Schema>,
  taskId: string,
  id: string,
  owner: string,
): Promise<A2aPushConfigRow | undefined> {
  return db
    .selectFrom('a2a_push_configs')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('id', '=', id)
    .where('owner', '=', owner)
    .executeTakeFirst()
}

/** Sets a config by its id: a new id adds one, the caller's own id replaces it. */
export async function putPushConfig(db: Kysely<Schema>, row: A2aPushConfigRow): Promise<void> {
  await db
    .deleteFrom('a2a_push_configs')
    .where('task_id', '=', row.task_id)
    .where('id', '=', row.id)
    .where('owner', '=', row.owner)
    .execute()
  await db.insertInto('a2a_push_configs').values(row).execute()
}

export async function deletePushConfig(
  db: Kysely<Schema>,
  taskId: string,
  id: string,
  owner: string,
): Promise<boolean> {
  const res = await db
    .deleteFrom('a2a_push_configs')
    .where('task_id', '=', taskId)
    .where('id', '=', id)
    .where('owner', '=', owner)
    .executeTakeFirst()
  return Number(res.numDeletedRows) === 1
}
