import type SQLite from 'better-sqlite3'
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import type { WalSync } from './wal-sync.js'

/** One statement of a script: its SQL text and its parameters. */
export interface ScriptStatement {
  sql: string
  parameters: readonly unknown[]
}

/** What one statement of a script answered: its rows (a read, or RETURNING) or its changes. */
export interface ScriptResult {
  rows: unknown[]
  changes: number
}

/** The write connection, in this thread or on a writer thread (`SqliteWriterThread`). */
export interface WriteConnection {
  execute(
    sql: string,
    params: readonly unknown[],
  ): QueryResult<unknown> | Promise<QueryResult<unknown>>
  /** Runs statements as one write transaction (`runScript`), in one trip to the connection. */
  script(statements: readonly ScriptStatement[]): ScriptResult[] | Promise<ScriptResult[]>
  /**
   * Ends a kysely connection's turn: rolls back a transaction it left open. Called only once the
   * turn's statements have all been answered.
   */
  endTurn(): void
  /**
   * Undefined when every commit made so far is durable, else a promise that resolves once they
   * are; a read run outside the writer calls it before it answers. Absent: commits are durable
   * when they return.
   */
  whenDurable?(): Promise<void> | undefined
  close(): Promise<void>
}

/** The hub's SQLite connections: one writer, and optionally a reader on the same WAL file. */
export interface HubSqliteOptions {
  /** A better-sqlite3 connection used in this thread, or a writer on its own thread. */
  writer: SQLite.Database | WriteConnection
  /**
   * A second connection to the same file, used only for statements that read and write nothing,
   * run outside any transaction. WAL lets it read the last commit while the writer is inside a
   * transaction, so such reads never wait for the write lock. Without it, every statement goes
   * through the writer in turn.
   */
  reader?: SQLite.Database | undefined
  /** Prepared statements kept per connection, least recently used out first. */
  cacheSize?: number
  /**
   * With a `writer` connection of this thread: makes its commits durable off the event loop
   * (the connection then runs with synchronous=NORMAL; see `WalSync`).
   */
  walSync?: WalSync | undefined
}

/**
 * kysely's SQLite dialect with a driver of the hub's own. kysely's driver serialises every query
 * through a mutex whose unlock wakes every queued query to race for it again, so N queries at
 * once cost N² wake-ups; this one hands the writer to exactly one waiter per release, in arrival
 * order, serves plain reads from the reader without queueing, and keeps prepared statements by
 * SQL text. Transactions and `connection().execute` mean what they mean with kysely's driver:
 * a connection that has run a statement needing the writer holds it until kysely releases it.
 */
export class HubSqliteDialect implements Dialect {
  constructor(private readonly options: HubSqliteOptions) {}

  createDriver(): Driver {
    return new HubSqliteDriver(this.options)
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler()
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter()
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db)
  }
}

/**
 * Runs `statements` in order as one write transaction (`begin immediate` ... `commit`) and answers
 * each one's result; on any error it rolls back, so either all of them commit or none does. Run
 * where the connection lives (this thread, or the writer thread), it costs one trip however
 * many statements it holds.
 */
export function runScript(
  db: SQLite.Database,
  prepare: (source: string) => SQLite.Statement,
  statements: readonly ScriptStatement[],
): ScriptResult[] {
  prepare('begin immediate').run()
  try {
    const results = statements.map((s): ScriptResult => {
      const statement = prepare(s.sql)
      const parameters = s.parameters as unknown[]
      if (statement.reader) return { rows: statement.all(parameters), changes: 0 }
      return { rows: [], changes: statement.run(parameters).changes }
    })
    prepare('commit').run()
    return results
  } catch (error) {
    if (db.inTransaction) db.exec('rollback')
    throw error
  }
}

const SCRIPT = Symbol('baton.sqliteScript')

/** A compiled query that stands for a script: what `sqliteScript` makes. */
type ScriptQuery = CompiledQuery & { [SCRIPT]: readonly ScriptStatement[] }

/**
 * A query that runs `statements` as one write transaction in one trip to the hub's SQLite writer
 * (`runScript`), through kysely so it takes the writer in turn like any other write. Its result's
 * `rows` are the statements' `ScriptResult`s, in order. Only the hub's SQLite dialect runs it.
 */
export function sqliteScript(statements: readonly CompiledQuery[]): CompiledQuery<ScriptResult> {
  const query: ScriptQuery = {
    ...CompiledQuery.raw(statements.map((s) => s.sql).join(';\n'), []),
    [SCRIPT]: statements.map((s) => ({ sql: s.sql, parameters: s.parameters })),
  }
  return query as CompiledQuery<ScriptResult>
}

