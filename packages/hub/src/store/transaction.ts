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

interface Pending<T> {
  work: (tx: Tx) => Promise<T>
  resolve: (value: T) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: writes that arrive while a transaction is committing wait and then commit
 * together in the next one, each inside its own savepoint so one write's failure leaves the
 * others intact. Every caller is answered only after the commit that holds its write.
 */
export class WriteBatcher {
  private queue: Pending<unknown>[] = []
  private running = false
  private idle: (() => void)[] = []

  constructor(
    private readonly database: Database,
    private readonly maxBatch = 256,
    private readonly onBatch?: (size: number) => void,
  ) {}

  /** Queues a write and answers once it has committed (or failed on its own). */
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject } as Pending<unknown>)
      if (!this.running) {
        this.running = true
        setImmediate(() => void this.drain())
      }
    })
  }

  /** Resolves when every queued write has been answered. */
  async flush(): Promise<void> {
    if (!this.running && this.queue.length === 0) return
    await new Promise<void>((r) => this.idle.push(r))
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch)
      this.onBatch?.(batch.length)
      await this.commit(batch)
    }
    this.running = false
    for (const r of this.idle.splice(0)) r()
  }

  private async commit(batch: Pending<unknown>[]): Promise<void> {
    type Outcome =
      | { ok: true; value: unknown; hooks: (() => void)[] }
      | { ok: false; error: unknown }
    let outcomes: Outcome[]
    try {
      outcomes = await transaction(this.database, async (tx) => {
        const results: Outcome[] = []
        for (const item of batch) {
          const hooks: (() => void)[] = []
          await sql`savepoint baton_item`.execute(tx.db)
          try {
            const value = await item.work({ db: tx.db, afterCommit: (h) => hooks.push(h) })
            await sql`release savepoint baton_item`.execute(tx.db)
            results.push({ ok: true, value, hooks })
          } catch (error) {
            if (this.database.caps.isRetryable(error)) throw error
            await sql`rollback to savepoint baton_item`.execute(tx.db)
            await sql`release savepoint baton_item`.execute(tx.db)
            results.push({ ok: false, error })
          }
        }
        return results
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
}
