import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fdatasync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { Kysely, sql } from 'kysely'
import { openDatabase } from './database.js'
import { HubSqliteDialect } from './sqlite-driver.js'
import { WalSync } from './wal-sync.js'

interface T {
  items: { id: number; v: string }
}

/** Whether `p` has settled after the event loop has turned `turns` times. */
async function settled(p: Promise<unknown>, turns = 5): Promise<boolean> {
  let done = false
  p.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r))
  return done
}

describe('the SQLite write connection with its commits made durable off the event loop', () => {
  let dir: string
  let file: string
  let db: Kysely<T>
  let wal: WalSync
  /** fdatasyncs asked for and not yet let through, in order. */
  let held: { fd: number; done: (e: Error | null) => void }[]
  let failNext: Error | undefined

  const open = (extra: string[] = []) => {
    const c = new SQLite(file)
    for (const p of ['busy_timeout = 5000', 'journal_mode = WAL', ...extra]) c.pragma(p)
    return c
  }
  /** Lets the oldest held fdatasync run, for real. */
  const release = () => {
    const next = held.shift()
    assert.ok(next, 'an fdatasync was asked for')
    if (failNext) next.done(failNext)
    else fdatasync(next.fd, next.done)
  }

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'baton-walsync-'))
    file = path.join(dir, 'db.sqlite')
    held = []
    failNext = undefined
    const setup = open()
    setup.exec('create table items (id integer primary key, v text not null)')
    setup.close()
    wal = new WalSync(file, ['busy_timeout = 5000', 'synchronous = FULL'], {
      sync: (fd, done) => held.push({ fd, done }),
    })
    const reader = open()
    reader.pragma('query_only = ON')
    db = new Kysely<T>({
      dialect: new HubSqliteDialect({
        writer: open(['synchronous = NORMAL', 'wal_autocheckpoint = 0']),
        reader,
        walSync: wal,
      }),
    })
  })
  afterEach(async () => {
    while (held.length > 0) release()
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a write outside a transaction and a transaction are answered only once their WAL is synced', async () => {
    const insert = db.insertInto('items').values({ id: 1, v: 'a' }).execute()
    assert.equal(await settled(insert), false)
    assert.equal(held.length, 1)
    release()
    await insert
    const tx = db.transaction().execute(async (t) => {
      await t.insertInto('items').values({ id: 2, v: 'b' }).execute()
      await t.updateTable('items').set({ v: 'a2' }).where('id', '=', 1).execute()
    })
    assert.equal(await settled(tx), false)
    assert.equal(held.length, 1, 'one sync for the whole transaction, at its commit')
    release()
    await tx
    assert.equal(wal.syncs, 2)
  })

  test('a read that could see a commit not yet durable waits for it; one that could not answers at once', async () => {
    const insert = db.insertInto('items').values({ id: 1, v: 'a' }).execute()
    await settled(insert)
    // The reader sees the commit (it is in the WAL) but may not show it before it is durable.
    const read = db.selectFrom('items').select('v').execute()
    assert.equal(await settled(read), false)
    release()
    assert.deepEqual(await read, [{ v: 'a' }])
    await insert
    assert.deepEqual(await db.selectFrom('items').select('v').execute(), [{ v: 'a' }])
    assert.equal(held.length, 0)
  })

  test('the writer is handed on while a commit syncs, and commits made meanwhile share the next sync', async () => {
    const first = db.insertInto('items').values({ id: 1, v: 'a' }).execute()
    await settled(first)
    // The five run and commit while the first commit's fsync is still held.
    const more = Array.from({ length: 5 }, (_, i) =>
      db
        .insertInto('items')
        .values({ id: i + 2, v: 'b' })
        .execute(),
    )
    assert.equal(await settled(Promise.all(more)), false)
    const other = new SQLite(file)
    assert.equal((other.prepare('select count(*) as n from items').get() as { n: number }).n, 6)
    other.close()
    assert.equal(held.length, 1, 'one fsync at a time')
    release()
    await first
    assert.equal(await settled(Promise.all(more)), false, 'the first fsync began before them')
    assert.equal(held.length, 1)
    release()
    await Promise.all(more)
    assert.equal(wal.syncs, 2)
  })

  test('a failed fdatasync refuses the commit it covered and every later one', async () => {
    failNext = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })
    const insert = db.insertInto('items').values({ id: 1, v: 'a' }).execute()
    await settled(insert)
    release()
    await assert.rejects(insert, /EIO/)
    await assert.rejects(db.insertInto('items').values({ id: 2, v: 'b' }).execute(), /EIO/)
    await assert.rejects(db.selectFrom('items').select('v').execute(), /EIO/)
  })
})

