// What the A2A migrations since 016 find in a database an older release left, and what they
// leave there: artifacts folded once, whole-view answers turned into references, task bytes
// counted against their owners, and push configs of ended tasks no longer counted.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import { sqlitePath } from '../src/store/database.js'
import { migrate } from '../src/store/migrations.js'
import type { Schema } from '../src/store/schema.js'
import { startTestHub, type TestHub, testStores } from './support.js'

const OWNER = 'did:key:z6MkOwnerOfTheOldTasks'
const AGENT = 'did:key:z6MkAgentOfTheOldTasks'
const AT = 1_700_000_000_000

const status = (state: string) => JSON.stringify({ state, timestamp: new Date(AT).toISOString() })
const artifactEvent = (generation: number, id: string, text: string, append: boolean) => ({
  task_id: 'task_old',
  generation,
  kind: 'artifact',
  author: AGENT,
  body: JSON.stringify({
    artifact: { artifactId: id, name: `${id} name`, parts: [{ text }] },
    append,
    lastChunk: false,
  }),
  at: AT,
  artifact_id: id,
  trace: null,
})

/** Writes what an older release kept: tasks, events, whole-view answers and push configs. */
async function seedOlderRelease(db: Kysely<Schema>): Promise<void> {
  const task = (id: string, state: string, generation: number, stored: number) => ({
    id,
    context_id: id,
    owner: OWNER,
    agent: AGENT,
    state,
    generation,
    status: status(state),
    created_at: AT,
    updated_at: AT,
    stored_bytes: stored,
  })
  await db
    .insertInto('a2a_tasks')
    .values([
      task('task_old', 'TASK_STATE_WORKING', 5, 1000),
      task('task_done', 'TASK_STATE_COMPLETED', 1, 300),
    ])
    .execute()
  const created = {
    message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'go' }], taskId: 'task_old' },
    status: JSON.parse(status('TASK_STATE_SUBMITTED')),
  }
  await db
    .insertInto('a2a_events')
    .values([
      {
        task_id: 'task_old',
        generation: 1,
        kind: 'created',
        author: OWNER,
        body: JSON.stringify(created),
        at: AT,
        artifact_id: null,
        trace: null,
      },
      artifactEvent(2, 'a0', 'first', false),
      artifactEvent(3, 'a0', 'second', true),
      artifactEvent(4, 'a1', 'only', false),
      artifactEvent(5, 'a0', 'whole', false),
    ])
    .execute()
  await db
    .insertInto('a2a_sends')
    .values([
      {
        principal: OWNER,
        message_id: 'm1',
        request_hash: 'h1',
        task_id: 'task_old',
        answer: JSON.stringify({ id: 'task_old', generation: 1, artifacts: [], history: [] }),
        generation: null as unknown as number,
        created_at: AT,
      },
      {
        principal: AGENT,
        message_id: 'unreadable',
        request_hash: 'h2',
        task_id: 'task_old',
        answer: '{not json',
        generation: null as unknown as number,
        created_at: AT,
      },
    ])
    .execute()
  const config = (task_id: string, id: string) => ({
    task_id,
    id,
    owner: OWNER,
    url: `https://hooks.example/${id}`,
    token: null,
    created_at: AT,
  })
  await db
    .insertInto('a2a_push_configs')
    .values([config('task_old', 'c1'), config('task_done', 'c2'), config('task_done', 'c3')])
    .execute()
  await db.insertInto('a2a_push_usage').values({ owner: OWNER, configs: 3 }).execute()
  await db.insertInto('usage_counters').values({ principal: OWNER, stored_bytes: 50 }).execute()
}

/** A Kysely of its own on a fresh store's database, closed by `destroy`. */
function connect(env: Record<string, string>): Kysely<Schema> {
  if (env.DATABASE_URL) {
    return new Kysely<Schema>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: env.DATABASE_URL }) }),
    })
  }
  mkdirSync(env.BATON_DATA_DIR!, { recursive: true })
  return new Kysely<Schema>({
    dialect: new SqliteDialect({ database: new SQLite(sqlitePath(env.BATON_DATA_DIR!)) }),
  })
}

for (const store of testStores) {
  describe(`A2A migrations 017 to 020 on an older database (${store.name})`, () => {
    let hub: TestHub

    before(async () => {
      const prepare = async (env: Record<string, string>) => {
        const db = connect(env)
        try {
          await migrate(db as unknown as Kysely<unknown>, '016_trace_context_more')
          await seedOlderRelease(db)
        } finally {
          await db.destroy()
        }
      }
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' }, { prepare })
    })
    after(() => hub?.close())

    test('the artifacts are folded once, in the order they began', async () => {
      const task = await hub.ctx.a2a.get(OWNER, { id: 'task_old' })
      assert.deepEqual(task.artifacts, [
        { artifactId: 'a0', name: 'a0 name', parts: [{ text: 'whole' }] },
        { artifactId: 'a1', name: 'a1 name', parts: [{ text: 'only' }] },
      ])
      const rows = await hub.ctx.database.db
        .selectFrom('a2a_artifacts')
        .select(['artifact_id', 'seq', 'generation'])
        .where('task_id', '=', 'task_old')
        .orderBy('seq')
        .execute()
      assert.deepEqual(
        rows.map((r) => [r.artifact_id, Number(r.seq), Number(r.generation)]),
        [
          ['a0', 2, 5],
          ['a1', 4, 4],
        ],
      )
    })

    test('whole-view answers become references; one naming no generation is dropped', async () => {
      const sends = await hub.ctx.database.db
        .selectFrom('a2a_sends')
        .select(['message_id', 'answer', 'generation'])
        .orderBy('message_id')
        .execute()
      assert.deepEqual(
        sends.map((s) => [s.message_id, s.answer, Number(s.generation)]),
        [['m1', '', 1]],
      )
    })

    test("the tasks' bytes count against their owner; ended tasks' push configs do not", async () => {
      const db = hub.ctx.database.db
      const used = await db
        .selectFrom('usage_counters')
        .select('stored_bytes')
        .where('principal', '=', OWNER)
        .executeTakeFirstOrThrow()
      assert.equal(Number(used.stored_bytes), 50 + 1000 + 300)
      const configs = await db
        .selectFrom('a2a_push_usage')
        .select('configs')
        .where('owner', '=', OWNER)
        .executeTakeFirstOrThrow()
      assert.equal(Number(configs.configs), 1)
    })
  })
}