/** Prepared statements of one connection by SQL text, bounded, least recently used out first. */
class StatementCache {
  private readonly statements = new Map<string, SQLite.Statement>()

  constructor(
    private readonly db: SQLite.Database,
    private readonly max: number,
  ) {}

  /**
   * A cached statement is never busy when handed out again: it is only ever run to completion
   * with `all` or `run`, never iterated.
   */
  get(source: string): SQLite.Statement {
    let statement = this.statements.get(source)
    if (statement) {
      this.statements.delete(source)
    } else {
      statement = this.db.prepare(source)
      if (this.statements.size >= this.max) {
        this.statements.delete(this.statements.keys().next().value!)
      }
    }
    this.statements.set(source, statement)
    return statement
  }
}

/**
 * The write connection in this thread: statements run synchronously, prepared once each. With a
 * `WalSync` (the hub's own database), a statement that commits (a COMMIT, a script, a write run
 * outside a transaction) answers once its commit is durable, and a read outside a transaction
 * once every commit it could have seen is; without one, durability is the connection's own
 * `synchronous` setting.
 */
class InThreadWriter implements WriteConnection {
  private readonly cache: StatementCache
  /** A statement that writes ran since the last commit was handed to the WalSync. */
  private dirty = false

  constructor(
    private readonly db: SQLite.Database,
    cacheSize: number,
    private readonly wal: WalSync | undefined,
  ) {
    this.cache = new StatementCache(db, cacheSize)
  }

  execute(
    source: string,
    parameters: readonly unknown[],
  ): QueryResult<unknown> | Promise<QueryResult<unknown>> {
    const { result, durable } = this.run(source, parameters)
    return durable ? durable.then(() => result) : result
  }

  /**
   * Runs one statement at once; `durable`, when set, is what its answer must wait for: the
   * commit it made, or the commits a read outside a transaction could have seen. `open` says
   * whether the connection is still inside a transaction.
   */
  run(source: string, parameters: readonly unknown[]): Ran<QueryResult<unknown>> {
    const statement = this.cache.get(source)
    let result: QueryResult<unknown>
    if (statement.reader) {
      result = { rows: statement.all(parameters as unknown[]) }
    } else {
      const { changes, lastInsertRowid } = statement.run(parameters as unknown[])
      result = { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
    }
    const open = this.db.inTransaction
    if (!this.wal) return { result, durable: undefined, open }
    // COMMIT, ROLLBACK and BEGIN are "readonly" to SQLite: what they end is what ran before.
    if (!statement.readonly) this.dirty = true
    if (open) return { result, durable: undefined, open }
    const committed = this.dirty && !ROLLBACK.test(source)
    this.dirty = false
    return { result, durable: committed ? this.wal.commit() : this.wal.whenDurable(), open }
  }

  script(statements: readonly ScriptStatement[]): ScriptResult[] | Promise<ScriptResult[]> {
    const { result, durable } = this.runScript(statements)
    return durable ? durable.then(() => result) : result
  }

  /** `script`, answering what its answer must wait for as `run` does. */
  runScript(statements: readonly ScriptStatement[]): Ran<ScriptResult[]> {
    const result = runScript(this.db, (source) => this.cache.get(source), statements)
    if (!this.wal) return { result, durable: undefined, open: false }
    this.dirty = false
    return { result, durable: this.wal.commit(), open: false }
  }

  whenDurable(): Promise<void> | undefined {
    return this.wal?.whenDurable()
  }

  endTurn(): void {
    if (this.db.inTransaction) {
      this.db.exec('rollback')
      this.dirty = false
    }
  }

  async close(): Promise<void> {
    await this.wal?.close()
    this.db.close()
  }
}

/** What `InThreadWriter.run` answers. */
interface Ran<R> {
  result: R
  durable: Promise<void> | undefined
  open: boolean
}

/** A statement that rolls a whole transaction back (not `rollback to` a savepoint). */
const ROLLBACK = /^\s*rollback(?!\s+to\b)/i

/** The writer's lock: held by one connection at a time, handed to waiters in arrival order. */
class WriteLock {
  private held = false
  private waiters: (() => void)[] = []
  private head = 0

  /** Resolves once the caller holds the lock. */
  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true
      return Promise.resolve()
    }
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  /** Hands the lock to the longest waiter, or frees it. */
  release(): void {
    if (this.head < this.waiters.length) {
      const next = this.waiters[this.head]!
      this.waiters[this.head++] = undefined as unknown as () => void
      if (this.head > 1024 && this.head * 2 > this.waiters.length) {
        this.waiters = this.waiters.slice(this.head)
        this.head = 0
      }
      next()
    } else {
      this.held = false
    }
  }
}

