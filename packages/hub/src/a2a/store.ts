import { type Kysely, sql } from 'kysely'
import type {
  A2aArtifactRow,
  A2aEventRow,
  A2aPushConfigRow,
  A2aPushQueueRow,
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
  to: {
    state: string
    generation: number
    status: string
    updated_at: number
    stored_bytes: number
  },
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

/** The trace context one event of a task recorded, if it recorded one. */
export async function traceAt(
  db: Kysely<Schema>,
  taskId: string,
  generation: number,
): Promise<{ trace: string | null; trace_state: string | null } | undefined> {
  return db
    .selectFrom('a2a_events')
    .select(['trace', 'trace_state'])
    .where('task_id', '=', taskId)
    .where('generation', '=', generation)
    .executeTakeFirst()
}

/**
 * The artifact events of some of a task's artifacts up to an inclusive generation, oldest first:
 * what an artifact changed since that generation is folded again from.
 */
export async function artifactEventsOf(
  db: Kysely<Schema>,
  taskId: string,
  artifactIds: string[],
  through: number,
): Promise<A2aEventRow[]> {
  if (artifactIds.length === 0) return []
  return db
    .selectFrom('a2a_events')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('artifact_id', 'in', artifactIds)
    .where('generation', '<=', through)
    .orderBy('generation', 'asc')
    .execute()
}

/** The artifact ids of a task: one range of its folded artifacts. */
export async function artifactIds(db: Kysely<Schema>, taskId: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('a2a_artifacts')
    .select('artifact_id')
    .where('task_id', '=', taskId)
    .execute()
  return new Set(rows.map((r) => r.artifact_id))
}

/** A task's folded artifacts that existed at an inclusive generation, in the order they began. */
export async function foldedArtifacts(
  db: Kysely<Schema>,
  taskId: string,
  through: number,
): Promise<A2aArtifactRow[]> {
  return db
    .selectFrom('a2a_artifacts')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('seq', '<=', through)
    .orderBy('seq', 'asc')
    .execute()
}

/**
 * An artifact as its folded row keeps it: its members but `parts` as JSON, and its parts as the
 * text of a JSON array without its brackets ('' for none), so parts join by concatenation.
 */
export function splitArtifact(artifact: { parts: unknown[] }): { head: string; parts: string } {
  const { parts, ...head } = artifact
  return { head: JSON.stringify(head), parts: JSON.stringify(parts).slice(1, -1) }
}

/** Two runs of parts as {@link splitArtifact} writes them, one after the other. */
export function joinParts(first: string, second: string): string {
  if (first === '') return second
  if (second === '') return first
  return `${first},${second}`
}

/**
 * Folds one send's artifact changes into a task's artifacts without reading them back: each row
 * of `replaces` takes the artifact's place whole (it keeps its `seq`), each row of `appends`
 * adds its parts to the artifact's by concatenation (or begins it, when it is new).
 */
export async function foldArtifacts(
  db: Kysely<Schema>,
  writes: { appends: A2aArtifactRow[]; replaces: A2aArtifactRow[] },
): Promise<void> {
  if (writes.replaces.length > 0) {
    await db
      .insertInto('a2a_artifacts')
      .values(writes.replaces)
      .onConflict((oc) =>
        oc.columns(['task_id', 'artifact_id']).doUpdateSet((eb) => ({
          head: eb.ref('excluded.head'),
          parts: eb.ref('excluded.parts'),
          generation: eb.ref('excluded.generation'),
        })),
      )
      .execute()
  }
  if (writes.appends.length > 0) {
    await db
      .insertInto('a2a_artifacts')
      .values(writes.appends)
      .onConflict((oc) =>
        oc.columns(['task_id', 'artifact_id']).doUpdateSet((eb) => ({
          parts: sql<string>`case
            when a2a_artifacts.parts = '' then excluded.parts
            when excluded.parts = '' then a2a_artifacts.parts
            else a2a_artifacts.parts || ',' || excluded.parts end`,
          generation: eb.ref('excluded.generation'),
        })),
      )
      .execute()
  }
}

/** The newest event that set a task's status at or before an inclusive generation. */
export async function statusEventAt(
  db: Kysely<Schema>,
  taskId: string,
  generation: number,
): Promise<A2aEventRow | undefined> {
  return db
    .selectFrom('a2a_events')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('kind', 'in', ['created', 'status'])
    .where('generation', '<=', generation)
    .orderBy('generation', 'desc')
    .limit(1)
    .executeTakeFirst()
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

export async function insertPushConfig(db: Kysely<Schema>, row: A2aPushConfigRow): Promise<void> {
  await db.insertInto('a2a_push_configs').values(row).execute()
}

/** How many push configs a task has, of every party. */
export async function countPushConfigs(db: Kysely<Schema>, taskId: string): Promise<number> {
  const row = await db
    .selectFrom('a2a_push_configs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('task_id', '=', taskId)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

/** The URLs of a principal's push configs on tasks that have not ended (as many as its cap lets it hold). */
export async function pushUrlsOf(
  db: Kysely<Schema>,
  owner: string,
  ended: readonly string[],
): Promise<string[]> {
  const rows = await db
    .selectFrom('a2a_push_configs as c')
    .innerJoin('a2a_tasks as t', 't.id', 'c.task_id')
    .select('c.url')
    .where('c.owner', '=', owner)
    .where('t.state', 'not in', ended)
    .execute()
  return rows.map((r) => r.url)
}

/** How many push configs each principal has on a task. */
export async function pushConfigOwners(
  db: Kysely<Schema>,
  taskId: string,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('a2a_push_configs')
    .select(['owner', (eb) => eb.fn.countAll<number>().as('n')])
    .where('task_id', '=', taskId)
    .groupBy('owner')
    .orderBy('owner')
    .execute()
  return new Map(rows.map((r) => [r.owner, Number(r.n)]))
}

/**
 * Changes how many push configs a principal holds by `delta`: a growth commits only while the
 * count stays within `limit`, checked and written in one conditional statement whose row lock
 * orders the principal's config writes on every instance. Answers whether it changed.
 */
export async function changePushUsage(
  db: Kysely<Schema>,
  owner: string,
  delta: number,
  limit: number,
): Promise<boolean> {
  if (delta > 0 && delta > limit) return false
  const row = await db
    .insertInto('a2a_push_usage')
    .values({ owner, configs: Math.max(0, delta) })
    .onConflict((oc) => {
      const update = oc.column('owner').doUpdateSet((eb) => ({
        configs: eb('a2a_push_usage.configs', '+', delta),
      }))
      return delta > 0
        ? update.where((eb) => eb(eb('a2a_push_usage.configs', '+', delta), '<=', limit))
        : update
    })
    .returning('configs')
    .executeTakeFirst()
  return row !== undefined
}

export async function insertPushQueue(db: Kysely<Schema>, row: A2aPushQueueRow): Promise<void> {
  await db.insertInto('a2a_push_queue').values(row).execute()
}

/** The oldest queued fan-outs. */
export async function duePushQueue(db: Kysely<Schema>, limit: number): Promise<A2aPushQueueRow[]> {
  return db
    .selectFrom('a2a_push_queue')
    .selectAll()
    .orderBy('created_at')
    .orderBy('task_id')
    .orderBy('through_generation')
    .limit(limit)
    .execute()
}

/**
 * Takes a queued fan-out, only if it is the oldest of its task: of two instances, the one whose
 * delete removes the row fans it out, and a task's sends are fanned out in generation order, so
 * its notifications reach each URL in order.
 */
export async function claimPushQueue(
  db: Kysely<Schema>,
  row: Pick<A2aPushQueueRow, 'task_id' | 'through_generation'>,
): Promise<boolean> {
  const res = await db
    .deleteFrom('a2a_push_queue')
    .where('task_id', '=', row.task_id)
    .where('through_generation', '=', row.through_generation)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('a2a_push_queue as q')
            .select(sql`1`.as('one'))
            .where('q.task_id', '=', row.task_id)
            .where('q.through_generation', '<', row.through_generation),
        ),
      ),
    )
    .executeTakeFirst()
  return Number(res.numDeletedRows) === 1
}

/** The author of one event, if it is stored. */
export async function eventAuthor(
  db: Kysely<Schema>,
  taskId: string,
  generation: number,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('a2a_events')
    .select('author')
    .where('task_id', '=', taskId)
    .where('generation', '=', generation)
    .executeTakeFirst()
  return row?.author
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

type OperatorTaskRow = Pick<
  A2aTaskRow,
  'id' | 'context_id' | 'owner' | 'agent' | 'state' | 'generation' | 'created_at' | 'updated_at'
>
const OPERATOR_TASK_COLUMNS = [
  'id',
  'context_id',
  'owner',
  'agent',
  'state',
  'generation',
  'created_at',
  'updated_at',
] as const

/** Every task for the operator, most recently changed first, optionally in one stored state. */
export async function listForOperator(
  db: Kysely<Schema>,
  q: { state?: string | undefined; limit: number },
): Promise<OperatorTaskRow[]> {
  let query = db.selectFrom('a2a_tasks').select(OPERATOR_TASK_COLUMNS)
  if (q.state) query = query.where('state', '=', q.state)
  return query.orderBy('updated_at', 'desc').orderBy('id', 'asc').limit(q.limit).execute()
}

/** One task for the operator, without its contents. */
export async function findForOperator(
  db: Kysely<Schema>,
  id: string,
): Promise<OperatorTaskRow | undefined> {
  return db
    .selectFrom('a2a_tasks')
    .select(OPERATOR_TASK_COLUMNS)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** A task's events for the operator, oldest first, at most 1000. */
export async function eventsForOperator(
  db: Kysely<Schema>,
  id: string,
): Promise<Pick<A2aEventRow, 'generation' | 'kind' | 'author' | 'body' | 'at'>[]> {
  return db
    .selectFrom('a2a_events')
    .select(['generation', 'kind', 'author', 'body', 'at'])
    .where('task_id', '=', id)
    .orderBy('generation', 'asc')
    .limit(1000)
    .execute()
}
