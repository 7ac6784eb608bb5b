import { type Kysely, sql } from 'kysely'
import type { BudgetEntryRow, BudgetHoldRow, BudgetRow, Schema } from '../store/schema.js'

/**
 * SQL for budget ledgers, in the subset both dialects share. A ledger changes either by one
 * conditional statement (a sub-offer's reservation, a close: the check and the write together
 * under the row's lock), or by a batch of reports decided against the ledger as read under its
 * lock (`lockBudgets`: PostgreSQL's row lock, SQLite's one write lock) and written by the
 * difference; either way two writers on any instances never overshoot.
 */

type Db = Kysely<Schema>

/** What remains of a ledger, as SQL over its own row. */
const REMAINING = sql<number>`granted_micros - reserved_micros - held_micros - spent_micros`

const num = (v: unknown) => Number(v)
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v))

function normalize(row: BudgetRow): BudgetRow {
  return {
    ...row,
    depth: num(row.depth),
    granted_micros: num(row.granted_micros),
    reserved_micros: num(row.reserved_micros),
    held_micros: num(row.held_micros),
    spent_micros: num(row.spent_micros),
    released_micros: num(row.released_micros),
    rate_micros: numOrNull(row.rate_micros),
    children: num(row.children),
    tree_size: num(row.tree_size),
    holds: num(row.holds),
    entries: num(row.entries),
    crossings: num(row.crossings),
    expires_at: num(row.expires_at),
    created_at: num(row.created_at),
    updated_at: num(row.updated_at),
    closed_at: numOrNull(row.closed_at),
  }
}

function normalizeHold(row: BudgetHoldRow): BudgetHoldRow {
  return {
    ...row,
    amount_micros: num(row.amount_micros),
    settled_micros: numOrNull(row.settled_micros),
    expires_at: num(row.expires_at),
    created_at: num(row.created_at),
    settled_at: numOrNull(row.settled_at),
  }
}

function normalizeEntry(row: BudgetEntryRow): BudgetEntryRow {
  return {
    ...row,
    amount_micros: num(row.amount_micros),
    charged: num(row.charged),
    remaining_micros: numOrNull(row.remaining_micros),
    created_at: num(row.created_at),
  }
}

export async function findBudget(db: Db, hop: string): Promise<BudgetRow | undefined> {
  const row = await db.selectFrom('budgets').selectAll().where('hop', '=', hop).executeTakeFirst()
  return row && normalize(row)
}

/** Every budget under one root, the root first and then by depth. */
export async function budgetsOfRoot(db: Db, root: string): Promise<BudgetRow[]> {
  const rows = await db
    .selectFrom('budgets')
    .selectAll()
    .where('root', '=', root)
    .orderBy('depth')
    .orderBy('created_at')
    .orderBy('hop')
    .execute()
  return rows.map(normalize)
}

/** The open budgets under one root (its whole tree), for a close that reaches down. */
export async function openOfRoot(db: Db, root: string): Promise<BudgetRow[]> {
  const rows = await db
    .selectFrom('budgets')
    .selectAll()
    .where('root', '=', root)
    .where('state', '=', 'open')
    .execute()
  return rows.map(normalize)
}

/** Budgets of hops whose offers reference a transfer, newest first. */
export async function budgetsOfTransfer(db: Db, transfer: string, limit: number) {
  const rows = await db
    .selectFrom('budgets')
    .selectAll()
    .where('transfer', '=', transfer)
    .orderBy('created_at', 'desc')
    .orderBy('hop')
    .limit(limit)
    .execute()
  return rows.map(normalize)
}

export async function insertBudget(db: Db, row: BudgetRow): Promise<void> {
  await db.insertInto('budgets').values(row).execute()
}

/**
 * Reserves `amount` of an open, unexpired parent for a sub-delegation, if it remains and the
 * parent holds fewer than `maxChildren` open sub-delegations; answers whether it did.
 */
