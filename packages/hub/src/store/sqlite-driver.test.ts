import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { CompiledQuery, Kysely, sql } from 'kysely'
import { openDatabase } from './database.js'
import { HubSqliteDialect, sqliteScript } from './sqlite-driver.js'
import { SqliteWriterThread } from './sqlite-writer-thread.js'
import { transaction } from './transaction.js'
import { WalSync } from './wal-sync.js'

interface T {
  items: { id: number; v: string }
}

/** Runs `fn` inside `begin immediate` ... `commit` on one connection, rolling back on error. */
async function transactionOf<R>(db: Kysely<T>, fn: (tx: Kysely<T>) => Promise<R>): Promise<R> {
  return db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn)
    try {
      const value = await fn(conn)
      await sql`commit`.execute(conn)
      return value
    } catch (error) {
      await sql`rollback`.execute(conn)
      throw error
    }
  })
}

const WRITERS = {
  thread: 'on its own thread',
  inline: 'in this thread',
  durable: 'in this thread, its commits made durable off the event loop',
} as const

for (const mode of Object.keys(WRITERS) as (keyof typeof WRITERS)[])
  describe(`the hub SQLite driver (writer ${WRITERS[mode]})`, () => {
    let dir: string
    let file: string
    let db: Kysely<T>
    /** A third connection to the same file, as another process would hold one. */
    let other: SQLite.Database
    const open = (busyMs: number) => {
      const c = new SQLite(file)
      c.pragma('journal_mode = WAL')
      c.pragma(`busy_timeout = ${busyMs}`)
      return c
    }

    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'baton-driver-'))
      file = path.join(dir, 'db.sqlite')
      other = open(0)
      other.exec('create table items (id integer primary key, v text not null)')
      const reader = open(0)
      reader.pragma('query_only = ON')
      const writer =
        mode === 'thread'
          ? new SqliteWriterThread({
              file,
              pragmas: ['busy_timeout = 0', 'journal_mode = WAL'],
              cacheSize: 16,
            })
          : open(0)
      if (mode === 'durable') {
        ;(writer as SQLite.Database).pragma('synchronous = NORMAL')
        ;(writer as SQLite.Database).pragma('wal_autocheckpoint = 0')
      }
      const walSync =
        mode === 'durable'
          ? new WalSync(file, ['busy_timeout = 0'], { checkpointEvery: 16 })
          : undefined
      db = new Kysely<T>({ dialect: new HubSqliteDialect({ writer, reader, walSync }) })
    })
    after(async () => {
      await db.destroy()
      other.close()
      rmSync(dir, { recursive: true, force: true })
    })

    const rows = async () =>
      (await db.selectFrom('items').select(['id', 'v']).orderBy('id').execute()).map((r) => r.v)
    const reset = async () => {
      await db.deleteFrom('items').execute()
    }

    test('a script commits all of its statements in one transaction, or none of them', async () => {
      await reset()
      const insert = (id: number, v: string) =>
        CompiledQuery.raw('insert into items (id, v) values (?, ?)', [id, v])
      const [first, second, third] = (
        await db.executeQuery(
          sqliteScript([
            insert(1, 'a'),
            insert(2, 'b'),
            CompiledQuery.raw("update items set v = v || '!' where id > ? returning id, v", [0]),
          ]),
        )
      ).rows
      assert.deepEqual([first?.changes, second?.changes], [1, 1])
      assert.deepEqual(third?.rows, [
        { id: 1, v: 'a!' },
        { id: 2, v: 'b!' },
      ])
      // The second statement fails (a duplicate key): the first is undone with it.
      await assert.rejects(
        db.executeQuery(sqliteScript([insert(3, 'c'), insert(1, 'dup')])),
        (e: { code?: string }) => e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY',
      )
      assert.deepEqual(await rows(), ['a!', 'b!'])
      // The writer is free again, and what runs next is not inside a transaction left open.
      await db.insertInto('items').values({ id: 4, v: 'd' }).execute()
      other.exec('begin immediate')
      other.exec('rollback')
      assert.deepEqual(await rows(), ['a!', 'b!', 'd'])
      // Inside a transaction a script refuses to start: it commits on its own or not at all.
      await assert.rejects(
        transactionOf(db, (tx) => tx.executeQuery(sqliteScript([insert(5, 'e')]))),
        (e: { code?: string }) => e.code === 'SQLITE_ERROR',
      )
      assert.deepEqual(await rows(), ['a!', 'b!', 'd'])
    })

    test('a read outside any transaction answers the last commit without waiting for a writer', async () => {
      await reset()
      await db.insertInto('items').values({ id: 1, v: 'committed' }).execute()
      const events: string[] = []
      let release!: () => void
      const held = new Promise<void>((r) => {
        release = r
      })
      const writing = db.connection().execute(async (conn) => {
        await sql`begin immediate`.execute(conn)
        await conn.updateTable('items').set({ v: 'uncommitted' }).where('id', '=', 1).execute()
        events.push('written')
        await held
        await sql`commit`.execute(conn)
        events.push('committed')
      })
      while (!events.includes('written')) await new Promise((r) => setImmediate(r))
      assert.deepEqual(await rows(), ['committed'], 'the open transaction is not seen')
      events.push('read')
      release()
      await writing
      assert.deepEqual(events, ['written', 'read', 'committed'])
      assert.deepEqual(await rows(), ['uncommitted'])
    })

    test('writers take the write connection one at a time, in the order they asked', async () => {
      await reset()
      const order: number[] = []
      await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          db.connection().execute(async (conn) => {
            await sql`begin immediate`.execute(conn)
            order.push(i)
            // Another writer slipping in here would interleave its push with this one's.
            await new Promise((r) => setImmediate(r))
            await conn
              .insertInto('items')
              .values({ id: i, v: String(i) })
              .execute()
            order.push(i)
            await sql`commit`.execute(conn)
          }),
        ),
      )
      assert.deepEqual(order, Array.from({ length: 200 }, (_, i) => [i, i]).flat())
      assert.equal((await rows()).length, 200)
    })

    test('thousands of queries at once are all answered, reads and writes alike', async () => {
      await reset()
      await db
        .insertInto('items')
        .values(Array.from({ length: 100 }, (_, i) => ({ id: i, v: 'r' })))
        .execute()
      const work = Array.from({ length: 4000 }, (_, i) =>
        i % 10 === 0
          ? db
              .updateTable('items')
              .set({ v: 'w' })
              .where('id', '=', i % 100)
              .execute()
              .then((r) => Number(r[0]!.numUpdatedRows))
          : db
              .selectFrom('items')
              .select('v')
              .where('id', '=', i % 100)
              .execute()
              .then((r) => r.length),
      )
      const answers = await Promise.all(work)
      assert.ok(answers.every((n) => n === 1))
      assert.equal((await rows()).filter((v) => v === 'w').length, 10, 'ids 0, 10, … 90 written')
    })

    test('a statement that starts like a read but writes goes to the writer', async () => {
      await reset()
      await sql`with x(id, v) as (select 7, 'from-with') insert into items select * from x`.execute(
        db,
      )
      assert.deepEqual(await rows(), ['from-with'])
    })

    test("kysely's transactions and savepoints behave as with kysely's own driver", async () => {
      await reset()
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 1, v: 'kept' }).execute()
      })
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await trx.insertInto('items').values({ id: 2, v: 'undone' }).execute()
          throw new Error('refused')
        }),
      )
      const trx = await db.startTransaction().execute()
      await trx.insertInto('items').values({ id: 3, v: 'before-savepoint' }).execute()
      const sp = await trx.savepoint('sp1').execute()
      await sp.insertInto('items').values({ id: 4, v: 'rolled-back' }).execute()
      const back = await sp.rollbackToSavepoint('sp1').execute()
      await back.insertInto('items').values({ id: 5, v: 'after-savepoint' }).execute()
      await back.commit().execute()
      assert.deepEqual(await rows(), ['kept', 'before-savepoint', 'after-savepoint'])
    })

    test('a connection released inside its transaction leaves nothing of it', async () => {
      await reset()
      await db.connection().execute(async (conn) => {
        await sql`begin immediate`.execute(conn)
        await conn.insertInto('items').values({ id: 1, v: 'half' }).execute()
      })
      await db.insertInto('items').values({ id: 2, v: 'next' }).execute()
      assert.deepEqual(await rows(), ['next'], "the next writer's statement was not swallowed")
    })

    test('errors keep their SQLite codes', async () => {
      await reset()
      await db.insertInto('items').values({ id: 1, v: 'a' }).execute()
      await assert.rejects(db.insertInto('items').values({ id: 1, v: 'b' }).execute(), {
        code: 'SQLITE_CONSTRAINT_PRIMARYKEY',
      })
      other.exec('begin immediate')
      try {
        await assert.rejects(
          db.connection().execute((conn) => sql`begin immediate`.execute(conn)),
          { code: 'SQLITE_BUSY' },
        )
      } finally {
        other.exec('rollback')
      }
      await assert.rejects(sql`select * from missing_table`.execute(db), { code: 'SQLITE_ERROR' })
      assert.deepEqual(await rows(), ['a'])
    })
  })

