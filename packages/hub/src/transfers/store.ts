import { type Kysely, type RawBuilder, sql } from 'kysely'
import { CompiledShapes } from '../store/compiled.js'
import type {
  Schema,
  TransferEventRow,
  TransferRow,
  TransferTokenUseRow,
  TransferUsageRow,
} from '../store/schema.js'

/** SQL for session transfers, in the subset both dialects share. Every function takes db or tx. */

type Db = Kysely<Schema>

/** Hot statements compiled once per shape; a batch size is part of a shape. */
const shapes = new CompiledShapes(2048)

/** Every column of a row type, in insert order; one left out of the list fails to compile. */
const allColumns =
  <T>() =>
  <const C extends readonly (keyof T)[]>(
    ...columns: C & (Exclude<keyof T, C[number]> extends never ? unknown : never)
  ): C =>
    columns

const TRANSFER_COLUMNS = allColumns<TransferRow>()(
  'id',
  'owner',
  'state',
  'version',
  'idempotency_key',
  'checksum',
  'snapshot_bytes',
  'tier',
  'budget_micros',
  'rate_micros',
  'spent_micros',
  'runtime',
  'lease_instance',
  'lease_ends_at',
  'created_at',
  'updated_at',
  'expires_at',
  'grace_ends_at',
  'end_reason',
)
const EVENT_COLUMNS = allColumns<TransferEventRow>()(
  'transfer_id',
  'seq',
  'type',
  'from_state',
  'to_state',
  'actor',
  'data',
  'at',
  'trace',
  'trace_state',
)
const USAGE_COLUMNS = allColumns<TransferUsageRow>()(
  'transfer_id',
  'idempotency_key',
  'amount_micros',
  'spent_after',
  'reporter',
  'at',
)
const TOKEN_USE_COLUMNS = allColumns<TransferTokenUseRow>()(
  'jti',
  'transfer_id',
  'scope',
  'used_at',
)

/** Rows with exactly `columns`, in their order, so the compiled text's columns are those. */
function ordered<T, K extends keyof T>(rows: T[], columns: readonly K[]): Pick<T, K>[] {
  return rows.map((r) => Object.fromEntries(columns.map((c) => [c, r[c]])) as Pick<T, K>)
}

/** The parameters of `rows` with `columns`, row by row, as an insert of them binds them. */
function valuesOf<T>(rows: T[], columns: readonly (keyof T)[]): unknown[] {
  const out: unknown[] = []
  for (const r of rows) for (const c of columns) out.push(r[c])
  return out
}

/** Inserts `rows` into `table` with one statement compiled once per row count. */
async function insertRows<T extends keyof Schema>(
  db: Db,
  table: T,
  rows: Schema[T][],
  columns: readonly (keyof Schema[T])[],
): Promise<void> {
  if (rows.length === 0) return
  await shapes.run(db, `insert ${table} ${rows.length}`, valuesOf(rows, columns), () =>
    db
      .insertInto(table)
      .values(ordered(rows, columns) as never)
      .compile(),
  )
}

/** Inserts many staged transfers and their snapshots, one statement each. */
export async function insertTransfers(
  db: Db,
  created: { row: TransferRow; content: string }[],
): Promise<void> {
  if (created.length === 0) return
  await insertRows(
    db,
    'transfers',
    created.map((c) => c.row),
    TRANSFER_COLUMNS,
  )
  await insertRows(
    db,
    'transfer_snapshots',
    created.map((c) => ({ transfer_id: c.row.id, content: c.content })),
    ['transfer_id', 'content'],
  )
}

/** Transfers of any of `owners` under any of `keys` (a superset of the pairs asked for). */
export async function findByOwnerKeys(
  db: Db,
  owners: string[],
  keys: string[],
): Promise<TransferRow[]> {
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('owner', 'in', owners)
    .where('idempotency_key', 'in', keys)
    .execute()
}

export async function findTransfer(db: Db, id: string): Promise<TransferRow | undefined> {
  const { rows } = await shapes.run(db, 'find', [id], () =>
    db.selectFrom('transfers').selectAll().where('id', '=', id).compile(),
  )
  return rows[0]
}

export async function readSnapshot(db: Db, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('transfer_snapshots')
    .select('content')
    .where('transfer_id', '=', id)
    .executeTakeFirst()
  return row?.content
}

