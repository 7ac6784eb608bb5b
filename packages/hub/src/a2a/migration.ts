import type { Kysely, Migration } from 'kysely'

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