/** An SQL identifier, quoted as kysely's SQLite compiler quotes one. */
const quoteName = (name: string) => `"${name.replaceAll('"', '""')}"`

/** Only SQL that starts so can be a plain read; anything else goes to the writer unasked. */
const READ_PREFIX = /^\s*(select|with)\s/i

class HubSqliteDriver implements Driver {
  readonly lock = new WriteLock()
  readonly writer: WriteConnection
  /** The writer when it runs in this thread: statements that commit can free it early. */
  readonly inThread: InThreadWriter | undefined
  readonly reader: StatementCache | undefined
  /** SQL texts prepared on the reader and found to need the writer; bounded like the caches. */
  private readonly writes = new Set<string>()
  private readonly max: number

  constructor(private readonly options: HubSqliteOptions) {
    this.max = options.cacheSize ?? 512
    const { writer } = options
    this.inThread =
      'endTurn' in writer ? undefined : new InThreadWriter(writer, this.max, options.walSync)
    this.writer = this.inThread ?? (writer as WriteConnection)
    this.reader = options.reader ? new StatementCache(options.reader, this.max) : undefined
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new HubSqliteConnection(this)
  }

  /**
   * The reader's statement for `source` when it is a plain read (it answers rows and changes
   * nothing), or undefined when it needs the writer. A statement the reader cannot prepare (a
   * table another connection is creating) goes to the writer, which answers the real error.
   */
  readStatement(source: string): SQLite.Statement | undefined {
    if (!this.reader || !READ_PREFIX.test(source) || this.writes.has(source)) return undefined
    let statement: SQLite.Statement
    try {
      statement = this.reader.get(source)
    } catch {
      return undefined
    }
    if (statement.reader && statement.readonly) return statement
    if (this.writes.size >= this.max) this.writes.clear()
    this.writes.add(source)
    return undefined
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteName(name)}`))
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoteName(name)}`))
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoteName(name)}`))
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.release(connection as HubSqliteConnection)
  }

  /** Hands the writer on from `conn`, ending a transaction it left open. */
  release(conn: HubSqliteConnection): void {
    if (!conn.holdsWriter) return
    conn.holdsWriter = false
    // A transaction left open would swallow the next holder's statements into it: end it, so
    // what it wrote is undone rather than committed by someone else. A turn that ran only
    // scripts left none open (each commits or rolls back its own).
    if (conn.ranStatements) this.writer.endTurn()
    conn.ranStatements = false
    this.lock.release()
  }

  async destroy(): Promise<void> {
    this.options.reader?.close()
    await this.writer.close()
  }
}

/** One kysely connection: borrows the writer on its first statement that needs it. */
class HubSqliteConnection implements DatabaseConnection {
  holdsWriter = false
  /** This turn on the writer ran a statement other than a script. */
  ranStatements = false

  constructor(private readonly driver: HubSqliteDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const script = (query as Partial<ScriptQuery>)[SCRIPT]
    const inThread = this.driver.inThread
    if (script) {
      if (!this.holdsWriter) {
        await this.driver.lock.acquire()
        this.holdsWriter = true
      }
      if (inThread) return this.durably(inThread.runScript(script)) as Promise<QueryResult<R>>
      return { rows: (await this.driver.writer.script(script)) as R[] }
    }
    const { sql: source, parameters } = query
    if (!this.holdsWriter) {
      const read = this.driver.readStatement(source)
      if (read) {
        const rows = read.all(parameters as unknown[]) as R[]
        const durable = this.driver.writer.whenDurable?.()
        return durable ? durable.then(() => ({ rows })) : { rows }
      }
      await this.driver.lock.acquire()
      this.holdsWriter = true
    }
    this.ranStatements = true
    if (inThread) {
      const ran = inThread.run(source, parameters)
      return (ran.durable ? this.durably(ran) : ran.result) as QueryResult<R>
    }
    return this.driver.writer.execute(source, parameters) as
      | QueryResult<R>
      | Promise<QueryResult<R>>
  }

  /**
   * Answers a statement's result once it is durable. A statement that left no transaction open
   * (a commit, a write on its own, a script) hands the writer on first, so the next transaction
   * runs while this one's fsync does, and its commit joins the next fsync.
   */
  private async durably<Q>(ran: Ran<Q>): Promise<QueryResult<unknown>> {
    if (!ran.open) this.driver.release(this)
    await ran.durable
    return Array.isArray(ran.result) ? { rows: ran.result } : (ran.result as QueryResult<unknown>)
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    // The hub streams nothing; a stream is answered from the whole result, row by row, so the
    // writer is never left busy with an open iterator between awaits.
    const { rows } = await this.executeQuery<R>(query)
    for (const row of rows) yield { rows: [row] }
  }
}
