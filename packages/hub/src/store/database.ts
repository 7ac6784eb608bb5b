import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, type PostgresPool, sql } from 'kysely'
import pg from 'pg'
import type { Logger } from 'pino'
import { migrate } from './migrations.js'
import type { Schema } from './schema.js'
import { HubSqliteDialect } from './sqlite-driver.js'
import { SqliteWriterThread } from './sqlite-writer-thread.js'
import type { StoreCounting } from './transaction.js'
import { WalSync } from './wal-sync.js'

/** What differs between the two dialects, in one place; features never branch on the dialect. */
export interface Capabilities {
  name: 'sqlite' | 'postgres'
  /** The statement that opens a write transaction (SQLite takes its write lock up front). */
  beginWrite: string
  /** True for errors worth retrying the whole transaction on: busy, serialization, deadlock. */
  isRetryable(error: unknown): boolean
  /** True for a unique-constraint violation. */
  isUniqueViolation(error: unknown): boolean
  /**
   * Whether reads inside a write transaction take row locks (`for update`); SQLite needs none,
   * since `begin immediate` already holds the database's one write lock.
   */
  lockRowsForUpdate: boolean
  /** How many write transactions may commit at once: one for SQLite, several for PostgreSQL. */
  writeConcurrency: number
  /**
   * Whether one statement may write several tables through data-modifying WITH clauses
   * (`with u as (update … returning …) insert …`), so a set-based write commits in one round trip.
   */
  writableCte: boolean
  /**
   * Whether a set-based write of several tables can commit in one trip to the database, outside
   * any transaction: PostgreSQL as one statement with data-modifying WITH clauses, SQLite as a
   * script the writer runs as one transaction (`sqliteScript`).
   */
  oneTripWrites: boolean
}

const sqliteCaps: Capabilities = {
  name: 'sqlite',
  beginWrite: 'begin immediate',
  isRetryable: (e) => {
    const code = (e as { code?: unknown })?.code
    return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED'
  },
  isUniqueViolation: (e) => {
    const code = (e as { code?: unknown })?.code
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  },
  lockRowsForUpdate: false,
  writeConcurrency: 1,
  writableCte: false,
  oneTripWrites: true,
}

const postgresCaps: Capabilities = {
  name: 'postgres',
  beginWrite: 'begin',
  isRetryable: (e) => {
    const code = (e as { code?: unknown })?.code
    return code === '40001' || code === '40P01'
  },
  isUniqueViolation: (e) => (e as { code?: unknown })?.code === '23505',
  lockRowsForUpdate: true,
  writeConcurrency: 2,
  writableCte: true,
  oneTripWrites: true,
}

// Statement texts each PostgreSQL connection prepares once under a name, then only binds and
// runs: parsing and planning a set-based statement anew each time cost more than its round trip.
const namedStatements = new Map<string, string>()

/**
 * Names a statement text that runs often with new parameters only. On PostgreSQL each connection
 * prepares it once (a node-postgres named statement) and afterwards only binds and runs it; the
 * text must not depend on its parameters. Answers the text, to be run as usual.
 */
export function namedStatement(name: string, text: string): string {
  namedStatements.set(text, name)
  return text
}

const preparing = Symbol('baton.preparing')

/** The pool kysely queries through: a named statement's text runs as that named statement. */
function preparingPool(pool: pg.Pool): PostgresPool {
  return {
    connect: async () => {
      const client = (await pool.connect()) as pg.PoolClient & { [preparing]?: true }
      if (!client[preparing]) {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown
        client.query = ((text: unknown, values?: unknown) => {
          const name = typeof text === 'string' ? namedStatements.get(text) : undefined
          return name ? query({ name, text, values }) : query(text, values)
        }) as typeof client.query
        client[preparing] = true
      }
      return client as unknown as Awaited<ReturnType<PostgresPool['connect']>>
    },
    end: () => pool.end(),
  }
}

/** What `guardPool` needs of a pg pool, kept structural so no pg type is in the declarations. */
interface PoolEvents {
  on(event: 'error', listener: (error: Error) => void): unknown
  on(
    event: 'connect',
    listener: (client: { on(event: 'error', listener: (error: Error) => void): unknown }) => void,
  ): unknown
}

/**
 * Makes a pool's connection losses harmless. pg forwards an idle client's 'error' to the pool,
 * but a checked-out client emits it on itself, and an 'error' event without a listener ends the
 * process: so every client gets its own listener when it connects. The query in flight rejects
 * with the same error (answered 503 `unavailable`) and the pool discards the broken client, so
 * the next query opens a fresh connection once the database is back.
 */
export function guardPool(pool: PoolEvents): void {
  pool.on('error', () => {})
  pool.on('connect', (client) => {
    client.on('error', () => {})
  })
}

