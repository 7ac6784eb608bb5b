import { type Kysely, type KyselyPlugin, type QueryId, sql } from 'kysely'
import { inSpan } from '../telemetry/spans.js'
import type { HandedTrace } from '../telemetry/trace-context.js'
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

/**
 * A database's counting state, kept on the database itself so that every copy of this module (a
 * benchmark's sources beside the hub's build) counts into the same numbers. `inTransaction` holds
 * the queries `transaction` ran on its connection: a counted write not among them committed on its
 * own (autocommit). They are marked by `mark`, a plugin on the transaction's connection only.
 */
export interface StoreCounting {
  readonly counts: StoreCounts
  readonly inTransaction: WeakSet<QueryId>
  readonly mark: KyselyPlugin
}

const WRITE_NODES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode'])

/**
 * Counts every statement `database.db` executes and every write transaction it commits, for
 * tests and benchmarks that divide them by the requests they sent; call it before anything
 * keeps a reference to `database.db`. A built insert, update or delete run outside `transaction`
 * commits on its own and counts as a commit too (a write compiled ahead and run alone says so
 * with `countCommit`). Idempotent: answers the live counts.
 */
export function countStatements(database: Database): StoreCounts {
  if (database.counting) return database.counting.counts
  const counts: StoreCounts = { statements: 0, commits: 0 }
  const inTransaction = new WeakSet<QueryId>()
  const mark: KyselyPlugin = {
    transformQuery: (args) => {
      inTransaction.add(args.queryId)
      return args.node
    },
    transformResult: async (args) => args.result,
  }
  database.counting = { counts, inTransaction, mark }
  const writes = new WeakSet<QueryId>()
  database.db = database.db.withPlugin({
    transformQuery: (args) => {
      if (WRITE_NODES.has(args.node.kind)) writes.add(args.queryId)
      return args.node
    },
    // Called once per executed statement, compiled ahead or not (transformQuery is per build),
    // after every plugin's transformQuery, so the transaction's mark is in place by now.
    transformResult: async (args) => {
      counts.statements++
      if (writes.has(args.queryId) && !inTransaction.has(args.queryId)) counts.commits++
      return args.result
    },
  })
  return counts
}

/** Counts a write committed outside `transaction`, as one autocommit statement, where counted. */
export function countCommit(database: Database): void {
  const counts = database.counting?.counts
  if (counts) counts.commits++
}

/**
 * Runs `fn` in one write transaction, retrying the whole of it on busy, serialization or deadlock
 * errors. Side effects registered with `afterCommit` run only after a successful commit.
 */
export function transaction<T>(database: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  // A span per transaction (retries included) when tracing is configured; a plain call otherwise.
  return inSpan('baton.transaction', { 'db.system.name': database.caps.name }, () =>
    attemptTransaction(database, fn),
  )
}