export async function reserveChild(
  db: Db,
  c: { parent: string; amount: number; now: number; maxChildren: number },
): Promise<boolean> {
  const res = await db
    .updateTable('budgets')
    .set((eb) => ({
      reserved_micros: eb('reserved_micros', '+', c.amount),
      children: eb('children', '+', 1),
      updated_at: c.now,
    }))
    .where('hop', '=', c.parent)
    .where('state', '=', 'open')
    .where('expires_at', '>', c.now)
    .where('children', '<', c.maxChildren)
    .where(sql<boolean>`${REMAINING} >= ${c.amount}`)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Counts a refused report (a crossing) on a ledger that keeps fewer than `maxEntries`. */
export async function countCrossing(
  db: Db,
  c: { hop: string; now: number; maxEntries: number },
): Promise<boolean> {
  const res = await db
    .updateTable('budgets')
    .set((eb) => ({
      crossings: eb('crossings', '+', 1),
      entries: eb('entries', '+', 1),
      updated_at: c.now,
    }))
    .where('hop', '=', c.hop)
    .where('entries', '<', c.maxEntries)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/**
 * Closes an open budget, zeroing what it reserved and held, and answers the row as it was
 * closed (its spend then, under the row's lock); undefined when it was not open.
 */
export async function closeBudget(
  db: Db,
  c: { hop: string; reason: string; now: number },
): Promise<
  | {
      parent: string | null
      root: string
      granted: number
      spent: number
      transfer: string | null
    }
  | undefined
> {
  const row = await db
    .updateTable('budgets')
    .set((eb) => ({
      state: 'closed',
      closed_reason: c.reason,
      released_micros: eb('granted_micros', '-', eb.ref('spent_micros')),
      reserved_micros: 0,
      held_micros: 0,
      children: 0,
      holds: 0,
      closed_at: c.now,
      updated_at: c.now,
    }))
    .where('hop', '=', c.hop)
    .where('state', '=', 'open')
    .returning(['parent', 'root', 'granted_micros', 'spent_micros', 'transfer'])
    .executeTakeFirst()
  return (
    row && {
      parent: row.parent,
      root: row.root,
      granted: num(row.granted_micros),
      spent: num(row.spent_micros),
      transfer: row.transfer,
    }
  )
}

/** Closes these open budgets (the tree below one that closed) with the reason given. */
export async function closeBudgets(
  db: Db,
  hops: readonly string[],
  reason: string,
  now: number,
): Promise<void> {
  if (hops.length === 0) return
  await db
    .updateTable('budgets')
    .set((eb) => ({
      state: 'closed',
      closed_reason: reason,
      released_micros: eb('granted_micros', '-', eb.ref('spent_micros')),
      reserved_micros: 0,
      held_micros: 0,
      children: 0,
      holds: 0,
      closed_at: now,
      updated_at: now,
    }))
    .where('hop', 'in', hops)
    .where('state', '=', 'open')
    .execute()
}

/** Gives back to an open parent what a closed sub-delegation left unspent. */
export async function releaseToParent(
  db: Db,
  c: { parent: string; amount: number; now: number },
): Promise<void> {
  await db
    .updateTable('budgets')
    .set((eb) => ({
      reserved_micros: eb('reserved_micros', '-', c.amount),
      children: eb('children', '-', 1),
      updated_at: c.now,
    }))
    .where('hop', '=', c.parent)
    .where('state', '=', 'open')
    .execute()
}

export async function setReporters(
  db: Db,
  c: { hop: string; reporters: string; now: number },
): Promise<boolean> {
  const res = await db
    .updateTable('budgets')
    .set({ reporters: c.reporters, updated_at: c.now })
    .where('hop', '=', c.hop)
    .where('state', '=', 'open')
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Inserts a report unless one with its (hop, kind, key) exists; answers whether it did. */
export async function insertEntry(db: Db, row: BudgetEntryRow): Promise<boolean> {
  const res = await db
    .insertInto('budget_entries')
    .values(row)
    .onConflict((oc) => oc.columns(['hop', 'kind', 'key']).doNothing())
    .executeTakeFirst()
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1
}

export async function findEntry(
  db: Db,
  hop: string,
  kind: string,
  key: string,
): Promise<BudgetEntryRow | undefined> {
  const row = await db
    .selectFrom('budget_entries')
    .selectAll()
    .where('hop', '=', hop)
    .where('kind', '=', kind)
    .where('key', '=', key)
    .executeTakeFirst()
  return row && normalizeEntry(row)
}

/** A ledger's latest reports, newest first. */
export async function recentEntries(db: Db, hop: string, limit: number) {
  const rows = await db
    .selectFrom('budget_entries')
    .selectAll()
    .where('hop', '=', hop)
    .orderBy('created_at', 'desc')
    .orderBy('kind')
    .orderBy('key')
    .limit(limit)
    .execute()
  return rows.map(normalizeEntry)
}

export async function findHold(db: Db, id: string): Promise<BudgetHoldRow | undefined> {
  const row = await db
    .selectFrom('budget_holds')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirst()
  return row && normalizeHold(row)
}

/** Moves a hold only from the state read (compare-and-set); answers whether it moved. */
export async function moveHold(
  db: Db,
  id: string,
  from: string,
  set: { state: string; settled_micros?: number; settled_at?: number },
): Promise<boolean> {
  const res = await db
    .updateTable('budget_holds')
    .set(set)
    .where('id', '=', id)
    .where('state', '=', from)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** Open holds on these hops: what a close releases, with whose they are. */
export async function openHoldsOf(db: Db, hops: readonly string[]): Promise<BudgetHoldRow[]> {
  if (hops.length === 0) return []
  const rows = await db
    .selectFrom('budget_holds')
    .selectAll()
    .where('hop', 'in', hops)
    .where('state', '=', 'held')
    .execute()
  return rows.map(normalizeHold)
}

/** Releases these open holds (their budgets closed); answers how many moved. */
export async function releaseHolds(db: Db, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0
  const res = await db
    .updateTable('budget_holds')
    .set({ state: 'released' })
    .where('id', 'in', ids)
    .where('state', '=', 'held')
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** Holds past their expiry still held, oldest expiry first. */
export async function expiredHolds(db: Db, now: number, limit: number) {
  const rows = await db
    .selectFrom('budget_holds')
    .selectAll()
    .where('state', '=', 'held')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute()
  return rows.map(normalizeHold)
}

/** Open budgets past their expiry, the highest in their trees first. */
export async function expiredBudgets(db: Db, now: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('budgets')
    .select('hop')
    .where('state', '=', 'open')
    .where('expires_at', '<=', now)
    .orderBy('depth')
    .orderBy('expires_at')
    .limit(limit)
    .execute()
  return rows.map((r) => r.hop)
}

/** Takes a hold off a ledger when it is released unsettled. */
export async function unhold(
  db: Db,
  c: { hop: string; amount: number; now: number },
): Promise<void> {
  await db
    .updateTable('budgets')
    .set((eb) => ({
      held_micros: eb('held_micros', '-', c.amount),
      holds: eb('holds', '-', 1),
      updated_at: c.now,
    }))
    .where('hop', '=', c.hop)
    .where('state', '=', 'open')
    .execute()
}

/**
 * Changes a principal's open holds by `delta`: a growth commits only while they stay within
 * `limit`, in one conditional statement; answers whether it did. A shrink always commits.
 */
export async function changeHolder(
  db: Db,
  c: { principal: string; delta: number; limit: number },
): Promise<boolean> {
  if (c.delta === 0) return true
  if (c.delta > c.limit) return false
  const row = await db
    .insertInto('budget_holders')
    .values({ principal: c.principal, open_holds: Math.max(0, c.delta) })
    .onConflict((oc) => {
      const update = oc.column('principal').doUpdateSet((eb) => ({
        open_holds: eb('budget_holders.open_holds', '+', c.delta),
      }))
      return c.delta > 0
        ? update.where((eb) => eb(eb('budget_holders.open_holds', '+', c.delta), '<=', c.limit))
        : update
    })
    .returning('open_holds')
    .executeTakeFirst()
  return row !== undefined
}

/** How many budgets are open and closed, for the operator's overview. */
export async function countStates(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('budgets')
    .select(['state', db.fn.countAll<number>().as('n')])
    .groupBy('state')
    .execute()
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]))
}

// Set-based writes: the reserves (and settles) that commit together read what they need once,
// are decided in order as each alone would be, and are written with a few statements for all.

/** These budgets in hop order, locked for the transaction where the dialect takes row locks. */
export async function lockBudgets(
  db: Db,
  hops: readonly string[],
  lock: boolean,
): Promise<BudgetRow[]> {
  if (hops.length === 0) return []
  const rows = await db
    .selectFrom('budgets')
    .selectAll()
    .where('hop', 'in', hops)
    .orderBy('hop')
    .$if(lock, (qb) => qb.forUpdate())
    .execute()
  return rows.map(normalize)
}

/** The entries of one kind at these (hop, key) pairs: at most one each. */
export async function findEntriesAt(
  db: Db,
  kind: string,
  at: readonly { hop: string; key: string }[],
): Promise<BudgetEntryRow[]> {
  if (at.length === 0) return []
  const rows = await db
    .selectFrom('budget_entries')
    .selectAll()
    .where('kind', '=', kind)
    .where((eb) =>
      eb(
        eb.refTuple('hop', 'key'),
        'in',
        at.map((p) => eb.tuple(p.hop, p.key)),
      ),
    )
    .execute()
  return rows.map(normalizeEntry)
}

/** Inserts entries, each under a key not used before (a used one fails the statement). */
export async function insertEntries(db: Db, rows: readonly BudgetEntryRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('budget_entries').values(rows).execute()
}

/** Inserts holds. */
export async function insertHolds(db: Db, rows: readonly BudgetHoldRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('budget_holds').values(rows).execute()
}

/** These holds, locked for the transaction where the dialect takes row locks. */
export async function lockHolds(
  db: Db,
  ids: readonly string[],
  lock: boolean,
): Promise<BudgetHoldRow[]> {
  if (ids.length === 0) return []
  const rows = await db
    .selectFrom('budget_holds')
    .selectAll()
    .where('id', 'in', ids)
    .orderBy('id')
    .$if(lock, (qb) => qb.forUpdate())
    .execute()
  return rows.map(normalizeHold)
}

/**
 * Changes many principals' open holds at once: a growth commits only while that principal stays
 * within `limit`. Answers the principals whose change committed.
 */
export async function changeHolders(
  db: Db,
  deltas: ReadonlyMap<string, number>,
  limit: number,
): Promise<Set<string>> {
  const values = [...deltas].filter(([, d]) => d !== 0)
  if (values.length === 0) return new Set()
  const rows = await db
    .insertInto('budget_holders')
    .values(values.map(([principal, d]) => ({ principal, open_holds: d })))
    .onConflict((oc) =>
      oc
        .column('principal')
        .doUpdateSet((eb) => ({
          open_holds: eb('budget_holders.open_holds', '+', eb.ref('excluded.open_holds')),
        }))
        .where((eb) =>
          eb(
            eb('budget_holders.open_holds', '+', eb.ref('excluded.open_holds')),
            '<=',
            eb
              .case()
              .when(eb.ref('excluded.open_holds'), '>', 0)
              .then(limit)
              .else(2 ** 31)
              .end(),
          ),
        ),
    )
    .returning('principal')
    .execute()
  return new Set(rows.map((r) => r.principal))
}

/** Each principal's open holds, locked for the transaction where the dialect takes row locks. */
export async function lockHolders(
  db: Db,
  principals: readonly string[],
  lock: boolean,
): Promise<Map<string, number>> {
  if (principals.length === 0) return new Map()
  const rows = await db
    .selectFrom('budget_holders')
    .selectAll()
    .where('principal', 'in', principals)
    .orderBy('principal')
    .$if(lock, (qb) => qb.forUpdate())
    .execute()
  return new Map(rows.map((r) => [r.principal, Number(r.open_holds)]))
}

/**
 * Settles these holds with their amounts (each held or released, as read under its lock);
 * answers how many moved.
 */
export async function settleHolds(
  db: Db,
  holds: readonly BudgetHoldRow[],
  now: number,
): Promise<number> {
  if (holds.length === 0) return 0
  const res = await db
    .updateTable('budget_holds')
    .set({
      state: 'settled',
      // One CASE over the ids: each hold its own settled amount.
      settled_micros: sql<number>`case ${sql.join(
        holds.map((h) => sql`when id = ${h.id} then cast(${h.settled_micros} as bigint)`),
        sql` `,
      )} end`,
      settled_at: now,
    })
    .where(
      'id',
      'in',
      holds.map((h) => h.id),
    )
    .where('state', 'in', ['held', 'released'])
    .executeTakeFirst()
  return Number(res.numUpdatedRows)
}

/** One ledger's move by a batch: what it adds to each figure. */
export interface LedgerMove {
  hop: string
  spent: number
  held: number
  reserved: number
  holds: number
  entries: number
}

/**
 * Moves many ledgers by what a batch decided, in one statement; answers each moved ledger's
 * hop, held amount and entries after, for the caller to hold against what it computed.
 */
export async function moveLedgers(
  db: Db,
  moves: readonly LedgerMove[],
  now: number,
): Promise<{ hop: string; held_micros: number; entries: number }[]> {
  if (moves.length === 0) return []
  const n = (v: number) => sql`cast(${v} as bigint)`
  const rows = sql.join(
    moves.map(
      (m) =>
        sql`(${m.hop}, ${n(m.spent)}, ${n(m.held)}, ${n(m.reserved)}, ${n(m.holds)}, ${n(m.entries)})`,
    ),
  )
  const { rows: after } = await sql<{ hop: string; held_micros: unknown; entries: unknown }>`
    update budgets set
      spent_micros = spent_micros + v.column2,
      held_micros = held_micros + v.column3,
      reserved_micros = reserved_micros + v.column4,
      holds = holds + v.column5,
      entries = entries + v.column6,
      updated_at = ${n(now)}
    from (values ${rows}) as v
    where budgets.hop = v.column1
    returning hop, held_micros, entries`.execute(db)
  return after.map((r) => ({
    hop: r.hop,
    held_micros: num(r.held_micros),
    entries: num(r.entries),
  }))
}

/** Counts one more budget in a root's tree while it holds fewer than `max`; answers whether it did. */
export async function growTree(db: Db, root: string, max: number): Promise<boolean> {
  const res = await db
    .updateTable('budgets')
    .set((eb) => ({ tree_size: eb('tree_size', '+', 1) }))
    .where('hop', '=', root)
    .where('tree_size', '<', max)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}