export async function listEvents(db: Db, id: string): Promise<TransferEventRow[]> {
  return db
    .selectFrom('transfer_events')
    .selectAll()
    .where('transfer_id', '=', id)
    .orderBy('seq', 'asc')
    .execute()
}

/** Provisioned, unclaimed, live transfers of a tier, oldest first. */
export async function claimable(db: Db, tier: string, now: number, limit = 8): Promise<string[]> {
  const rows = await db
    .selectFrom('transfers')
    .select('id')
    .where('state', '=', 'provisioned')
    .where('tier', '=', tier)
    .where('runtime', 'is', null)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'asc')
    .limit(limit)
    .execute()
  return rows.map((r) => r.id)
}

/** Transfers whose pre-active TTL passed, and insolvent ones past their grace, for the reaper. */
export async function dueForReaping(
  db: Db,
  now: number,
  limit = 200,
): Promise<{ expired: TransferRow[]; graceOver: TransferRow[] }> {
  const expired = await db
    .selectFrom('transfers')
    .selectAll()
    .where('state', 'in', ['staged', 'provisioned', 'pushed'])
    .where('expires_at', '<=', now)
    .limit(limit)
    .execute()
  const graceOver = await db
    .selectFrom('transfers')
    .selectAll()
    .where('state', '=', 'insolvent')
    .where('grace_ends_at', '<=', now)
    .limit(limit)
    .execute()
  return { expired, graceOver }
}

/** Transfers a principal owns or runs, newest first. */
export async function listFor(
  db: Db,
  q: { principal: string; role: 'owner' | 'runtime'; state?: string; limit: number },
): Promise<TransferRow[]> {
  let query = db
    .selectFrom('transfers')
    .selectAll()
    .where(q.role, '=', q.principal)
    .orderBy('created_at', 'desc')
    .limit(q.limit)
  if (q.state) query = query.where('state', '=', q.state)
  return query.execute()
}