describe('the SQLite writer thread at the end of a turn', () => {
  test('is sent a message to roll back only for a turn that left a transaction open', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-driver-turns-'))
    const file = path.join(dir, 'db.sqlite')
    const setup = new SQLite(file)
    setup.pragma('journal_mode = WAL')
    setup.exec('create table items (id integer primary key, v text not null)')
    setup.close()
    const writer = new SqliteWriterThread({ file, pragmas: ['busy_timeout = 0'], cacheSize: 16 })
    const db = new Kysely<T>({ dialect: new HubSqliteDialect({ writer }) })
    /** The messages `turn` sends to the writer thread. */
    const messages = async (turn: () => Promise<unknown>) => {
      const before = writer.messagesSent
      await turn().catch(() => {})
      return writer.messagesSent - before
    }
    try {
      // begin, insert, commit
      const committed = await messages(() =>
        db
          .transaction()
          .execute((trx) => trx.insertInto('items').values({ id: 1, v: 'committed' }).execute()),
      )
      assert.equal(committed, 3)
      // begin, insert, rollback
      const refused = await messages(() =>
        db.transaction().execute(async (trx) => {
          await trx.insertInto('items').values({ id: 2, v: 'rolled-back' }).execute()
          throw new Error('refused')
        }),
      )
      assert.equal(refused, 3)
      const autocommit = await messages(() =>
        db.insertInto('items').values({ id: 3, v: 'autocommit' }).execute(),
      )
      assert.equal(autocommit, 1)
      const conflict = await messages(() =>
        db.insertInto('items').values({ id: 3, v: 'duplicate' }).execute(),
      )
      assert.equal(conflict, 1)
      // begin, insert, and the end of the turn that rolls them back
      const leftOpen = await messages(() =>
        db.connection().execute(async (conn) => {
          await sql`begin immediate`.execute(conn)
          await conn.insertInto('items').values({ id: 4, v: 'half' }).execute()
        }),
      )
      assert.equal(leftOpen, 3)
      await db.insertInto('items').values({ id: 5, v: 'next' }).execute()
      const left = await db.selectFrom('items').select('v').orderBy('id').execute()
      assert.deepEqual(
        left.map((r) => r.v),
        ['committed', 'autocommit', 'next'],
      )
    } finally {
      await db.destroy()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the hub's SQLite database", () => {
  for (const thread of [false, true])
    test(`its capabilities recognise unique errors raised through the driver (writer thread: ${thread})`, async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'baton-driver-caps-'))
      const database = await openDatabase({ dataDir: dir, sqliteWriterThread: thread })
      try {
        const insert = () =>
          transaction(database, (tx) =>
            tx.db
              .insertInto('quota_counters')
              .values({ scope: 'caps', subject: 's', window_start: 0, count: 1 })
              .execute(),
          )
        await insert()
        const error = await insert().then(
          () => undefined,
          (e: unknown) => e,
        )
        assert.ok(database.caps.isUniqueViolation(error))
        assert.equal(database.caps.isRetryable(error), false)
      } finally {
        await database.close()
        rmSync(dir, { recursive: true, force: true })
      }
    })
})

