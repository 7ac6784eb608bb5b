import type { HopRecord, ReplayStore } from '@baton/context'
import { type Kysely, sql } from 'kysely'
import { CompiledShapes } from '../store/compiled.js'
import type { Database } from '../store/database.js'
import type { HopDeliveryRow, HopReplayRow, HopRow, HopStatusRow, Schema } from '../store/schema.js'

/** SQL for witnessed hops, in the subset both dialects share. Every function takes the db or a tx. */

const SEQUENCE_COUNTER = 'hop_sequence'

/** Takes the next hop inbox sequence; the counter row stays locked until the transaction ends. */
export async function nextSequence(db: Kysely<Schema>): Promise<number> {
  const row = await db
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('name', '=', SEQUENCE_COUNTER)
    .returning('value')
    .executeTakeFirstOrThrow()
  return Number(row.value)
}

/** The admission statement, compiled once per number of principals and dialect. */
const admittedShapes = new CompiledShapes(64)

/**
 * Which of these distinct principals are admitted (approved), in one query whose text is compiled
 * once per arity and dialect, so each database prepares it once and afterwards only binds it: it
 * runs on every check. Answers them in the order given.
 */
// The statement names the principals in the one indexable term, their primary key, and tests the
// state in an expression: with `state = 'approved'` in the WHERE clause SQLite walks the state
// index over every approved principal instead (4 ms a check at 10,000 principals, against 20 us
// by the key).
export async function admittedAmong(
  db: Kysely<Schema>,
  principals: readonly string[],
): Promise<string[]> {
  if (principals.length === 0) return []
  const { rows } = await admittedShapes.run<{ principal: string }>(
    db,
    String(principals.length),
    principals,
    () =>
      sql<{ principal: string }>`select principal from principals
      where principal in (${sql.join(principals)})
        and case when state = 'approved' then 1 else 0 end = 1`.compile(db),
  )
  if (rows.length === principals.length) return [...principals]
  const admitted = new Set(rows.map((r) => r.principal))
  return principals.filter((p) => admitted.has(p))
}

export async function insertHop(db: Kysely<Schema>, row: HopRow): Promise<void> {
  await db.insertInto('hops').values(row).execute()
}

export async function findHop(db: Kysely<Schema>, digest: string): Promise<HopRow | undefined> {
  const row = await db
    .selectFrom('hops')
    .selectAll()
    .where('digest', '=', digest)
    .executeTakeFirst()
  return row && normalizeHop(row)
}

/** The hop an (iss, hop) pair names, if the hub delivered one. */
export async function findHopById(
  db: Kysely<Schema>,
  iss: string,
  hop: string,
): Promise<HopRow | undefined> {
  const row = await db
    .selectFrom('hops')
    .selectAll()
    .where('iss', '=', iss)
    .where('hop', '=', hop)
    .executeTakeFirst()
  return row && normalizeHop(row)
}

/** The most recently changed hops, newest first (the operator's dashboard). */
export async function recentHops(db: Kysely<Schema>, limit: number): Promise<HopRow[]> {
  const rows = await db
    .selectFrom('hops')
    .selectAll()
    .orderBy('updated_at', 'desc')
    .orderBy('digest')
    .limit(limit)
    .execute()
  return rows.map(normalizeHop)
}

/** Offers whose prev names the given handoff digest. */
export async function childrenOf(db: Kysely<Schema>, digest: string): Promise<HopRow[]> {
  const rows = await db.selectFrom('hops').selectAll().where('prev', '=', digest).execute()
  return rows.map(normalizeHop)
}