/** How many transfers are stored in each state; states with none are absent. */
export async function countByState(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('transfers')
    .select(['state', db.fn.countAll<string | number>().as('n')])
    .groupBy('state')
    .execute()
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

/** A transfer as a group of writes reads it, with what its writes need beside the row. */
export interface LockedTransfer extends TransferRow {
  /** The tokens used on it, one per scope at most (each token-gated move happens once). */
  provision_jti?: string | null
  activate_jti?: string | null
  /** The snapshot's canonical content, when asked for. */
  content?: string | null
  /** The amount of the usage report asked for under this transfer's key, if there is one. */
  usage_amount?: number | null
}

/** What a group's read of its transfers takes beside the rows. */
export interface LockExtras {
  lock: boolean
  tokens: boolean
  content: string[]
  /** One usage key per transfer at most: each pair's report is read with its row. */
  usage: (readonly [id: string, key: string])[]
}

/**
 * The transfers of a group of writes, in id order, locked for update where rows lock; with the
 * tokens used on them when `tokens`, the snapshot content of those in `content`, and the amount
 * of each `usage` pair's report, so a group reads what it decides on in one statement.
 */
export async function lockTransfers(
  db: Db,
  ids: string[],
  m: LockExtras,
): Promise<LockedTransfer[]> {
  const params = [
    ...(m.tokens ? ['provision', 1, 'activate', 1] : []),
    ...m.content,
    ...m.usage.flat(),
    ...ids,
  ]
  const shape = `lock ${ids.length} ${m.tokens} ${m.content.length} ${m.usage.length} ${m.lock}`
  const { rows } = await shapes.run(db, shape, params, () => lockQuery(db, ids, m).compile())
  return rows as LockedTransfer[]
}

function lockQuery(db: Db, ids: string[], m: LockExtras) {
  return db
    .selectFrom('transfers')
    .selectAll('transfers')
    .$if(m.tokens, (qb) =>
      qb.select((eb) =>
        (['provision', 'activate'] as const).map((scope) =>
          eb
            .selectFrom('transfer_token_uses')
            .select('transfer_token_uses.jti')
            .whereRef('transfer_token_uses.transfer_id', '=', 'transfers.id')
            .where('transfer_token_uses.scope', '=', scope)
            .limit(1)
            .as(`${scope}_jti`),
        ),
      ),
    )
    .$if(m.content.length > 0, (qb) =>
      qb.select((eb) =>
        eb
          .case()
          .when('transfers.id', 'in', m.content)
          .then(
            eb
              .selectFrom('transfer_snapshots')
              .select('transfer_snapshots.content')
              .whereRef('transfer_snapshots.transfer_id', '=', 'transfers.id'),
          )
          .end()
          .as('content'),
      ),
    )
    .$if(m.usage.length > 0, (qb) =>
      qb.select(
        sql<number | null>`case ${sql.join(
          m.usage.map(
            ([id, key]) =>
              sql`when transfers.id = ${id} then (select transfer_usage.amount_micros
                from transfer_usage where transfer_usage.transfer_id = transfers.id
                and transfer_usage.idempotency_key = ${key})`,
          ),
          sql` `,
        )} end`.as('usage_amount'),
      ),
    )
    .where('transfers.id', 'in', ids)
    .orderBy('transfers.id')
    .$if(m.lock, (qb) => qb.forUpdate('transfers'))
}

/** The event logs of many transfers, each in order. */
export async function listEventsOf(db: Db, ids: string[]): Promise<TransferEventRow[]> {
  return db
    .selectFrom('transfer_events')
    .selectAll()
    .where('transfer_id', 'in', ids)
    .orderBy('transfer_id')
    .orderBy('seq')
    .execute()
}

/** Usage reports of any of `ids` under any of `keys` (a superset of the pairs asked for). */
export async function findUsages(
  db: Db,
  ids: string[],
  keys: string[],
): Promise<TransferUsageRow[]> {
  const shape = `usages ${ids.length} ${keys.length}`
  const { rows } = await shapes.run(db, shape, [...ids, ...keys], () =>
    db
      .selectFrom('transfer_usage')
      .selectAll()
      .where('transfer_id', 'in', ids)
      .where('idempotency_key', 'in', keys)
      .compile(),
  )
  return rows
}

/**
 * Writes the decided rows of a group in one statement, each only if still at the version it was
 * read at; answers how many rows changed.
 */
export async function applyTransfers(
  db: Db,
  rows: TransferRow[],
  readVersion: Map<string, number>,
): Promise<number> {
  const params = applyParams(rows, readVersion)
  const result = await shapes.run(db, `apply ${rows.length}`, params, () =>
    applyQuery(rows, readVersion).compile(db),
  )
  return Number(result.numAffectedRows ?? 0n)
}

/** The parameters of `applyQuery`, in its order. */
function applyParams(rows: TransferRow[], readVersion: Map<string, number>): unknown[] {
  return rows.flatMap((r) => [
    r.id,
    readVersion.get(r.id)!,
    r.state,
    r.version,
    r.updated_at,
    r.expires_at,
    r.tier,
    r.budget_micros,
    r.rate_micros,
    r.spent_micros,
    r.runtime,
    r.lease_instance,
    r.lease_ends_at,
    r.grace_ends_at,
    r.end_reason,
  ])
}

function applyValues(rows: TransferRow[], readVersion: Map<string, number>) {
  const text = (v: string | null) => sql`cast(${v} as text)`
  const big = (v: number | null) => sql`cast(${v} as bigint)`
  const int = (v: number) => sql`cast(${v} as integer)`
  return sql.join(
    rows.map(
      (r) =>
        sql`(${sql.join([
          text(r.id),
          int(readVersion.get(r.id)!),
          text(r.state),
          int(r.version),
          big(r.updated_at),
          big(r.expires_at),
          text(r.tier),
          big(r.budget_micros),
          big(r.rate_micros),
          big(r.spent_micros),
          text(r.runtime),
          text(r.lease_instance),
          big(r.lease_ends_at),
          big(r.grace_ends_at),
          text(r.end_reason),
        ])})`,
    ),
  )
}

const APPLY_SET = sql`set state = v.state, version = v.version, updated_at = v.updated_at,
        expires_at = v.expires_at, tier = v.tier, budget_micros = v.budget_micros,
        rate_micros = v.rate_micros, spent_micros = v.spent_micros, runtime = v.runtime,
        lease_instance = v.lease_instance, lease_ends_at = v.lease_ends_at,
        grace_ends_at = v.grace_ends_at, end_reason = v.end_reason
    from v
    where transfers.id = v.id and transfers.version = v.expect`

const APPLY_COLUMNS = sql`v (id, expect, state, version, updated_at, expires_at, tier, budget_micros,
    rate_micros, spent_micros, runtime, lease_instance, lease_ends_at, grace_ends_at, end_reason)`

function applyQuery(rows: TransferRow[], readVersion: Map<string, number>) {
  return sql`
    with ${APPLY_COLUMNS} as (values ${applyValues(rows, readVersion)})
    update transfers ${APPLY_SET}`
}

/** What a group of transfer writes writes, beside nothing else. */
export interface GroupWrites {
  /** Changed rows, each written only if still at the version in `readVersion`. */
  changed: TransferRow[]
  readVersion: Map<string, number>
  created: { row: TransferRow; content: string }[]
  events: TransferEventRow[]
  tokenUses: TransferTokenUseRow[]
  usages: TransferUsageRow[]
}

/**
 * Every write of a group in one statement, through data-modifying WITH clauses (PostgreSQL's
 * `caps.writableCte`): one round trip where `applyTransfers` and the inserts take one each.
 * Answers how many changed rows were still at the version read.
 */
export async function writeGroup(db: Db, g: GroupWrites): Promise<number> {
  const parts: [string, unknown[], RawBuilder<unknown>][] = []
  const insert = <T>(name: string, table: string, rows: T[], columns: readonly (keyof T)[]) => {
    if (rows.length === 0) return
    const values = sql.join(
      rows.map((r) => sql`(${sql.join(columns.map((c) => r[c]))})`),
      sql`, `,
    )
    parts.push([
      `${name}${rows.length}`,
      valuesOf(rows, columns),
      sql`${sql.raw(name)} as (insert into ${sql.raw(table)} (${sql.raw(columns.join(', '))}) values ${values})`,
    ])
  }
  if (g.changed.length > 0) {
    parts.push([
      `v${g.changed.length}`,
      applyParams(g.changed, g.readVersion),
      sql`${APPLY_COLUMNS} as (values ${applyValues(g.changed, g.readVersion)}),
      u as (update transfers ${APPLY_SET} returning 1)`,
    ])
  }
  const rows = g.created.map((c) => c.row)
  insert('t', 'transfers', rows, TRANSFER_COLUMNS)
  insert(
    's',
    'transfer_snapshots',
    g.created.map((c) => ({ transfer_id: c.row.id, content: c.content })),
    ['transfer_id', 'content'],
  )
  insert('e', 'transfer_events', g.events, EVENT_COLUMNS)
  insert('k', 'transfer_token_uses', g.tokenUses, TOKEN_USE_COLUMNS)
  insert('g', 'transfer_usage', g.usages, USAGE_COLUMNS)
  if (parts.length === 0) return 0
  const applied = g.changed.length > 0 ? sql`(select count(*) from u)` : sql`0`
  const result = await shapes.run<{ applied: number | string }>(
    db,
    `group ${parts.map((p) => p[0]).join(' ')}`,
    parts.flatMap((p) => p[1]),
    () =>
      sql<{ applied: number | string }>`with ${sql.join(
        parts.map((p) => p[2]),
        sql`, `,
      )} select cast(${applied} as integer) as applied`.compile(db),
  )
  return Number(result.rows[0]?.applied ?? 0)
}

export async function insertEvents(db: Db, rows: TransferEventRow[]): Promise<void> {
  await insertRows(db, 'transfer_events', rows, EVENT_COLUMNS)
}

export async function useTokens(db: Db, rows: TransferTokenUseRow[]): Promise<void> {
  await insertRows(db, 'transfer_token_uses', rows, TOKEN_USE_COLUMNS)
}

export async function insertUsages(db: Db, rows: TransferUsageRow[]): Promise<void> {
  await insertRows(db, 'transfer_usage', rows, USAGE_COLUMNS)
}

/** Transfers for the operator, most recently changed first, optionally in one state. */
export async function listForOperator(db: Db, state: string | undefined): Promise<TransferRow[]> {
  let query = db.selectFrom('transfers').selectAll()
  if (state) query = query.where('state', '=', state)
  return query.orderBy('updated_at', 'desc').orderBy('id', 'asc').limit(200).execute()
}

/** A transfer's events for the operator, in order, at most 1000. */
export async function eventsForOperator(db: Db, id: string): Promise<TransferEventRow[]> {
  return db
    .selectFrom('transfer_events')
    .selectAll()
    .where('transfer_id', '=', id)
    .orderBy('seq', 'asc')
    .limit(1000)
    .execute()
}

/** A transfer's latest usage reports for the operator, at most 100. */
export async function usageForOperator(db: Db, id: string): Promise<TransferUsageRow[]> {
  return db
    .selectFrom('transfer_usage')
    .selectAll()
    .where('transfer_id', '=', id)
    .orderBy('spent_after', 'desc')
    .limit(100)
    .execute()
}
