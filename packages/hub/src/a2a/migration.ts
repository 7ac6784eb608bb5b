import { type Kysely, type Migration, sql } from 'kysely'

/**
 * Migration 011: A2A tasks the hub relays. A task row holds the current state and generation;
 * every change is one row of the append-only event table, numbered by the task's generation, so
 * a stream resumes from any generation and history is never rewritten.
 */
export const a2aTasksMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('a2a_tasks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('context_id', 'text', (c) => c.notNull())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('agent', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('generation', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema
      .createIndex('a2a_tasks_owner')
      .on('a2a_tasks')
      .columns(['owner', 'updated_at'])
      .execute()
    await db.schema
      .createIndex('a2a_tasks_agent')
      .on('a2a_tasks')
      .columns(['agent', 'updated_at'])
      .execute()
    await db.schema
      .createTable('a2a_events')
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('generation', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('author', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_events_pk', ['task_id', 'generation'])
      .execute()
    await db.schema
      .createTable('a2a_sends')
      .addColumn('principal', 'text', (c) => c.notNull())
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('answer', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_sends_pk', ['principal', 'message_id'])
      .execute()
    await db.schema
      .createTable('a2a_push_configs')
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('token', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_push_configs_pk', ['task_id', 'owner', 'id'])
      .execute()
  },
}

/**
 * Migration 012: what bounds an A2A task. A task counts the bytes of its events; an artifact
 * event names its artifact in a column, so the cap on a task's artifacts is one indexed read; a
 * send's first answer is kept by reference (the task's generation), not as a copy of the view;
 * push notifications wait in a queue of one row per send, fanned out to the configs after the
 * send commits; and a principal's push configs are counted in one row, locked by every write of
 * its configs, so its caps are checked and written in one transaction on every instance.
 */
export const a2aBoundsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('a2a_tasks')
      .addColumn('stored_bytes', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
    await db.schema.alterTable('a2a_events').addColumn('artifact_id', 'text').execute()
    await db.schema.alterTable('a2a_sends').addColumn('generation', 'integer').execute()
    await backfillArtifactIds(db as Kysely<Backfill>)
    await db.schema
      .createIndex('a2a_events_artifact')
      .on('a2a_events')
      .columns(['task_id', 'artifact_id'])
      .execute()
    await db.schema
      .createIndex('a2a_push_configs_owner')
      .on('a2a_push_configs')
      .columns(['owner'])
      .execute()
    await db.schema
      .createTable('a2a_push_queue')
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('after_generation', 'integer', (c) => c.notNull())
      .addColumn('through_generation', 'integer', (c) => c.notNull())
      .addColumn('author', 'text', (c) => c.notNull())
      .addColumn('charged', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_push_queue_pk', ['task_id', 'through_generation'])
      .execute()
    await db.schema
      .createIndex('a2a_push_queue_created')
      .on('a2a_push_queue')
      .columns(['created_at'])
      .execute()
    await db.schema
      .createTable('a2a_push_usage')
      .addColumn('owner', 'text', (c) => c.primaryKey())
      .addColumn('configs', 'integer', (c) => c.notNull())
      .execute()
    await sql`insert into a2a_push_usage (owner, configs)
      select owner, count(*) from a2a_push_configs group by owner`.execute(db)
  },
}

interface Backfill {
  a2a_events: {
    task_id: string
    generation: number
    kind: string
    body: string
    artifact_id: string | null
  }
}

/** Names the artifact of every artifact event stored before the column, a page at a time. */
async function backfillArtifactIds(db: Kysely<Backfill>): Promise<void> {
  let after: { task_id: string; generation: number } | undefined
  for (;;) {
    const page = await db
      .selectFrom('a2a_events')
      .select(['task_id', 'generation', 'body'])
      .where('kind', '=', 'artifact')
      .$if(after !== undefined, (qb) =>
        qb.where((eb) =>
          eb.or([
            eb('task_id', '>', after!.task_id),
            eb.and([eb('task_id', '=', after!.task_id), eb('generation', '>', after!.generation)]),
          ]),
        ),
      )
      .orderBy('task_id')
      .orderBy('generation')
      .limit(500)
      .execute()
    for (const e of page) {
      const id = (JSON.parse(e.body) as { artifact?: { artifactId?: unknown } }).artifact
        ?.artifactId
      if (typeof id !== 'string') continue
      await db
        .updateTable('a2a_events')
        .set({ artifact_id: id })
        .where('task_id', '=', e.task_id)
        .where('generation', '=', e.generation)
        .execute()
    }
    const last = page.at(-1)
    if (!last || page.length < 500) return
    after = last
  }
}
