import { CompiledQuery, type Kysely, sql } from 'kysely'
import { CompiledShapes } from '../store/compiled.js'
import { namedStatement } from '../store/database.js'
import type { HandoffMoveRow, HandoffRow, Schema } from '../store/schema.js'
import { sqliteScript } from '../store/sqlite-driver.js'

/** SQL for handoffs, in the subset both dialects share. Every function takes the db or a tx. */

// The move batch's statements, by dialect and shape (how many rows a batch has), compiled once:
// building and compiling each anew was most of kysely's share of a batch's time.
const shapes = new CompiledShapes(1024)

export async function insertHandoff(db: Kysely<Schema>, row: HandoffRow): Promise<void> {
  await db.insertInto('handoffs').values(row).execute()
}

export async function findHandoff(db: Kysely<Schema>, id: string): Promise<HandoffRow | undefined> {
  return db.selectFrom('handoffs').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function listMoves(db: Kysely<Schema>, id: string): Promise<HandoffMoveRow[]> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', '=', id)
    .orderBy('version', 'asc')
    .execute()
}

export async function findMoveByNonce(
  db: Kysely<Schema>,
  id: string,
  nonce: string,
): Promise<HandoffMoveRow | undefined> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', '=', id)
    .where('nonce', '=', nonce)
    .executeTakeFirst()
}

/**
 * The compare-and-set: moves the handoff only if it is still at `expectVersion` in `from`.
 * Answers whether it moved.
 */
