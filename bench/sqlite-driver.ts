// N single-row selects at once through the hub's SQLite database (kysely over the hub's driver),
// beside the same selects through better-sqlite3 directly and through kysely's own SQLite driver,
// on one file, in the same run, interleaved. kysely's driver serialises every query through a
// mutex that wakes every waiter on each unlock, so its time grows with N²; the hub's must grow
// with N. A second figure runs reads while write transactions commit (the shape of a wake after
// a move: many reads queued beside the writer). Run alone: node --import tsx bench/sqlite-driver.ts
import { mkdtemp, rm } from 'node:fs/promises'
import os, { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { type Database, openDatabase, sqlitePath } from '../packages/hub/src/store/database.js'
import { transaction } from '../packages/hub/src/store/transaction.js'
import { median, printResults, printTable, type Result } from './lib.js'

interface BenchSchema {
  bench_rows: { id: number; v: string; n: number }
}

const env = process.env
const ROWS = 16_000
const sizes = (env.BENCH_SQLITE_N ?? '1000,8000,16000').split(',').map(Number)
const rounds = Number(env.BENCH_ROUNDS ?? 5)
/** kysely's own driver is quadratic; `BENCH_SQLITE_STOCK=0` leaves it out of long runs. */
const withStock = env.BENCH_SQLITE_STOCK !== '0'
const log = (msg: string) => process.stderr.write(`[sqlite-driver] ${msg}\n`)
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

type Arm = (ids: number[]) => Promise<number>

/** Milliseconds for `arm` to answer every id, all issued at once. */
async function time(arm: Arm, ids: number[]): Promise<number> {
  const started = performance.now()
  const found = await arm(ids)
  const ms = performance.now() - started
  if (found !== ids.length) throw new Error(`answered ${found} of ${ids.length} rows`)
  return ms
}

function kyselyArm(db: Kysely<BenchSchema>): Arm {
  return async (ids) => {
    const rows = await Promise.all(
      ids.map((id) =>
        db.selectFrom('bench_rows').select(['id', 'v']).where('id', '=', id).executeTakeFirst(),
      ),
    )
    return rows.filter((r) => r !== undefined).length
  }
}

export async function run(): Promise<Result[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-bench-sqlite-'))
  const hub = await openDatabase({ dataDir: dir })
  const file = sqlitePath(dir)
  const raw = new SQLite(file)
  raw.pragma('busy_timeout = 5000')
  raw.exec('create table bench_rows (id integer primary key, v text not null, n integer not null)')
  const insert = raw.prepare("insert into bench_rows (id, v, n) values (?, 'value', 0)")
  raw.transaction(() => {
    for (let i = 1; i <= ROWS; i++) insert.run(i)
  })()
  const stock = new Kysely<BenchSchema>({
    dialect: new SqliteDialect({ database: new SQLite(file) }),
  })
  const hubDb = hub.db as unknown as Kysely<BenchSchema>
  // The hub's driver with every statement on the writer: what the reader connection adds.
  const fifo = await openDatabase({ dataDir: dir, sqliteReader: false })
  const fifoDb = fifo.db as unknown as Kysely<BenchSchema>
  const select = raw.prepare('select id, v from bench_rows where id = ?')
  const arms: Record<string, Arm> = {
    raw: async (ids) => {
      const rows = await Promise.all(ids.map(async (id) => select.get(id)))
      return rows.filter((r) => r !== undefined).length
    },
    hub: kyselyArm(hubDb),
    writer_only: kyselyArm(fifoDb),
    ...(withStock ? { kysely: kyselyArm(stock) } : {}),
  }
  const ids = (n: number) => Array.from({ length: n }, (_, i) => (i % ROWS) + 1)

  // Reads beside writes: `writes` single-row write transactions through the hub's transaction()
  // while N reads are in flight; the baseline runs the same writes and reads on better-sqlite3
  // directly (writes each in its own immediate transaction, reads between them).
  const writes = 200
  const bump = raw.prepare('update bench_rows set n = n + 1 where id = ?')
  const rawWrite = raw.transaction((id: number) => bump.run(id))
  const mixed: Record<string, Arm> = {
    raw: async (list) => {
      const reads = Promise.all(list.map(async (id) => select.get(id)))
      const done = Promise.all(
        Array.from({ length: writes }, async (_, i) => rawWrite.immediate(i + 1)),
      )
      const [rows] = await Promise.all([reads, done])
      return rows.filter((r) => r !== undefined).length
    },
    hub: mixedArm(hub),
    writer_only: mixedArm(fifo),
  }
  function mixedArm(database: Database): Arm {
    const db = database.db as unknown as Kysely<BenchSchema>
    return async (list) => {
      const reads = kyselyArm(db)(list)
      const done = Promise.all(
        Array.from({ length: writes }, (_, i) =>
          transaction(database, async (tx) => {
            await sql`update bench_rows set n = n + 1 where id = ${i + 1}`.execute(tx.db)
          }),
        ),
      )
      const [found] = await Promise.all([reads, done])
      return found
    }
  }

  const results: Result[] = []
  const rows: Record<string, unknown>[] = []
  try {
    const figures: { name: string; n: number; set: Record<string, Arm> }[] = [
      ...sizes.map((n) => ({ name: `sqlite selects ×${n}`, n, set: arms })),
      { name: `sqlite selects ×8000 beside ${writes} writes`, n: 8000, set: mixed },
    ]
    for (const figure of figures) {
      const samples: Record<string, number[]> = {}
      for (const name of Object.keys(figure.set)) samples[name] = []
      await time(figure.set.hub!, ids(Math.min(figure.n, 1000)))
      for (let r = 0; r < rounds; r++) {
        // Interleaved, and the order turned each round so neither arm always runs warm.
        const order = Object.keys(figure.set)
        if (r % 2) order.reverse()
        for (const name of order) {
          const ms = await time(figure.set[name]!, ids(figure.n))
          samples[name]!.push(ms)
          log(
            `${figure.name} round ${r + 1}/${rounds} ${name}: ${ms.toFixed(0)} ms (load ${load()})`,
          )
        }
      }
      const med = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))
      const perSecond = (ms: number) => (figure.n / ms) * 1000
      results.push({
        name: figure.name,
        baseline: perSecond(med.raw!),
        value: perSecond(med.hub!),
        ratio: med.raw! / med.hub!,
        unit: 'selects/s (baseline: better-sqlite3 directly)',
        detail: {
          raw_ms: med.raw!,
          hub_ms: med.hub!,
          ...(med.writer_only !== undefined ? { writer_only_ms: med.writer_only } : {}),
          ...(med.kysely !== undefined
            ? { kysely_ms: med.kysely, hub_vs_kysely: med.kysely / med.hub! }
            : {}),
          load: load(),
        },
      })
      rows.push({ figure: figure.name, ...med, load: load() })
    }
  } finally {
    await stock.destroy()
    await fifo.close()
    raw.close()
    await hub.close()
    await rm(dir, { recursive: true, force: true })
  }
  printTable(['figure', 'raw', 'hub', 'writer_only', 'kysely', 'load'], rows)
  return results
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
