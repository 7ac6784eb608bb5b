import { type Kysely, type Migration, sql } from 'kysely'
import { joinParts, splitArtifact } from './store.js'

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

/**
 * Migration 017: a task's artifacts folded as they are appended. One row per artifact holds its
 * members but `parts` as JSON (`head`), its parts as the text of a JSON array without brackets
 * (`parts`, so an append is one concatenation in SQL and nothing is read back), where it stands
 * among the task's artifacts (`seq`, the generation of its first event) and the generation of
 * the newest event folded into it. A view reads one row per artifact it shows, never the events.
 */
export const a2aArtifactsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('a2a_artifacts')
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('artifact_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('generation', 'integer', (c) => c.notNull())
      .addColumn('head', 'text', (c) => c.notNull())
      .addColumn('parts', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_artifacts_pk', ['task_id', 'artifact_id'])
      .execute()
    await backfillArtifacts(db as Kysely<ArtifactBackfill>)
  },
}

interface ArtifactBackfill {
  a2a_events: { task_id: string; generation: number; kind: string; body: string }
  a2a_artifacts: {
    task_id: string
    artifact_id: string
    seq: number
    generation: number
    head: string
    parts: string
  }
}

/** Folds the artifact events stored before migration 017, one task at a time. */
async function backfillArtifacts(db: Kysely<ArtifactBackfill>): Promise<void> {
  let folding: string | undefined
  let folded = new Map<string, ArtifactBackfill['a2a_artifacts']>()
  const flush = async () => {
    if (folded.size > 0)
      await db
        .insertInto('a2a_artifacts')
        .values([...folded.values()])
        .execute()
    folded = new Map()
  }
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
      if (e.task_id !== folding) {
        await flush()
        folding = e.task_id
      }
      const body = JSON.parse(e.body) as {
        artifact?: { artifactId?: unknown; parts?: unknown }
        append?: boolean
      }
      const id = body.artifact?.artifactId
      if (typeof id !== 'string' || !Array.isArray(body.artifact?.parts)) continue
      const { head, parts } = splitArtifact(body.artifact as { parts: unknown[] })
      const known = folded.get(id)
      if (known && body.append === true) {
        known.parts = joinParts(known.parts, parts)
        known.generation = e.generation
      } else {
        folded.set(id, {
          task_id: e.task_id,
          artifact_id: id,
          seq: known?.seq ?? e.generation,
          generation: e.generation,
          head,
          parts,
        })
      }
    }
    const last = page.at(-1)
    if (!last || page.length < 500) break
    after = last
  }
  await flush()
}

/**
 * Migration 018: push notifications are charged to the principal that owns each config, not to
 * the author of the event. A queued send records what it charged each config owner (`charges`,
 * JSON; null on rows queued before, which charged their author), and each notification in the
 * outbox names who it is charged to (`charged_to`), so its bytes go back to that principal when
 * it is delivered or dead. A task's event bytes count against its owner's stored bytes; what
 * tasks held before this migration is counted now.
 */
export const a2aChargesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('a2a_push_queue').addColumn('charges', 'text').execute()
    await db.schema.alterTable('notify_outbox').addColumn('charged_to', 'text').execute()
    await sql`
      insert into usage_counters (principal, stored_bytes)
      select owner, sum(stored_bytes) from a2a_tasks group by owner having sum(stored_bytes) > 0
      on conflict (principal) do update
        set stored_bytes = usage_counters.stored_bytes + excluded.stored_bytes
    `.execute(db)
  },
}

/**
 * Migration 019: the answers older releases kept as whole copies of a task view
 * (`a2a_sends.answer`, before migration 012) become references: the generation that view
 * showed, read again on a repeat like every later answer. A copy that names no generation is
 * dropped, so a repeat of that message id is sent anew.
 */
export const a2aSendReferencesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const sends = db as Kysely<SendBackfill>
    for (;;) {
      const page = await sends
        .selectFrom('a2a_sends')
        .select(['principal', 'message_id', 'answer'])
        .where('generation', 'is', null)
        .limit(200)
        .execute()
      for (const s of page) {
        const generation = generationOf(s.answer)
        const key = { principal: s.principal, message_id: s.message_id }
        if (generation === undefined) {
          await sends
            .deleteFrom('a2a_sends')
            .where('principal', '=', key.principal)
            .where('message_id', '=', key.message_id)
            .execute()
        } else {
          await sends
            .updateTable('a2a_sends')
            .set({ generation, answer: '' })
            .where('principal', '=', key.principal)
            .where('message_id', '=', key.message_id)
            .execute()
        }
      }
      if (page.length < 200) return
    }
  },
}

interface SendBackfill {
  a2a_sends: { principal: string; message_id: string; answer: string; generation: number | null }
}

/** The generation a stored task view showed, if it names one. */
function generationOf(answer: string): number | undefined {
  try {
    const view = JSON.parse(answer) as { generation?: unknown }
    return Number.isSafeInteger(view.generation) && (view.generation as number) > 0
      ? (view.generation as number)
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Migration 020: push configs of ended tasks no longer count against their owner's cap (an ended
 * task changes no more, so its configs are never used again after its last notification): each
 * principal's count is taken again over the tasks that have not ended.
 */
export const a2aLivePushUsageMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`delete from a2a_push_usage`.execute(db)
    await sql`insert into a2a_push_usage (owner, configs)
      select c.owner, count(*) from a2a_push_configs c
      join a2a_tasks t on t.id = c.task_id
      where t.state not in (${sql.join(ENDED_STATES.map((s) => sql.lit(s)))})
      group by c.owner`.execute(db)
  },
}

/** The terminal task states as stored (A2A 1.0), as of migration 020. */
const ENDED_STATES = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_REJECTED',
]