/** Moves a hop only from the version read (compare-and-set); answers whether it moved. */
export async function updateHop(
  db: Kysely<Schema>,
  digest: string,
  expectedVersion: number,
  set: { state?: string; outcome?: string | null; flags?: string; updated_at: number },
): Promise<boolean> {
  const res = await db
    .updateTable('hops')
    .set({ ...set, version: expectedVersion + 1 })
    .where('digest', '=', digest)
    .where('version', '=', expectedVersion)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

export async function insertStatus(db: Kysely<Schema>, row: HopStatusRow): Promise<void> {
  await db.insertInto('hop_statuses').values(row).execute()
}

export async function findStatus(
  db: Kysely<Schema>,
  digest: string,
): Promise<HopStatusRow | undefined> {
  const row = await db
    .selectFrom('hop_statuses')
    .selectAll()
    .where('digest', '=', digest)
    .executeTakeFirst()
  return row && { ...row, sequence: Number(row.sequence), created_at: Number(row.created_at) }
}

/** Every status of a hop, oldest first. */
export async function statusesOf(db: Kysely<Schema>, offer: string): Promise<HopStatusRow[]> {
  const rows = await db
    .selectFrom('hop_statuses')
    .selectAll()
    .where('offer', '=', offer)
    .orderBy('sequence', 'asc')
    .execute()
  return rows.map((r) => ({ ...r, sequence: Number(r.sequence), created_at: Number(r.created_at) }))
}

export async function insertDelivery(db: Kysely<Schema>, row: HopDeliveryRow): Promise<void> {
  await db.insertInto('hop_deliveries').values(row).execute()
}

/** The recipient's hop inbox after an exclusive sequence, oldest first. */
export async function listDeliveries(
  db: Kysely<Schema>,
  q: { recipient: string; after: number; limit: number },
): Promise<HopDeliveryRow[]> {
  const rows = await db
    .selectFrom('hop_deliveries')
    .selectAll()
    .where('recipient', '=', q.recipient)
    .where('sequence', '>', q.after)
    .orderBy('sequence', 'asc')
    .limit(q.limit)
    .execute()
  return rows.map((r) => ({ ...r, sequence: Number(r.sequence), created_at: Number(r.created_at) }))
}

function normalizeHop(row: HopRow): HopRow {
  return {
    ...row,
    iat: Number(row.iat),
    exp: Number(row.exp),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
  }
}

function toRecord(row: HopReplayRow): HopRecord {
  const record = {
    iss: row.iss,
    hop: row.hop,
    digest: row.digest,
    expiresAt: Number(row.expires_at),
  }
  return row.data === null ? record : { ...record, data: JSON.parse(row.data) }
}

function toRow(record: HopRecord): HopReplayRow {
  return {
    iss: record.iss,
    hop: record.hop,
    digest: record.digest,
    expires_at: Math.ceil(record.expiresAt),
    data: record.data === undefined ? null : JSON.stringify(record.data),
  }
}

/**
 * Remembers a record in `db` (the database or a transaction) unless a live one exists for its
 * (iss, hop): one conditional insert, or one conditional replacement of an expired record, so
 * two writers racing on one (iss, hop) see exactly one winner. Answers the live record otherwise.
 */
export async function claimReplay(
  db: Kysely<Schema>,
  record: HopRecord,
  nowMs: number,
): Promise<HopRecord | undefined> {
  const row = toRow(record)
  const inserted = await db
    .insertInto('hop_replay')
    .values(row)
    .onConflict((oc) => oc.columns(['iss', 'hop']).doNothing())
    .executeTakeFirst()
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return undefined
  const replaced = await db
    .updateTable('hop_replay')
    .set({ digest: row.digest, expires_at: row.expires_at, data: row.data })
    .where('iss', '=', row.iss)
    .where('hop', '=', row.hop)
    .where('expires_at', '<=', nowMs)
    .executeTakeFirst()
  if (Number(replaced.numUpdatedRows) === 1) return undefined
  const live = await liveReplay(db, record.iss, record.hop, nowMs)
  // A live record that expired between the two statements is replaced on the next attempt.
  return live ?? claimReplay(db, record, nowMs)
}

async function liveReplay(
  db: Kysely<Schema>,
  iss: string,
  hop: string,
  nowMs: number,
): Promise<HopRecord | undefined> {
  const row = await db
    .selectFrom('hop_replay')
    .selectAll()
    .where('iss', '=', iss)
    .where('hop', '=', hop)
    .where('expires_at', '>', nowMs)
    .executeTakeFirst()
  return row && toRecord(row)
}

/**
 * The library's ReplayStore over the hub's database: every instance shares it, and it survives a
 * restart. `remember` is one conditional insert, or one conditional replacement of an expired
 * record, so two instances racing on one (iss, hop) see exactly one winner.
 */
// seed 003: a receiver must remember each (iss, hop) pair that passed the first three checks,
// with its handoff digest, at least until exp plus the skew, in storage that survives a restart
export class HubReplayStore implements ReplayStore {
  constructor(private readonly database: Database) {}

  private get db(): Kysely<Schema> {
    return this.database.db
  }

  async remember(record: HopRecord, nowMs: number): Promise<HopRecord | undefined> {
    return claimReplay(this.db, record, nowMs)
  }

  /**
   * A replay store for one offer's checks that only reads: it answers a live record as
   * `remember` would and otherwise notes the record it would remember, for the caller to write
   * with `claimReplay` in the transaction of the offer's outcome (one commit with its nonce).
   */
  noting(): NotingReplayStore {
    return new NotingReplayStore(this)
  }

  async get(iss: string, hop: string, nowMs: number): Promise<HopRecord | undefined> {
    return liveReplay(this.db, iss, hop, nowMs)
  }

  async put(record: HopRecord): Promise<void> {
    const row = toRow(record)
    await this.db
      .insertInto('hop_replay')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['iss', 'hop'])
          .doUpdateSet({ digest: row.digest, expires_at: row.expires_at, data: row.data }),
      )
      .execute()
  }

  async list(nowMs: number): Promise<HopRecord[]> {
    const rows = await this.db
      .selectFrom('hop_replay')
      .selectAll()
      .where('expires_at', '>', nowMs)
      .orderBy('iss')
      .orderBy('hop')
      .execute()
    return rows.map(toRecord)
  }

  async sweep(nowMs: number): Promise<number> {
    const res = await this.db.deleteFrom('hop_replay').where('expires_at', '<=', nowMs).execute()
    return res.reduce((n, r) => n + Number(r.numDeletedRows), 0)
  }

  /** The database belongs to the hub, which closes it. */
  async close(): Promise<void> {}
}

/**
 * One offer's view of the hub's replay store: `remember` reads and notes, writing nothing, so
 * the record commits with the offer's outcome; every other method is the hub store's own.
 */
export class NotingReplayStore implements ReplayStore {
  /** The record the checks would have remembered, once they found no live one. */
  noted: HopRecord | undefined

  constructor(private readonly store: HubReplayStore) {}

  async remember(record: HopRecord, nowMs: number): Promise<HopRecord | undefined> {
    const live = await this.store.get(record.iss, record.hop, nowMs)
    if (live === undefined) this.noted = record
    return live
  }

  get(iss: string, hop: string, nowMs: number): Promise<HopRecord | undefined> {
    return this.store.get(iss, hop, nowMs)
  }

  put(record: HopRecord): Promise<void> {
    return this.store.put(record)
  }

  list(nowMs: number): Promise<HopRecord[]> {
    return this.store.list(nowMs)
  }

  sweep(nowMs: number): Promise<number> {
    return this.store.sweep(nowMs)
  }

  async close(): Promise<void> {}
}
