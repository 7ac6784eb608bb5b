import { AsyncLocalStorage } from 'node:async_hooks'
import { type Kysely, sql } from 'kysely'
import type { Database } from './database.js'
import type { Schema } from './schema.js'

/** A write in progress: the transaction's query builder and a hook for work after commit. */
export interface Tx {
  db: Kysely<Schema>
  /** Runs `fn` once the transaction has committed durably; never if it rolls back. */
  afterCommit(fn: () => void): void
}

const MAX_ATTEMPTS = 5

/** What a database has run since `countStatements`: statements executed and transactions committed. */
export interface StoreCounts {
  statements: number
  commits: number
}

const counted = new WeakMap<Database, StoreCounts>()

/**
 * Counts every statement `database.db` executes and every write transaction it commits, for
 * tests and benchmarks that divide them by the requests they sent; call it before anything
 * keeps a reference to `database.db`. Idempotent: answers the live counts.
 */
export function countStatements(database: Database): StoreCounts {
  const known = counted.get(database)
  if (known) return known
  const counts: StoreCounts = { statements: 0, commits: 0 }
  counted.set(database, counts)
  database.db = database.db.withPlugin({
    transformQuery: (args) => args.node,
    // Called once per executed statement, compiled ahead or not (transformQuery is per build).
    transformResult: async (args) => {
      counts.statements++
      return args.result
    },
  })
  return counts
}

/**
 * Runs `fn` in one write transaction, retrying the whole of it on busy, serialization or deadlock
 * errors. Side effects registered with `afterCommit` run only after a successful commit.
 */
export async function transaction<T>(database: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const hooks: (() => void)[] = []
    try {
      const result = await database.db.connection().execute(async (conn) => {
        await sql.raw(database.caps.beginWrite).execute(conn)
        try {
          const value = await fn({ db: conn, afterCommit: (h) => hooks.push(h) })
          await sql`commit`.execute(conn)
          const counts = counted.get(database)
          if (counts) counts.commits++
          return value
        } catch (error) {
          await sql`rollback`.execute(conn).catch(() => {})
          throw error
        }
      })
      runHooks(hooks)
      return result
    } catch (error) {
      if (attempt < MAX_ATTEMPTS && database.caps.isRetryable(error)) {
        await new Promise((r) => setTimeout(r, 2 ** attempt + Math.random() * 10))
        continue
      }
      throw error
    }
  }
}

function runHooks(hooks: (() => void)[]): void {
  for (const hook of hooks) {
    try {
      hook()
    } catch {
      // an after-commit hook is a notification; its failure must not undo a committed write
    }
  }
}

/** The outcome of one input of a set-based write: its value and its after-commit hook, or its error. */
export type GroupOutcome<T> =
  | { ok: true; value: T; after?: () => void }
  | { ok: false; error: unknown }

/**
 * Writes of one kind that commit many requests with a few set-based statements instead of a few
 * statements each. `many` answers one outcome per input, in order, and must leave no effect for
 * an input it answers with an error. If `many` throws, the batcher rolls its statements back and
 * runs each input through `one`, inside its own savepoint.
 */
export interface BatchGroup<I, T> {
  many(db: Tx['db'], inputs: I[]): Promise<GroupOutcome<T>[]>
  one(tx: Tx, input: I): Promise<T>
}

type Pending =
  | {
      work: (tx: Tx) => Promise<unknown>
      group?: undefined
      resolve: (value: unknown) => void
      reject: (error: unknown) => void
    }
  | {
      group: BatchGroup<unknown, unknown>
      input: unknown
      resolve: (value: unknown) => void
      reject: (error: unknown) => void
    }

type Outcome = { ok: true; value: unknown; hooks: (() => void)[] } | { ok: false; error: unknown }

/**
 * Group commit: writes that arrive while a transaction is committing wait and then commit
 * together in the next one, each inside its own savepoint so one write's failure leaves the
 * others intact (writes of a `BatchGroup` share set-based statements). Every caller is answered
 * only after the commit that holds its write. Up to `inFlight` transactions commit at once.
 */
export class WriteBatcher {
  private queue: Pending[] = []
  private active = 0
  private scheduled = false
  private idle: (() => void)[] = []

  constructor(
    private readonly database: Database,
    private readonly maxBatch = 256,
    private readonly onBatch?: (size: number) => void,
    private readonly inFlight = 1,
    private readonly onCommitted?: (seconds: number) => void,
  ) {}