describe('the SQLite writer thread killed inside a transaction', () => {
  test('leaves the last commit and nothing of the open transaction', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-driver-kill-'))
    const file = path.join(dir, 'db.sqlite')
    try {
      const setup = new SQLite(file)
      setup.pragma('journal_mode = WAL')
      setup.exec(
        "create table items (id integer primary key, v text not null); insert into items values (1, 'committed')",
      )
      setup.close()
      // A process whose writer thread has begun a transaction and written in it, killed there.
      const script = `
        import { Kysely, sql } from 'kysely'
        import { HubSqliteDialect } from ${JSON.stringify(new URL('./sqlite-driver.ts', import.meta.url).href)}
        import { SqliteWriterThread } from ${JSON.stringify(new URL('./sqlite-writer-thread.ts', import.meta.url).href)}
        const writer = new SqliteWriterThread({ file: ${JSON.stringify(file)}, pragmas: ['busy_timeout = 5000', 'synchronous = FULL'], cacheSize: 8 })
        const db = new Kysely({ dialect: new HubSqliteDialect({ writer }) })
        await db.connection().execute(async (conn) => {
          await sql\`begin immediate\`.execute(conn)
          await sql\`update items set v = 'half' where id = 1\`.execute(conn)
          await sql\`insert into items values (2, 'half')\`.execute(conn)
          process.stdout.write('written\\n')
          await new Promise(() => {})
        })
      `
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          if (d.toString().includes('written')) resolve()
        })
        child.on('exit', (code) => reject(new Error(`exited ${code} before writing`)))
      })
      child.kill('SIGKILL')
      await new Promise((r) => child.once('exit', r))
      const after = new SQLite(file)
      try {
        assert.deepEqual(after.prepare('select id, v from items order by id').all(), [
          { id: 1, v: 'committed' },
        ])
        assert.equal(after.pragma('integrity_check', { simple: true }), 'ok')
      } finally {
        after.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