describe('checkpoints of the SQLite WAL', () => {
  test('run on a thread of their own, so the database file takes the pages the event loop wrote', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-walsync-ckpt-'))
    const file = path.join(dir, 'db.sqlite')
    try {
      const setup = new SQLite(file)
      setup.pragma('journal_mode = WAL')
      setup.exec('create table items (id integer primary key, v text not null)')
      setup.pragma('wal_checkpoint(TRUNCATE)')
      setup.close()
      const before = statSync(file).size
      const wal = new WalSync(file, ['busy_timeout = 5000', 'synchronous = FULL'], {
        checkpointEvery: 8,
      })
      const db = new Kysely<T>({
        dialect: new HubSqliteDialect({
          writer: (() => {
            const c = new SQLite(file)
            c.pragma('journal_mode = WAL')
            c.pragma('synchronous = NORMAL')
            c.pragma('wal_autocheckpoint = 0')
            return c
          })(),
          walSync: wal,
        }),
      })
      try {
        for (let i = 0; i < 64; i++) {
          await db
            .insertInto('items')
            .values({ id: i, v: 'x'.repeat(2000) })
            .execute()
        }
        const deadline = Date.now() + 10_000
        while (wal.checkpoints === 0 && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20))
        }
        assert.ok(wal.checkpoints > 0, 'the checkpoint thread ran')
        // Automatic checkpoints are off on the write connection: only the thread can have copied
        // pages into the database file while the connection is open.
        assert.ok(statSync(file).size > before, 'the database file grew')
        assert.ok(wal.syncs > 0 && wal.syncs <= 64)
      } finally {
        await db.destroy()
      }
      const after = new SQLite(file)
      assert.equal((after.prepare('select count(*) as n from items').get() as { n: number }).n, 64)
      assert.equal(after.pragma('integrity_check', { simple: true }), 'ok')
      after.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the hub's SQLite database killed while it commits", () => {
  test('keeps every write it answered, with checkpoints running beside', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-walsync-kill-'))
    try {
      const script = `
        import { sql } from 'kysely'
        import { openDatabase } from ${JSON.stringify(new URL('./database.ts', import.meta.url).href)}
        const database = await openDatabase({ dataDir: ${JSON.stringify(dir)} })
        await sql\`create table items (id integer primary key, v text not null)\`.execute(database.db)
        for (let i = 0; ; i++) {
          await sql\`insert into items values (\${i}, \${'x'.repeat(500)})\`.execute(database.db)
          process.stdout.write(\`acked \${i}\\n\`)
        }
      `
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', script],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      let acked = -1
      await new Promise<void>((resolve, reject) => {
        let text = ''
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString()
          const lines = text.split('\n')
          text = lines.pop()!
          for (const line of lines) acked = Number(line.slice('acked '.length))
          if (acked >= 600) resolve()
        })
        child.on('exit', (code) => reject(new Error(`exited ${code} after ${acked}`)))
      })
      child.kill('SIGKILL')
      await new Promise((r) => child.once('exit', r))
      const database = await openDatabase({ dataDir: dir })
      try {
        const rows = await sql<{
          n: number
        }>`select count(*) as n from items where id <= ${acked}`.execute(database.db)
        assert.equal(rows.rows[0]!.n, acked + 1)
      } finally {
        await database.close()
      }
      const check = new SQLite(path.join(dir, 'baton.sqlite'))
      assert.equal(check.pragma('integrity_check', { simple: true }), 'ok')
      check.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