  /** Queues a write and answers once it has committed (or failed on its own). */
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject })
      this.schedule()
    })
  }

  /** Queues one input of a set-based write and answers its own outcome after commit. */
  runIn<I, T>(group: BatchGroup<I, T>, input: I): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        group: group as BatchGroup<unknown, unknown>,
        input,
        resolve: resolve as (v: unknown) => void,
        reject,
      })
      this.schedule()
    })
  }

  /** Resolves when every queued write has been answered. */
  async flush(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return
    await new Promise<void>((r) => this.idle.push(r))
  }

  private schedule(): void {
    if (this.scheduled || this.active >= this.inFlight) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.pump()
    })
  }

  private pump(): void {
    while (this.queue.length > 0 && this.active < this.inFlight) {
      const batch = this.queue.splice(0, this.maxBatch)
      this.active++
      this.onBatch?.(batch.length)
      const started = performance.now()
      void this.commit(batch).finally(() => {
        this.onCommitted?.((performance.now() - started) / 1000)
        this.active--
        if (this.queue.length > 0) this.pump()
        else if (this.active === 0) for (const r of this.idle.splice(0)) r()
      })
    }
  }

  private async single(db: Tx['db'], work: (tx: Tx) => Promise<unknown>): Promise<Outcome> {
    const hooks: (() => void)[] = []
    await sql`savepoint baton_item`.execute(db)
    try {
      const value = await work({ db, afterCommit: (h) => hooks.push(h) })
      await sql`release savepoint baton_item`.execute(db)
      return { ok: true, value, hooks }
    } catch (error) {
      if (this.database.caps.isRetryable(error)) throw error
      await sql`rollback to savepoint baton_item`.execute(db)
      await sql`release savepoint baton_item`.execute(db)
      return { ok: false, error }
    }
  }

  private async commit(batch: Pending[]): Promise<void> {
    let outcomes: Outcome[]
    try {
      outcomes = await this.attempt(batch, false).catch((error) => {
        // A set-based write failed as a whole: run the batch again, each write of it alone.
        if (error instanceof GroupFailed) return this.attempt(batch, true)
        throw error
      })
    } catch (error) {
      for (const item of batch) item.reject(error)
      return
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!
      if (outcome.ok) {
        runHooks(outcome.hooks)
        item.resolve(outcome.value)
      } else {
        item.reject(outcome.error)
      }
    })
  }

  /**
   * One transaction for the batch. Set-based groups first run without a savepoint of their own
   * (two round trips fewer); should one fail, the attempt is abandoned and `careful` reruns the
   * batch with the group in a savepoint and each of its writes retried alone.
   */
  private attempt(batch: Pending[], careful: boolean): Promise<Outcome[]> {
    return transaction(this.database, async (tx) => {
      const results: Outcome[] = []
      let i = 0
      while (i < batch.length) {
        const item = batch[i]!
        if (!item.group) {
          results.push(await this.single(tx.db, item.work))
          i++
          continue
        }
        const { group } = item
        let j = i
        while (j < batch.length && batch[j]!.group === group) j++
        const inputs = batch.slice(i, j).map((p) => (p as { input: unknown }).input)
        results.push(...(await this.groupRun(tx.db, group, inputs, careful)))
        i = j
      }
      return results
    })
  }

  private async groupRun(
    db: Tx['db'],
    group: BatchGroup<unknown, unknown>,
    inputs: unknown[],
    careful: boolean,
  ): Promise<Outcome[]> {
    const shape = (outs: GroupOutcome<unknown>[]): Outcome[] =>
      outs.map((o) => (o.ok ? { ok: true, value: o.value, hooks: o.after ? [o.after] : [] } : o))
    if (!careful) {
      try {
        return shape(await group.many(db, inputs))
      } catch (error) {
        if (this.database.caps.isRetryable(error)) throw error
        throw new GroupFailed(error)
      }
    }
    await sql`savepoint baton_group`.execute(db)
    try {
      const outs = await group.many(db, inputs)
      await sql`release savepoint baton_group`.execute(db)
      return shape(outs)
    } catch (error) {
      if (this.database.caps.isRetryable(error)) throw error
      await sql`rollback to savepoint baton_group`.execute(db)
      await sql`release savepoint baton_group`.execute(db)
      const results: Outcome[] = []
      for (const input of inputs) results.push(await this.single(db, (tx) => group.one(tx, input)))
      return results
    }
  }
}

/** A set-based write failed as a whole; the batch is retried carefully. */
class GroupFailed extends Error {
  constructor(readonly error: unknown) {
    super('a set-based write failed')
  }
}
