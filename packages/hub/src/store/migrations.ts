import { type Kysely, type Migration, Migrator, sql } from 'kysely'
import {
  a2aArtifactsMigration,
  a2aBoundsMigration,
  a2aChargesMigration,
  a2aLivePushUsageMigration,
  a2aSendReferencesMigration,
  a2aTasksMigration,
} from '../a2a/migration.js'
import { keyThumbprint } from '../crypto.js'

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
  '002_identity': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('principals')
        .addColumn('principal', 'text', (c) => c.primaryKey())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('enrolled_at', 'bigint', (c) => c.notNull())
        .addColumn('decided_at', 'bigint')
        .execute()
      await db.schema
        .createIndex('principals_state')
        .on('principals')
        .columns(['state', 'enrolled_at'])
        .execute()
      // seed 000: a nonce is refused again from the same key while its signature could be fresh.
      await db.schema
        .createTable('signature_nonces')
        .addColumn('keyid', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('signature_nonces_pk', ['keyid', 'nonce'])
        .execute()
      await db.schema
        .createIndex('signature_nonces_expires_at')
        .on('signature_nonces')
        .column('expires_at')
        .execute()
      await db.schema
        .createTable('hub_keys')
        .addColumn('slot', 'text', (c) => c.primaryKey())
        .addColumn('kid', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
    },
  },
  '003_resources': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('resources')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('namespace', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_by', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('resources_owner_ns_kind')
        .on('resources')
        .columns(['owner', 'namespace', 'kind'])
        .execute()
      await db.schema
        .createTable('resource_versions')
        .addColumn('resource_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('resource_versions_pk', ['resource_id', 'version'])
        .execute()
      await db.schema
        .createTable('grants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('resource_id', 'text', (c) => c.notNull())
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('actions', 'text', (c) => c.notNull())
        .addColumn('delegable', 'integer', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .addColumn('parent_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('grants_subject_resource')
        .on('grants')
        .columns(['subject', 'resource_id'])
        .execute()
      await db.schema.createIndex('grants_resource').on('grants').column('resource_id').execute()
      await db.schema.createIndex('grants_issuer').on('grants').column('issuer').execute()
      await db.schema.createIndex('grants_parent').on('grants').column('parent_id').execute()
    },
  },
  '004_messages_home': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('messages')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('sequence', 'bigint', (c) => c.notNull().unique())
        .addColumn('sender', 'text', (c) => c.notNull())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('body_digest', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('receipt', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('acked_at', 'bigint')
        .execute()
      // seed 000: an idempotencyKey names one message of its sender.
      await db.schema
        .createIndex('messages_sender_key')
        .on('messages')
        .columns(['sender', 'idempotency_key'])
        .unique()
        .execute()
      await db.schema
        .createIndex('messages_recipient_sequence')
        .on('messages')
        .columns(['recipient', 'sequence'])
        .execute()
      // One row per named counter, bumped in the writing transaction: its row lock makes commit
      // order equal sequence order, so a reader's cursor never passes a message yet to commit.
      await db.schema
        .createTable('counters')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'bigint', (c) => c.notNull())
        .execute()
      await db
        .insertInto('counters' as never)
        .values({ name: 'message_sequence', value: 0 } as never)
        .execute()
      await db.schema
        .createTable('home_files')
        .addColumn('principal', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('revision', 'integer', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('home_files_pk', ['principal', 'path'])
        .execute()
    },
  },
  '005_transfers': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('transfers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('idempotency_key', 'text')
        .addColumn('checksum', 'text', (c) => c.notNull())
        .addColumn('snapshot_bytes', 'bigint', (c) => c.notNull())
        .addColumn('tier', 'text')
        .addColumn('budget_micros', 'bigint')
        .addColumn('rate_micros', 'bigint')
        .addColumn('spent_micros', 'bigint', (c) => c.notNull())
        .addColumn('runtime', 'text')
        .addColumn('lease_instance', 'text')
        .addColumn('lease_ends_at', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('grace_ends_at', 'bigint')
        .addColumn('end_reason', 'text')
        .execute()
      // seed 004: a snapshot's creation is idempotent by key, per owner.
      await db.schema
        .createIndex('transfers_owner_key')
        .on('transfers')
        .columns(['owner', 'idempotency_key'])
        .unique()
        .execute()
      await db.schema
        .createIndex('transfers_state_tier')
        .on('transfers')
        .columns(['state', 'tier', 'created_at'])
        .execute()
      await db.schema
        .createIndex('transfers_expires_at')
        .on('transfers')
        .column('expires_at')
        .execute()
      await db.schema
        .createIndex('transfers_grace_ends_at')
        .on('transfers')
        .column('grace_ends_at')
        .execute()
      await db.schema.createIndex('transfers_runtime').on('transfers').column('runtime').execute()
      await db.schema
        .createTable('transfer_snapshots')
        .addColumn('transfer_id', 'text', (c) => c.primaryKey())
        .addColumn('content', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('transfer_events')
        .addColumn('transfer_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('from_state', 'text')
        .addColumn('to_state', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('transfer_events_pk', ['transfer_id', 'seq'])
        .execute()
      await db.schema
        .createTable('transfer_usage')
        .addColumn('transfer_id', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('amount_micros', 'bigint', (c) => c.notNull())
        .addColumn('spent_after', 'bigint', (c) => c.notNull())
        .addColumn('reporter', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('transfer_usage_pk', ['transfer_id', 'idempotency_key'])
        .execute()
      // seed 004: a token is single-use; its id is inserted with the move it authorizes.
      await db.schema
        .createTable('transfer_token_uses')
        .addColumn('jti', 'text', (c) => c.primaryKey())
        .addColumn('transfer_id', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('used_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('transfer_token_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
    },
  },
  '006_dashboard_signouts': {
    async up(db: Kysely<unknown>) {
      // Dashboard sessions are signed cookies; a sign-out is remembered here so that every
      // instance, and every restart, refuses the cookie until it would have expired anyway.
      await db.schema
        .createTable('dashboard_signouts')
        .addColumn('session_id', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute()
    },
  },
  '007_notify_outbox': {
    async up(db: Kysely<unknown>) {
      // Notify signals, written in the transaction of the move that caused them and delivered
      // from here: a row is pending until delivered or past its horizon (dead, kept to inspect).
      await db.schema
        .createTable('notify_outbox')
        .addColumn('event_id', 'text', (c) => c.primaryKey())
        .addColumn('seq', 'bigint', (c) => c.notNull().unique())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('handoff_id', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('next_at', 'bigint', (c) => c.notNull())
        .addColumn('leased_until', 'bigint', (c) => c.notNull())
        .addColumn('lease_owner', 'text')
        .addColumn('last_outcome', 'text')
        .addColumn('done_at', 'bigint')
        .execute()
      await db.schema
        .createIndex('notify_outbox_due')
        .on('notify_outbox')
        .columns(['status', 'next_at'])
        .execute()
      await db.schema
        .createIndex('notify_outbox_url')
        .on('notify_outbox')
        .columns(['url', 'status', 'seq'])
        .execute()
      // Signals are numbered in commit order, across instances, like messages (004).
      await db
        .insertInto('counters' as never)
        .values({ name: 'notify_sequence', value: 0 } as never)
        .execute()
    },
  },
  '008_usage_counters': {
    async up(db: Kysely<unknown>) {
      // The stored bytes of each principal over its resources and home files, kept in the
      // transaction of every write by a conditional update, so a quota holds across instances.
      await db.schema
        .createTable('usage_counters')
        .addColumn('principal', 'text', (c) => c.primaryKey())
        .addColumn('stored_bytes', 'bigint', (c) => c.notNull())
        .execute()
      await sql`
        insert into usage_counters (principal, stored_bytes)
        select principal, sum(size) from (
          select owner as principal, size from resources
          union all
          select principal, size from home_files
        ) as owned
        group by principal
      `.execute(db)
    },
  },
  '009_compute_jobs': {
    async up(db: Kysely<unknown>) {
      // Compute jobs (seed 000 json-expr-v1): queued, claimed under a lease by one runtime, and
      // ended once; `lease_id` names the claim a result must present.
      await db.schema
        .createTable('compute_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('language', 'text', (c) => c.notNull())
        .addColumn('program', 'text', (c) => c.notNull())
        .addColumn('input', 'text', (c) => c.notNull())
        .addColumn('output_resource_id', 'text')
        .addColumn('output_expected_version', 'integer')
        .addColumn('output_version', 'integer')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('output', 'text')
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('steps', 'bigint')
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('runtime_id', 'text')
        .addColumn('lease_id', 'text')
        .addColumn('lease_until', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('finished_at', 'bigint')
        .addUniqueConstraint('compute_jobs_owner_key', ['owner', 'idempotency_key'])
        .execute()
      await db.schema
        .createIndex('compute_jobs_claimable')
        .on('compute_jobs')
        .columns(['language', 'state', 'created_at'])
        .execute()
      await db.schema
        .createIndex('compute_jobs_owner')
        .on('compute_jobs')
        .columns(['owner', 'created_at'])
        .execute()
      // Live runtimes, one row per process, kept alive by heartbeats: discovery's
      // runtimeAvailability reads these, so it is true on every instance.
      await db.schema
        .createTable('compute_runtimes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('principal', 'text', (c) => c.notNull())
        .addColumn('languages', 'text', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute()
      // Each principal's jobs not yet ended, kept by conditional updates in the transaction of
      // every submit and end, so the concurrent-jobs quota holds across instances.
      await db.schema
        .createTable('compute_active')
        .addColumn('principal', 'text', (c) => c.primaryKey())
        .addColumn('active', 'integer', (c) => c.notNull())
        .execute()
    },
  },
  '010_hops': {
    async up(db: Kysely<unknown>) {
      // seed 003: the hub as a delegation witness. Signed elements are kept verbatim, because
      // the handoff digest covers the octets exactly as sent.
      await db.schema
        .createTable('hops')
        .addColumn('digest', 'text', (c) => c.primaryKey())
        .addColumn('iss', 'text', (c) => c.notNull())
        .addColumn('hop', 'text', (c) => c.notNull())
        .addColumn('aud', 'text', (c) => c.notNull())
        .addColumn('dialog', 'text', (c) => c.notNull())
        .addColumn('task', 'text')
        .addColumn('prev', 'text')
        .addColumn('element', 'text', (c) => c.notNull())
        .addColumn('chain', 'text', (c) => c.notNull())
        .addColumn('refs', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('receipt', 'text', (c) => c.notNull())
        .addColumn('flags', 'text', (c) => c.notNull())
        .addColumn('iat', 'bigint', (c) => c.notNull())
        .addColumn('exp', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('hops_iss_hop').on('hops').columns(['iss', 'hop']).execute()
      await db.schema.createIndex('hops_prev').on('hops').column('prev').execute()
      await db.schema
        .createTable('hop_statuses')
        .addColumn('digest', 'text', (c) => c.primaryKey())
        .addColumn('offer', 'text', (c) => c.notNull())
        .addColumn('iss', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('element', 'text', (c) => c.notNull())
        .addColumn('receipt', 'text', (c) => c.notNull())
        .addColumn('sequence', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('hop_statuses_offer')
        .on('hop_statuses')
        .columns(['offer', 'sequence'])
        .execute()
      // The hop inbox: what the hub delivered to whom, in one commit order across instances.
      await db.schema
        .createTable('hop_deliveries')
        .addColumn('sequence', 'bigint', (c) => c.primaryKey())
        .addColumn('recipient', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('offer', 'text', (c) => c.notNull())
        .addColumn('element', 'text', (c) => c.notNull())
        .addColumn('receipt', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('hop_deliveries_recipient')
        .on('hop_deliveries')
        .columns(['recipient', 'sequence'])
        .execute()
      await db
        .insertInto('counters' as never)
        .values({ name: 'hop_sequence', value: 0 } as never)
        .execute()
      // seed 003: each (iss, hop) that passed the first three checks, with its handoff digest,
      // kept at least until exp plus the skew, shared by every instance.
      await db.schema
        .createTable('hop_replay')
        .addColumn('iss', 'text', (c) => c.notNull())
        .addColumn('hop', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('data', 'text')
        .addPrimaryKeyConstraint('hop_replay_pk', ['iss', 'hop'])
        .execute()
    },
  },
  '011_a2a_tasks': a2aTasksMigration,
  '012_a2a_bounds': a2aBoundsMigration,
  '013_hop_outcomes': {
    async up(db: Kysely<unknown>) {
      // seed 003: a cancel does not show that the work took no effect, and races are made visible
      // to both sides. The delegate's outcome (completed or failed) is kept beside the state, so
      // a hop canceled before its outcome arrived stays `canceled` with the outcome shown.
      await db.schema.alterTable('hops').addColumn('outcome', 'text').execute()
      await sql`update hops set outcome = state where state in ('completed', 'failed')`.execute(db)
      // A hop that a late outcome took out of `canceled` before this migration reads canceled
      // again: its delegator's cancel came before the delegate's first outcome.
      const raced = await sql<{ digest: string; flags: string }>`
        select h.digest, h.flags from hops h
        where h.state in ('completed', 'failed') and exists (
          select 1 from hop_statuses c
          where c.offer = h.digest and c.state = 'canceled' and c.sequence < (
            select min(o.sequence) from hop_statuses o
            where o.offer = h.digest and o.state in ('completed', 'failed')))`.execute(db)
      for (const row of raced.rows) {
        const flags = (JSON.parse(row.flags) as string[]).filter((f) => f !== 'canceled-after-end')
        if (!flags.includes('outcome-after-cancel')) flags.push('outcome-after-cancel')
        await sql`update hops set state = 'canceled', flags = ${JSON.stringify(flags)},
          version = version + 1 where digest = ${row.digest}`.execute(db)
      }
    },
  },
  '014_trace_context': {
    async up(db: Kysely<unknown>) {
      // W3C Trace Context: the traceparent of the request that handed the work on, read back
      // by the agent that receives it so it continues the same trace. Null: none was carried.
      await db.schema.alterTable('messages').addColumn('trace', 'text').execute()
      await db.schema.alterTable('hop_deliveries').addColumn('trace', 'text').execute()
    },
  },
  '015_agent_labels': {
    async up(db: Kysely<unknown>) {
      // A display label an agent gives itself or an operator sets; never used for authorization.
      await db.schema.alterTable('principals').addColumn('label', 'text').execute()
    },
  },
  '016_trace_context_more': {
    async up(db: Kysely<unknown>) {
      // 014's trace column where more work changes hands: a handoff's moves, an A2A task's
      // events, a session transfer and a compute job. Null: none was carried.
      await db.schema.alterTable('handoff_moves').addColumn('trace', 'text').execute()
      await db.schema.alterTable('a2a_events').addColumn('trace', 'text').execute()
      await db.schema.alterTable('transfer_events').addColumn('trace', 'text').execute()
      await db.schema.alterTable('compute_jobs').addColumn('trace', 'text').execute()
    },
  },
  '017_a2a_artifacts': a2aArtifactsMigration,
  '018_a2a_charges': a2aChargesMigration,
  '019_a2a_send_references': a2aSendReferencesMigration,
  '020_a2a_live_push_usage': a2aLivePushUsageMigration,
  '021_trace_context_everywhere': {
    async up(db: Kysely<unknown>) {
      // The W3C tracestate that came with each traceparent 014 and 016 keep, handed on with it.
      for (const table of [
        'messages',
        'hop_deliveries',
        'handoff_moves',
        'a2a_events',
        'transfer_events',
        'compute_jobs',
      ]) {
        await db.schema.alterTable(table).addColumn('trace_state', 'text').execute()
      }
      // Trace context on the rest of what requests write: a handoff's creation, a resource's
      // current revision and each one kept, a grant, a home file, a principal's admission, a
      // witnessed hop offer and a notify signal. Null: none was carried.
      for (const table of [
        'handoffs',
        'resources',
        'resource_versions',
        'grants',
        'home_files',
        'principals',
        'hops',
        'notify_outbox',
      ]) {
        await db.schema.alterTable(table).addColumn('trace', 'text').execute()
        await db.schema.alterTable(table).addColumn('trace_state', 'text').execute()
      }
    },
  },
  '022_operator_labels': {
    async up(db: Kysely<unknown>) {
      // The operator's label beside the agent's own (015's column), so neither overwrites the
      // other; the operator's is the one shown when set. A label 015 kept stays the agent's.
      await db.schema.alterTable('principals').addColumn('operator_label', 'text').execute()
    },
  },
  '023_key_thumbprints': {
    async up(db: Kysely<unknown>) {
      // The RFC 7638 thumbprint of each enrolled key: the keyid a Web Bot Auth signature names
      // it by. Keys enrolled before this migration get theirs here, in pages.
      await db.schema.alterTable('principals').addColumn('thumbprint', 'text').execute()
      const rows = db as unknown as Kysely<{
        principals: { principal: string; public_key: string; thumbprint: string | null }
      }>
      for (;;) {
        const page = await rows
          .selectFrom('principals')
          .select(['principal', 'public_key'])
          .where('thumbprint', 'is', null)
          .limit(500)
          .execute()
        if (page.length === 0) break
        for (const row of page) {
          await rows
            .updateTable('principals')
            .set({ thumbprint: keyThumbprint(row.public_key) })
            .where('principal', '=', row.principal)
            .execute()
        }
      }
      await db.schema
        .createIndex('principals_thumbprint')
        .on('principals')
        .column('thumbprint')
        .unique()
        .execute()
    },
  },
  '024_indexes_for_growth': {
    async up(db: Kysely<unknown>) {
      // Statements that need a few rows of a table that keeps growing find them through an
      // index instead of reading the table whole (the statement-plans test holds every statement
      // to it). A group of transfer moves reads the tokens used on each of its transfers.
      const index = (name: string, table: string, columns: string[]) =>
        db.schema.createIndex(name).on(table).columns(columns).execute()
      await index('transfer_token_uses_transfer', 'transfer_token_uses', ['transfer_id', 'scope'])
      // Timed jobs: what expired, and what the compute reaper and discovery look for by state.
      await index('dashboard_signouts_expires_at', 'dashboard_signouts', ['expires_at'])
      await index('quota_counters_window', 'quota_counters', ['window_start'])
      await index('hop_replay_expires_at', 'hop_replay', ['expires_at'])
      await index('compute_jobs_state', 'compute_jobs', ['state', 'updated_at'])
      // The operator's lists, newest first: each walks its order's index and stops at its limit.
      await index('transfers_updated_at', 'transfers', ['updated_at'])
      await index('principals_enrolled_at', 'principals', ['enrolled_at', 'principal'])
      await index('resources_namespace', 'resources', ['namespace', 'updated_at'])
      await index('grants_created_at', 'grants', ['created_at'])
      await index('hops_updated_at', 'hops', ['updated_at'])
      await index('compute_jobs_created_at', 'compute_jobs', ['created_at', 'id'])
      await index('a2a_tasks_updated_at', 'a2a_tasks', ['updated_at'])
      // The overview's activity: the last hour's rows of tables that keep their history.
      await index('messages_created_at', 'messages', ['created_at'])
      await index('resource_versions_at', 'resource_versions', ['at'])
      await index('transfer_events_at', 'transfer_events', ['at'])
    },
  },
  '025_budgets': {
    async up(db: Kysely<unknown>) {
      // Issue 28: a budget on a delegation. One ledger per hop whose offer carries a budget;
      // money in integer micro-units of its unit. Invariant, held by conditional writes:
      // granted = reserved + held + spent + remaining, remaining >= 0.
      await db.schema
        .createTable('budgets')
        .addColumn('hop', 'text', (c) => c.primaryKey())
        .addColumn('parent', 'text')
        .addColumn('root', 'text', (c) => c.notNull())
        // JSON list of the hops above it, the root first: a spend moves in each of them.
        .addColumn('ancestors', 'text', (c) => c.notNull())
        .addColumn('depth', 'integer', (c) => c.notNull())
        .addColumn('iss', 'text', (c) => c.notNull())
        .addColumn('aud', 'text', (c) => c.notNull())
        .addColumn('unit', 'text', (c) => c.notNull())
        .addColumn('granted_micros', 'bigint', (c) => c.notNull())
        .addColumn('reserved_micros', 'bigint', (c) => c.notNull())
        .addColumn('held_micros', 'bigint', (c) => c.notNull())
        .addColumn('spent_micros', 'bigint', (c) => c.notNull())
        .addColumn('released_micros', 'bigint', (c) => c.notNull())
        .addColumn('rate_micros', 'bigint')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('closed_reason', 'text')
        .addColumn('children', 'integer', (c) => c.notNull())
        // On a root: the budgets of its whole tree, itself included (capped: reads walk the tree).
        .addColumn('tree_size', 'integer', (c) => c.notNull())
        .addColumn('holds', 'integer', (c) => c.notNull())
        .addColumn('entries', 'integer', (c) => c.notNull())
        .addColumn('crossings', 'integer', (c) => c.notNull())
        .addColumn('reporters', 'text', (c) => c.notNull())
        .addColumn('transfer', 'text')
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('closed_at', 'bigint')
        .execute()
      await db.schema.createIndex('budgets_root').on('budgets').column('root').execute()
      await db.schema
        .createIndex('budgets_state_expires')
        .on('budgets')
        .columns(['state', 'expires_at'])
        .execute()
      await db.schema.createIndex('budgets_transfer').on('budgets').column('transfer').execute()
      // Every report, once per (hop, kind, key): charged, or refused as a crossing.
      await db.schema
        .createTable('budget_entries')
        .addColumn('hop', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('amount_micros', 'bigint', (c) => c.notNull())
        .addColumn('charged', 'integer', (c) => c.notNull())
        .addColumn('remaining_micros', 'bigint')
        .addColumn('reporter', 'text', (c) => c.notNull())
        .addColumn('note', 'text')
        .addColumn('hold_id', 'text')
        .addColumn('receipt', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('budget_entries_pk', ['hop', 'kind', 'key'])
        .execute()
      await db.schema
        .createIndex('budget_entries_created')
        .on('budget_entries')
        .columns(['hop', 'created_at'])
        .execute()
      await db.schema
        .createTable('budget_holds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('hop', 'text', (c) => c.notNull())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull())
        .addColumn('amount_micros', 'bigint', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('settled_micros', 'bigint')
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('settled_at', 'bigint')
        .execute()
      await db.schema
        .createIndex('budget_holds_state_expires')
        .on('budget_holds')
        .columns(['state', 'expires_at'])
        .execute()
      await db.schema
        .createIndex('budget_holds_hop')
        .on('budget_holds')
        .columns(['hop', 'state'])
        .execute()
      // Open holds per principal, changed by conditional writes so the cap holds on every instance.
      await db.schema
        .createTable('budget_holders')
        .addColumn('principal', 'text', (c) => c.primaryKey())
        .addColumn('open_holds', 'integer', (c) => c.notNull())
        .execute()
      // The hop a task's first message carried: the task's end closes its budget without reading
      // the task's events.
      await db.schema.alterTable('a2a_tasks').addColumn('hop', 'text').execute()
    },
  },
}

/** Every migration's name, in the order they apply: what a database written today holds. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(migrations).sort()

/**
 * Applies every migration not yet applied; safe to run from many instances at once. With
 * `through`, only those up to that name, as a database an older release left (for tests of what
 * a later migration finds there).
 */
export async function migrate(db: Kysely<unknown>, through?: string): Promise<string[]> {
  // Each migration stands alone (it never edits what another made), so one that a database
  // lacks is applied even when a later-numbered one already ran there.
  const chosen =
    through === undefined
      ? migrations
      : Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= through))
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => chosen },
    allowUnorderedMigrations: true,
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