export async function casMove(
  db: Kysely<Schema>,
  m: { id: string; from: string; to: string; expectVersion: number; ended: boolean; at: number },
): Promise<boolean> {
  const res = await db
    .updateTable('handoffs')
    .set({ state: m.to, version: m.expectVersion + 1, ended: m.ended ? 1 : 0, updated_at: m.at })
    .where('id', '=', m.id)
    .where('version', '=', m.expectVersion)
    .where('state', '=', m.from)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

export async function insertMove(db: Kysely<Schema>, row: HandoffMoveRow): Promise<void> {
  await db.insertInto('handoff_moves').values(row).execute()
}

/** Removes handoffs that expired at or before `now`, with their history; answers how many. */
export async function deleteExpired(
  db: Kysely<Schema>,
  now: number,
  limit = 1000,
): Promise<number> {
  const ids = (
    await db
      .selectFrom('handoffs')
      .select('id')
      .where('expires_at', '<=', now)
      .limit(limit)
      .execute()
  ).map((r) => r.id)
  if (ids.length === 0) return 0
  await db.deleteFrom('handoff_moves').where('handoff_id', 'in', ids).execute()
  await db.deleteFrom('handoffs').where('id', 'in', ids).where('expires_at', '<=', now).execute()
  return ids.length
}

/** Counts handoffs by state, for metrics and the dashboard. */
export async function countByState(
  db: Kysely<Schema>,
  now: number,
): Promise<{ state: string; ended: number; count: number }[]> {
  const rows = await db
    .selectFrom('handoffs')
    .select(['state', 'ended', db.fn.countAll<number>().as('count')])
    .where('expires_at', '>', now)
    .groupBy(['state', 'ended'])
    .execute()
  return rows.map((r) => ({ state: r.state, ended: Number(r.ended), count: Number(r.count) }))
}

/** A handoff row without its payload: what a move needs. */
export type HandoffMoveState = Omit<
  HandoffRow,
  'payload' | 'note' | 'created_at' | 'trace' | 'trace_state'
>

/**
 * Reads the handoffs a batch of moves touches, in id order, locking them for the rest of the
 * transaction where the dialect needs row locks (so concurrent batches take locks in one order).
 */
export async function lockForMoves(
  db: Kysely<Schema>,
  ids: string[],
  lock: boolean,
): Promise<HandoffMoveState[]> {
  const result = await shapes.run(db, `lockForMoves:${ids.length}:${lock}`, ids, () =>
    db
      .selectFrom('handoffs')
      .select([
        'id',
        'owner_token_hash',
        'receiver_token_hash',
        'state',
        'version',
        'ended',
        'machine',
        'notify_url',
        'updated_at',
        'expires_at',
      ])
      .where('id', 'in', ids)
      .orderBy('id')
      .$if(lock, (qb) => qb.forUpdate())
      .compile(),
  )
  return result.rows
}

/** Committed moves carrying any of `nonces` on any of `ids`. */
export async function findMovesByNonces(
  db: Kysely<Schema>,
  ids: string[],
  nonces: string[],
): Promise<HandoffMoveRow[]> {
  return db
    .selectFrom('handoff_moves')
    .selectAll()
    .where('handoff_id', 'in', ids)
    .where('nonce', 'in', nonces)
    .execute()
}

/**
 * Applies the final state of many handoffs in one statement, each only if still at its expected
 * version; answers how many rows changed.
 */
export async function applyMoves(db: Kysely<Schema>, rows: MoveApply[]): Promise<number> {
  const result = await shapes.run(db, `applyMoves:${rows.length}`, applyParameters(rows), () =>
    sql`
      with v (id, state, version, ended, at, expect) as (values ${applyValues(rows)})
      update handoffs
      set state = v.state, version = v.version, ended = v.ended, updated_at = v.at
      from v
      where handoffs.id = v.id and handoffs.version = v.expect`.compile(db),
  )
  return Number(result.numAffectedRows ?? 0n)
}

/** A handoff's state after a batch, to be written only if it is still at version `expect`. */
export interface MoveApply {
  id: string
  state: string
  version: number
  ended: boolean
  at: number
  expect: number
}

function applyValues(rows: MoveApply[]) {
  return sql.join(
    rows.map(
      (r) =>
        sql`(${r.id}, ${r.state}, cast(${r.version} as integer), cast(${r.ended ? 1 : 0} as integer), cast(${r.at} as bigint), cast(${r.expect} as integer))`,
    ),
  )
}

/** The parameters of `applyValues(rows)`, in the order it binds them. */
function applyParameters(rows: MoveApply[]): unknown[] {
  return rows.flatMap((r) => [r.id, r.state, r.version, r.ended ? 1 : 0, r.at, r.expect])
}

/**
 * Applies a batch's handoff rows and inserts its history rows: on PostgreSQL in one statement
 * (a data-modifying `with`, one round trip fewer per batch), elsewhere in two. Answers how many
 * handoff rows changed; the history is written whatever that number, so a caller that finds it
 * short must abandon the transaction.
 */
export async function writeMoves(
  db: Kysely<Schema>,
  dialect: 'sqlite' | 'postgres',
  rows: MoveApply[],
  moves: HandoffMoveRow[],
): Promise<number> {
  if (dialect !== 'postgres' || moves.length === 0) {
    const applied = await applyMoves(db, rows)
    await insertMoves(db, moves)
    return applied
  }
  const parameters = [...applyParameters(rows), ...moveParameters(moves)]
  const result = await shapes.run<{ applied: number }>(
    db,
    `writeMoves:${rows.length}:${moves.length}`,
    parameters,
    () => {
      const history = sql.join(
        moves.map((m) => sql`(${sql.join(MOVE_COLUMNS.map((c) => sql`${m[c]}`))})`),
      )
      return sql<{ applied: number }>`
        with v (id, state, version, ended, at, expect) as (values ${applyValues(rows)}),
        u as (
          update handoffs
          set state = v.state, version = v.version, ended = v.ended, updated_at = v.at
          from v
          where handoffs.id = v.id and handoffs.version = v.expect
          returning 1
        ),
        h as (insert into handoff_moves (${sql.join(MOVE_COLUMNS.map((c) => sql.ref(c)))}) values ${history})
        select count(*) as applied from u`.compile(db)
    },
  )
  return Number(result.rows[0]?.applied ?? 0)
}

/** The columns of a history row, in the order its parameters are bound. */
const MOVE_COLUMNS = [
  'handoff_id',
  'version',
  'from_state',
  'to_state',
  'actor',
  'nonce',
  'note',
  'at',
  'trace',
  'trace_state',
] as const satisfies readonly (keyof HandoffMoveRow)[]

/** Inserts many history rows in one statement. */
export async function insertMoves(db: Kysely<Schema>, rows: HandoffMoveRow[]): Promise<void> {
  if (rows.length === 0) return
  await shapes.run(db, `insertMoves:${rows.length}`, moveParameters(rows), () =>
    db
      .insertInto('handoff_moves')
      .values(rows.map((r) => Object.fromEntries(MOVE_COLUMNS.map((c) => [c, r[c]])) as never))
      .compile(),
  )
}

/** The parameters of history rows, column by column in MOVE_COLUMNS order. */
function moveParameters(rows: HandoffMoveRow[]): unknown[] {
  return rows.flatMap((r) => MOVE_COLUMNS.map((c) => r[c]))
}

/** One move predicted to commit: its handoff moves only if it is still in `from`. */
export interface PredictedMoveRow {
  id: string
  from: string
  to: string
  actor: string
  nonce: string | null
  note: string | null
  ended: boolean
  trace: string | null
  trace_state: string | null
}

// One statement, committed on its own: it moves each handoff only if it is still in `from` and
// not expired (seed 002: a move commits only from exactly the stated state; a machine only moves
// forward, so a state seen again is the same state) and its nonce names no committed move, and
// writes the history rows of the moves it made. The update's join is driven by `v` (a nested loop
// over the primary key), whose rows are in id order as the database sorts them, so it locks rows
// in the order a locked batch takes them; were a plan ever to lock otherwise, a deadlock aborts
// the statement and its moves go the careful way (a lock-first `select ... for update` made the
// statement 1.4x slower). The arrays keep one text for every batch size, so each connection
// prepares it once.
const MOVE_IF_AT = namedStatement(
  'baton_move_if_at',
  `
with v as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $9::text[], $10::text[])
    as t (id, from_state, to_state, actor, nonce, note, ended, trace, trace_state)
  order by id
),
u as (
  update handoffs h
  set state = v.to_state, version = h.version + 1, ended = v.ended, updated_at = $8::bigint
  from v
  where h.id = v.id and h.state = v.from_state and h.expires_at > $8::bigint
    and (v.nonce is null or not exists (
      select 1 from handoff_moves m where m.handoff_id = v.id and m.nonce = v.nonce))
  returning h.id, h.version
),
i as (
  insert into handoff_moves (handoff_id, version, from_state, to_state, actor, nonce, note, at, trace, trace_state)
  select u.id, u.version, v.from_state, v.to_state, v.actor, v.nonce, v.note, $8::bigint, v.trace, v.trace_state
  from u join v on v.id = u.id
)
select id, version from u`,
)

// SQLite has no data-modifying `with`: the same moves are two statements the writer runs as one
// transaction, in one trip (`sqliteScript`). The moves ride as one JSON array, so both texts are
// the same for every batch size and each is prepared once. The history rows go first, for each
// handoff still in `from`, not expired, whose nonce names no committed move (the same rules as
// above); then exactly the handoffs that just got a history row at their next version move, and
// answer it. The write lock is held from `begin immediate`, so nothing moves in between.
const SQLITE_MOVES = `
  select value ->> 0 as id, value ->> 1 as from_state, value ->> 2 as to_state,
    value ->> 3 as actor, value ->> 4 as nonce, value ->> 5 as note, value ->> 6 as ended,
    value ->> 7 as trace, value ->> 8 as trace_state
  from json_each(?)`
const SQLITE_MOVE_HISTORY = `
with v as (${SQLITE_MOVES})
insert into handoff_moves (handoff_id, version, from_state, to_state, actor, nonce, note, at, trace, trace_state)
select h.id, h.version + 1, v.from_state, v.to_state, v.actor, v.nonce, v.note, ?, v.trace, v.trace_state
from v join handoffs h on h.id = v.id
where h.state = v.from_state and h.expires_at > ?
  and (v.nonce is null or not exists (
    select 1 from handoff_moves m where m.handoff_id = v.id and m.nonce = v.nonce))`
const SQLITE_MOVE_ROWS = `
with v as (${SQLITE_MOVES})
update handoffs
set state = v.to_state, version = handoffs.version + 1, ended = v.ended, updated_at = ?
from v
where handoffs.id = v.id and handoffs.state = v.from_state
  and exists (select 1 from handoff_moves m
    where m.handoff_id = handoffs.id and m.version = handoffs.version + 1)
returning handoffs.id as id, handoffs.version as version`

/**
 * Commits the moves of distinct handoffs that are still where each move says, in one trip to the
 * database and one commit of its own (PostgreSQL: one autocommit statement with a data-modifying
 * `with`; SQLite: a two-statement script); answers the new version of each handoff that moved.
 * A move that did not is untouched, for the careful path to decide.
 */
export async function moveIfAt(
  db: Kysely<Schema>,
  dialect: 'sqlite' | 'postgres',
  moves: PredictedMoveRow[],
  at: number,
): Promise<Map<string, number>> {
  if (dialect === 'sqlite') {
    const json = JSON.stringify(
      moves.map((m) => [
        m.id,
        m.from,
        m.to,
        m.actor,
        m.nonce,
        m.note,
        m.ended ? 1 : 0,
        m.trace,
        m.trace_state,
      ]),
    )
    const result = await db.executeQuery(
      sqliteScript([
        CompiledQuery.raw(SQLITE_MOVE_HISTORY, [json, at, at]),
        CompiledQuery.raw(SQLITE_MOVE_ROWS, [json, at]),
      ]),
    )
    const rows = (result.rows[1]?.rows ?? []) as { id: string; version: number }[]
    return new Map(rows.map((r) => [r.id, Number(r.version)]))
  }
  const result = await db.executeQuery<{ id: string; version: number }>(
    CompiledQuery.raw(MOVE_IF_AT, [
      moves.map((m) => m.id),
      moves.map((m) => m.from),
      moves.map((m) => m.to),
      moves.map((m) => m.actor),
      moves.map((m) => m.nonce),
      moves.map((m) => m.note),
      moves.map((m) => (m.ended ? 1 : 0)),
      at,
      moves.map((m) => m.trace),
      moves.map((m) => m.trace_state),
    ]),
  )
  return new Map(result.rows.map((r) => [r.id, Number(r.version)]))
}

/** Handoffs past their expiry, whatever cleanup has done. */
export async function countExpired(db: Kysely<Schema>, now: number): Promise<number> {
  const row = await db
    .selectFrom('handoffs')
    .select(db.fn.countAll<number>().as('n'))
    .where('expires_at', '<=', now)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

/** A handoff row as the operator lists it: no tokens and no payload. */
export type OperatorHandoffRow = Pick<
  HandoffRow,
  | 'id'
  | 'state'
  | 'version'
  | 'ended'
  | 'note'
  | 'machine'
  | 'created_at'
  | 'updated_at'
  | 'expires_at'
>

// What the operator reads of a handoff: no tokens, no payload.
const OPERATOR_COLUMNS = [
  'id',
  'state',
  'version',
  'ended',
  'note',
  'machine',
  'created_at',
  'updated_at',
  'expires_at',
] as const

/**
 * Handoffs for the operator, most recently changed first: `state` a state name (unexpired ones
 * in it), `expired` (past expiry) or `open` (not ended and unexpired).
 */
export async function listForOperator(
  db: Kysely<Schema>,
  now: number,
  q: { state?: string | undefined; limit: number },
): Promise<OperatorHandoffRow[]> {
  let query = db.selectFrom('handoffs').select(OPERATOR_COLUMNS)
  if (q.state === 'expired') query = query.where('expires_at', '<=', now)
  else if (q.state === 'open') query = query.where('ended', '=', 0).where('expires_at', '>', now)
  else if (q.state) query = query.where('state', '=', q.state).where('expires_at', '>', now)
  return query.orderBy('updated_at', 'desc').orderBy('id', 'asc').limit(q.limit).execute()
}

/** One handoff for the operator: no tokens, the payload only by its size in characters. */
export async function findForOperator(
  db: Kysely<Schema>,
  id: string,
): Promise<
  (OperatorHandoffRow & { notify_url: string | null; payload_chars: number }) | undefined
> {
  return db
    .selectFrom('handoffs')
    .select([...OPERATOR_COLUMNS, 'notify_url', sql<number>`length(payload)`.as('payload_chars')])
    .where('id', '=', id)
    .executeTakeFirst()
}

/** A handoff's payload text. */
export async function findPayload(db: Kysely<Schema>, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('handoffs')
    .select('payload')
    .where('id', '=', id)
    .executeTakeFirst()
  return row?.payload
}
