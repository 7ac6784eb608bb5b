import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely'

// Numbered migrations, applied in order on start. A landed migration is never edited: add a new one.
const migrations: Record<string, Migration> = {
  '001_handoffs': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('handoffs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_token_hash', 'text', (c) => c.notNull())
        .addColumn('receiver_token_hash', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('ended', 'integer', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('note', 'text')
        .addColumn('notify_url', 'text')
        .addColumn('machine', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('handoffs_expires_at')
        .on('handoffs')
        .column('expires_at')
        .execute()
      await db.schema
        .createTable('handoff_moves')
        .addColumn('handoff_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('from_state', 'text', (c) => c.notNull())
        .addColumn('to_state', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text')
        .addColumn('note', 'text')
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('handoff_moves_pk', ['handoff_id', 'version'])
        .execute()
      // seed 002: a nonce names one committed move of one handoff.
      await db.schema
        .createIndex('handoff_moves_nonce')
        .on('handoff_moves')
        .columns(['handoff_id', 'nonce'])
        .unique()
        .execute()
      await db.schema
        .createTable('quota_counters')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('window_start', 'bigint', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('quota_counters_pk', ['scope', 'subject', 'window_start'])
        .execute()
      await db.schema
        .createTable('idempotency_keys')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('idempotency_keys_pk', ['scope', 'key_hash'])
        .execute()
      await db.schema
        .createIndex('idempotency_keys_expires_at')
        .on('idempotency_keys')
        .column('expires_at')
        .execute()
      await sql`select 1`.execute(db)
    },
  },
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

/** Applies every migration not yet applied; safe to run from many instances at once. */
export async function migrate(db: Kysely<unknown>): Promise<string[]> {
  const migrator = new Migrator({ db, provider })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