async function attemptTransaction<T>(database: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const hooks: (() => void)[] = []
    try {
      const counting = database.counting
      const counts = counting?.counts
      const result = await database.db.connection().execute(async (bare) => {
        const conn = counting ? bare.withPlugin(counting.mark) : bare
        await sql.raw(database.caps.beginWrite).execute(conn)
        try {
          const value = await fn({ db: conn, afterCommit: (h) => hooks.push(h) })
          await sql`commit`.execute(conn)
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
 * runs each input again as a batch of one, inside its own savepoint: there is one write path.
 */
export interface BatchGroup<I, T> {
  many(db: Tx['db'], inputs: I[]): Promise<GroupOutcome<T>[]>
}

/**
 * A set-based write a request carries into the transaction of the first write it queues, so
 * both commit together (a signed request's nonce and quota charge with the route's own write).
 * `refusal` says what the carried outcome refuses that write with, if anything: the write is
 * then not run, while the carried write's own effects (a spent nonce) still commit.
 */
export interface CarryGroup<I, T> extends BatchGroup<I, T> {
  refusal(value: T, input: I): unknown
}

/** One request's carried write, committed with its first write or, failing one, alone. */
export class Carry<I = unknown, T = unknown> {
  /** True once a write (or `commitCarry`) has taken it into a batch. */
  taken = false
  readonly outcome: Promise<T>
  // Methods, not function-typed fields, so that any carry is a `Carry` to the batcher.
  private settle!: { resolve(value: T): void; reject(error: unknown): void }

  constructor(
    readonly group: CarryGroup<I, T>,
    readonly input: I,
  ) {
    this.outcome = new Promise<T>((resolve, reject) => {
      this.settle = { resolve, reject }
    })
    // Awaited by whoever settles the request; an unobserved refusal is not a crash.
    this.outcome.catch(() => {})
  }

  /** Answers the carried write's outcome; the batcher calls it once its transaction decided. */
  resolve(value: T): void {
    this.settle.resolve(value)
  }

  /** Fails the carried write; the batcher calls it once its transaction decided. */
  reject(error: unknown): void {
    this.settle.reject(error)
  }
}

/**
 * What a service method takes from the request it serves: the request's carried write, which
 * the method hands to the first write it queues (`RunOptions.carry`). Operations pass their
 * `Caller`, which has it.
 */
export interface Carrying {
  carry?: Carry | undefined
  /** The W3C trace context the request hands on to the work it writes (`Caller.trace`). */
  trace?: HandedTrace | undefined
}

/** Options of one write queued on the batcher. */
export interface RunOptions extends Carrying {
  /**
   * Runs the write once more when it fails on a unique violation: a write that raced another
   * (on another instance) for one key rolled back, and its re-run finds the winner's row.
   */
  rerunOnUniqueViolation?: boolean
}

type Settle = { resolve: (value: unknown) => void; reject: (error: unknown) => void }

type Item =
  | { kind: 'work'; work: (tx: Tx) => Promise<unknown> }
  | { kind: 'group'; group: BatchGroup<unknown, unknown>; input: unknown }
  | { kind: 'carry' }

type Pending = Settle & { carry?: Carry | undefined } & Item

type Outcome = { ok: true; value: unknown; hooks: (() => void)[] } | { ok: false; error: unknown }

/**
 * Group commit: writes that arrive while a transaction is committing wait and then commit
 * together in the next one, each inside its own savepoint so one write's failure leaves the
 * others intact (writes of a `BatchGroup` share set-based statements). Every caller is answered
 * only after the commit that holds its write. Up to `inFlight` transactions commit at once.
 *
 * A transaction that fails on busy, serialization or deadlock errors is run again from the
 * start, and a set-based write that fails as a whole is run again input by input: the work of a
 * write may run more than once, so it must do nothing outside its transaction but through
 * `afterCommit`.
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
  run<T>(work: (tx: Tx) => Promise<T>, opts: RunOptions = {}): Promise<T> {
    return this.rerun(() => this.enqueue<T>({ kind: 'work', work }, opts.carry), opts)
  }

  /** Queues one input of a set-based write and answers its own outcome after commit. */
  runIn<I, T>(group: BatchGroup<I, T>, input: I, opts: RunOptions = {}): Promise<T> {
    const item = { kind: 'group' as const, group: group as BatchGroup<unknown, unknown>, input }
    return this.rerun(() => this.enqueue<T>(item, opts.carry), opts)
  }

  /**
   * The batcher as one request's work sees it: its first write carries `carry` (the request's
   * pending admission), as `RunOptions.carry` would; later writes carry nothing.
   */
  carrying(carry: Carry | undefined): Pick<WriteBatcher, 'run' | 'runIn'> {
    if (!carry) return this
    return {
      run: (work, opts) => this.run(work, { ...opts, carry }),
      runIn: (group, input, opts) => this.runIn(group, input, { ...opts, carry }),
    }
  }

  private rerun<T>(once: () => Promise<T>, opts: RunOptions): Promise<T> {
    if (!opts.rerunOnUniqueViolation) return once()
    return once().catch((error) => {
      if (this.database.caps.isUniqueViolation(error)) return once()
      throw error
    })
  }

  /**
   * Commits a carried write that no write has taken (a read-only request, or one refused before
   * it wrote), batched with others; answers its outcome, and waits for it if a write took it.
   */
  commitCarry<I, T>(carry: Carry<I, T>): Promise<T> {
    if (!carry.taken) {
      carry.taken = true
      this.queue.push({ kind: 'carry', carry, resolve: () => {}, reject: () => {} })
      this.schedule()
    }
    return carry.outcome
  }

  /** Queues `item`, with `carry` riding on it unless an earlier write took it already. */
  private enqueue<T>(item: Item, carry: Carry | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending = { ...item, resolve: resolve as (v: unknown) => void, reject } as Pending
      if (carry && !carry.taken) {
        carry.taken = true
        pending.carry = carry
      }
      this.queue.push(pending)
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
    let done: Attempt
    try {
      done = await this.attempt(batch, false).catch((error) => {
        // A set-based write failed as a whole: run the batch again, each input of it alone.
        if (error instanceof GroupFailed) return this.attempt(batch, true)
        throw error
      })
    } catch (error) {
      for (const item of batch) {
        item.carry?.reject(error)
        item.reject(error)
      }
      return
    }
    batch.forEach((item, i) => {
      const carried = done.carried[i]
      if (carried) {
        if (carried.ok) {
          runHooks(carried.hooks)
          item.carry!.resolve(carried.value)
        } else {
          item.carry!.reject(carried.error)
        }
      }
      const outcome = done.results[i]!
      if (outcome.ok) {
        runHooks(outcome.hooks)
        item.resolve(outcome.value)
      } else {
        item.reject(outcome.error)
      }
    })
  }

  /**
   * One transaction for the batch: first the carried writes, set-based per group and outside
   * any write's savepoint (so a refused write still spends its nonce); then the writes, each
   * unless its carried write refused it. Set-based groups first run without a savepoint of their
   * own (two round trips fewer); should one fail, the attempt is abandoned and `careful` reruns
   * the batch with each input of a group as a batch of one in its own savepoint.
   */
  private attempt(batch: Pending[], careful: boolean): Promise<Attempt> {
    return transaction(this.database, async (tx) => {
      const carried: (Outcome | undefined)[] = new Array(batch.length)
      const byGroup = new Map<CarryGroup<unknown, unknown>, number[]>()
      batch.forEach((item, i) => {
        if (!item.carry) return
        const at = byGroup.get(item.carry.group)
        if (at) at.push(i)
        else byGroup.set(item.carry.group, [i])
      })
      for (const [group, at] of byGroup) {
        const inputs = at.map((i) => batch[i]!.carry!.input)
        const outs = await this.groupRun(tx.db, group, inputs, careful)
        at.forEach((i, k) => {
          carried[i] = outs[k]
        })
      }
      const refusalOf = (i: number): Outcome | undefined => {
        const c = carried[i]
        if (!c) return undefined
        if (!c.ok) return c
        const carry = batch[i]!.carry!
        const error = carry.group.refusal(c.value, carry.input)
        return error === undefined ? undefined : { ok: false, error }
      }
      const results: Outcome[] = []
      let i = 0
      while (i < batch.length) {
        const item = batch[i]!
        const refused = refusalOf(i)
        if (refused || item.kind !== 'group') {
          if (refused) results.push(refused)
          else if (item.kind === 'work') results.push(await this.single(tx.db, item.work))
          else results.push({ ok: true, value: undefined, hooks: [] })
          i++
          continue
        }
        const { group } = item
        let j = i
        while (j < batch.length) {
          const next = batch[j]!
          if (next.kind !== 'group' || next.group !== group || refusalOf(j)) break
          j++
        }
        const inputs = batch.slice(i, j).map((p) => (p as { input: unknown }).input)
        results.push(...(await this.groupRun(tx.db, group, inputs, careful)))
        i = j
      }
      return { carried, results }
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
    const results: Outcome[] = []
    for (const input of inputs) {
      await sql`savepoint baton_group`.execute(db)
      try {
        const [out] = shape(await group.many(db, [input]))
        await sql`release savepoint baton_group`.execute(db)
        results.push(out!)
      } catch (error) {
        if (this.database.caps.isRetryable(error)) throw error
        await sql`rollback to savepoint baton_group`.execute(db)
        await sql`release savepoint baton_group`.execute(db)
        results.push({ ok: false, error })
      }
    }
    return results
  }
}

/** What one transaction of a batch decided: each item's carried outcome, if any, and its own. */
interface Attempt {
  carried: (Outcome | undefined)[]
  results: Outcome[]
}

/** A set-based write failed as a whole; the batch is retried carefully. */
class GroupFailed extends Error {
  constructor(readonly error: unknown) {
    super('a set-based write failed')
  }
}