/** An open database: the kysely instance, its capabilities, and how to close it. */
export interface Database {
  db: Kysely<Schema>
  caps: Capabilities
  /** A short description safe to log (no password). */
  describe: string
  /**
   * SQLite with its writer on a worker thread: the CPU time that thread has run, in
   * microseconds, where the system tells it (for benchmarks).
   */
  writerCpuMicros?: () => Promise<number | undefined>
  /** SQLite with its writer on a worker thread: the messages sent to that thread so far. */
  writerMessages?: () => number
  /** SQLite with its writer in this thread: the WAL fdatasyncs run so far (see `WalSync`). */
  walSyncs?: () => number
  /** Statement and commit counting, once `countStatements` has started it. */
  counting?: StoreCounting
  close(): Promise<void>
}

/** Where the SQLite file lives under a data directory. */
export function sqlitePath(dataDir: string): string {
  return path.join(dataDir, 'baton.sqlite')
}

/**
 * Opens the database named by the config and applies migrations. SQLite runs in WAL mode, and
 * no commit is answered before it is on disk (synchronous=FULL on a writer thread; an fdatasync
 * of the WAL off the event loop in this thread, see `WalSync`), so that a committed write
 * survives a crash or power loss.
 */
export async function openDatabase(opts: {
  databaseUrl?: string | undefined
  dataDir: string
  poolSize?: number
  log?: Logger | undefined
  /** SQLite: serve plain reads outside transactions from a second connection (default true). */
  sqliteReader?: boolean
  /**
   * SQLite: run the write connection on a worker thread (default false: in this thread, its
   * commits made durable on the thread pool).
   */
  sqliteWriterThread?: boolean
}): Promise<Database> {
  let database: Database
  if (opts.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.poolSize ?? 10,
      // bigint columns hold epoch milliseconds, which fit a JavaScript number exactly.
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === 20
            ? (v: string) => Number(v)
            : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    })
    guardPool(pool)
    const url = new URL(opts.databaseUrl)
    database = {
      db: new Kysely<Schema>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) }),
      caps: postgresCaps,
      describe: `postgres://${url.hostname}:${url.port || 5432}${url.pathname}`,
      close: async () => {
        await database.db.destroy()
      },
    }
  } else {
    const file = sqlitePath(opts.dataDir)
    prepareDataDir(opts.dataDir, file, opts.log)
    // busy_timeout first: the writer thread and the reader may open the file at the same time.
    const pragmas = ['busy_timeout = 5000', 'journal_mode = WAL', 'foreign_keys = ON']
    const open = (extra: readonly string[]) => {
      const sqlite = new SQLite(file)
      for (const pragma of [...pragmas, ...extra]) sqlite.pragma(pragma)
      return sqlite
    }
    // On its own thread the writer commits with synchronous=FULL (the fsync inside COMMIT, on
    // that thread). In this thread it commits with NORMAL and automatic checkpoints off, and
    // `WalSync` makes each commit durable on the thread pool before it is answered, and
    // checkpoints on a thread of its own.
    let walSync: WalSync | undefined
    let writer: SQLite.Database | SqliteWriterThread
    if (opts.sqliteWriterThread) {
      writer = new SqliteWriterThread({
        file,
        pragmas: [...pragmas, 'synchronous = FULL'],
        cacheSize: 512,
      })
    } else {
      writer = open(['synchronous = NORMAL', 'wal_autocheckpoint = 0'])
      walSync = new WalSync(file, [...pragmas, 'synchronous = FULL'])
    }
    // The reader only reads: query_only makes a write reaching it an error, never a change.
    const reader = opts.sqliteReader === false ? undefined : open([])
    reader?.pragma('query_only = ON')
    database = {
      db: new Kysely<Schema>({ dialect: new HubSqliteDialect({ writer, reader, walSync }) }),
      caps: sqliteCaps,
      describe: `sqlite:${file}`,
      ...(writer instanceof SqliteWriterThread
        ? { writerCpuMicros: () => writer.cpuMicros(), writerMessages: () => writer.messagesSent }
        : {}),
      ...(walSync ? { walSyncs: () => walSync.syncs } : {}),
      close: async () => {
        await database.db.destroy()
      },
    }
  }
  await migrate(database.db as unknown as Kysely<unknown>)
  return database
}

/**
 * Keeps the data directory 0700 and its files 0600: the database holds every principal's data.
 * A new SQLite file is created 0600 before SQLite opens it, and SQLite gives its `-wal` and
 * `-shm` files the mode of the database file; what an older hub left wider is tightened, said
 * in a log line.
 */
function prepareDataDir(dataDir: string, file: string, log: Logger | undefined): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const tighten = (target: string, mode: number) => {
    const was = statSync(target).mode & 0o777
    if ((was & 0o077) === 0) return
    chmodSync(target, mode)
    log?.warn({ path: target, was: was.toString(8), now: mode.toString(8) }, 'tightened file mode')
  }
  tighten(dataDir, 0o700)
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600))
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    if (existsSync(f)) tighten(f, 0o600)
  }
}

/** Answers true when the database answers a trivial query. */
export async function ping(database: Database): Promise<boolean> {
  try {
    await sql`select 1`.execute(database.db)
    return true
  } catch {
    return false
  }
}
