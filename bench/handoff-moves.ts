// Handoff moves over HTTP, many at once, beside a bare fastify route doing one durable UPDATE per
// request on the same store. Baton commits moves that arrive together in one transaction (group
// commit); the baseline commits once per request. Run alone: node --import tsx bench/handoff-moves.ts
import { randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { loadConfig, type RunningHub, startHub } from '@baton/hub'
import SQLite from 'better-sqlite3'
import Fastify, { type FastifyInstance } from 'fastify'
import pg from 'pg'
import { countStatements } from '../packages/hub/src/store/transaction.js'
import {
  assertAllAnswered,
  type LoadClient,
  type LoadRequest,
  type LoadResult,
  median,
  printResults,
  printTable,
  type Result,
  startLoadClient,
} from './lib.js'

type Store = 'sqlite' | 'postgres'

/** Knobs of the scenario; each defaults from a BENCH_* environment variable, then a constant. */
export interface MoveOptions {
  stores: Store[]
  /** Handoffs created (untimed) and then moved, per round. */
  handoffs: number
  /** Requests in flight at once. */
  concurrency: number
  rounds: number
  client: 'child' | 'inline'
  /** Connections of the baseline's pg.Pool; the hub's own pool has 10. */
  pgPoolSize: number
  /** BATON_MAX_BATCH for the hub. */
  maxBatch: number | undefined
}

/** One timed pass: every item moved one step. */
interface Sample {
  load: LoadResult
  /** Mean writes per committed transaction during the pass (Baton only). */
  batchMean?: number
  /** Statements the hub's database ran per move during the pass (Baton only). */
  statementsPerMove?: number
  /** CPU µs per move during the pass: the whole process, its main thread, the SQLite writer thread. */
  cpuUs: number
  mainUs?: number
  writerUs?: number
}

/** A server under test: seeds items ready to move, moves them, checks where they ended. */
interface Target {
  name: 'baseline' | 'baton'
  url: string
  /** Makes `n` fresh items in their first state and answers the two passes of move requests. */
  prepare(n: number): Promise<{ passes: LoadRequest[][]; verify(): Promise<void> }>
  batchCounter?(): Promise<{ sum: number; count: number; statements: number }>
  /** CPU µs the hub's SQLite writer thread has run, where it has one and the system tells. */
  writerCpu?(): Promise<number | undefined>
  stop(): Promise<void>
}

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)

function options(opts: Partial<MoveOptions>): MoveOptions {
  return {
    stores: opts.stores ??
      (env.BENCH_STORES?.split(',') as Store[] | undefined) ?? ['sqlite', 'postgres'],
    handoffs: opts.handoffs ?? intEnv('BENCH_HANDOFFS', 2000),
    concurrency: opts.concurrency ?? intEnv('BENCH_CONCURRENCY', 64),
    rounds: opts.rounds ?? intEnv('BENCH_ROUNDS', 3),
    client: opts.client ?? (env.BENCH_CLIENT === 'inline' ? 'inline' : 'child'),
    pgPoolSize: opts.pgPoolSize ?? intEnv('BENCH_PG_POOL', 10),
    maxBatch: opts.maxBatch ?? (env.BENCH_MAX_BATCH ? Number(env.BENCH_MAX_BATCH) : undefined),
  }
}

const log = (msg: string) => process.stderr.write(`[handoff-moves] ${msg}\n`)
const newId = () => randomBytes(16).toString('base64url')
const STEPS = [
  ['offered', 'accepted'],
  ['accepted', 'working'],
] as const

/** The bare baseline: one route, one UPDATE, one commit per request. */
async function startBaseline(
  store: Store,
  where: { dir: string; url: string | undefined },
  poolSize: number,
): Promise<Target> {
  let update: (id: string, to: string, version: number) => Promise<number>
  let seed: (ids: string[]) => Promise<void>
  let count: (ids: string[], state: string, version: number) => Promise<number>
  let close: () => Promise<void>
  if (store === 'sqlite') {
    const db = new SQLite(path.join(where.dir, 'baseline.sqlite'))
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    db.exec(
      'create table items (id text primary key, state text not null, version integer not null)',
    )
    const move = db.prepare(
      'update items set state = ?, version = version + 1 where id = ? and version = ?',
    )
    const insert = db.prepare("insert into items (id, state, version) values (?, 'offered', 1)")
    const seedAll = db.transaction((ids: string[]) => {
      for (const id of ids) insert.run(id)
    })
    update = async (id, to, version) => move.run(to, id, version).changes
    seed = async (ids) => seedAll(ids)
    count = async (ids, state, version) => {
      const sel = db.prepare(
        'select count(*) as n from items where id = ? and state = ? and version = ?',
      )
      let n = 0
      for (const id of ids) n += (sel.get(id, state, version) as { n: number }).n
      return n
    }
    close = async () => {
      db.close()
    }
  } else {
    const pool = new pg.Pool({ connectionString: where.url, max: poolSize })
    // An idle client's error (the server stopping) is not a bench failure; queries still reject.
    pool.on('error', () => {})
    await pool.query('drop table if exists bench_items')
    await pool.query(
      'create table bench_items (id text primary key, state text not null, version integer not null)',
    )
    update = async (id, to, version) =>
      (
        await pool.query(
          'update bench_items set state = $1, version = version + 1 where id = $2 and version = $3',
          [to, id, version],
        )
      ).rowCount ?? 0
    seed = async (ids) => {
      await pool.query(
        "insert into bench_items (id, state, version) select unnest($1::text[]), 'offered', 1",
        [ids],
      )
    }
    count = async (ids, state, version) =>
      Number(
        (
          await pool.query(
            'select count(*) as n from bench_items where id = any($1::text[]) and state = $2 and version = $3',
            [ids, state, version],
          )
        ).rows[0].n,
      )
    close = async () => {
      await pool.query('drop table if exists bench_items')
      await pool.end()
    }
  }

  const app: FastifyInstance = Fastify({ logger: false })
  app.post('/move/:id', async (req, reply) => {
    const { id } = req.params as { id: string }
    const { to, version } = req.body as { to: string; version: number }
    if ((await update(id, to, version)) !== 1) return reply.code(409).send({ error: 'conflict' })
    return { id, state: to, version: version + 1 }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const addr = app.server.address()
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`
  return {
    name: 'baseline',
    url,
    async prepare(n) {
      const ids = Array.from({ length: n }, newId)
      await seed(ids)
      const passes = STEPS.map(([, to], step) =>
        ids.map((id) => ({
          method: 'POST',
          path: `/move/${id}`,
          body: JSON.stringify({ to, version: step + 1 }),
        })),
      )
      return {
        passes,
        async verify() {
          const done = await count(ids, 'working', 3)
          if (done !== n)
            throw new Error(`baseline ${store}: ${done}/${n} items ended in working v3`)
        },
      }
    },
    async stop() {
      await app.close()
      await close()
    },
  }
}

/** The Baton hub on the same store, its handoffs created over HTTP (untimed) before each round. */
async function startBaton(
  store: Store,
  where: { dir: string; url: string | undefined },
  opts: MoveOptions,
  client: LoadClient,
): Promise<Target> {
  const hub: RunningHub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: path.join(where.dir, 'hub'),
      BATON_LOG_LEVEL: 'silent',
      BATON_HANDOFF_DAILY_QUOTA: '1000000000',
      ...(store === 'postgres'
        ? { DATABASE_URL: where.url, BATON_HUB_KEY_SECRET: 'the hub key secret of benchmark hubs' }
        : {}),
      ...(opts.maxBatch ? { BATON_MAX_BATCH: String(opts.maxBatch) } : {}),
    }),
  )
  const db = hub.ctx.database.db
  const counts = countStatements(hub.ctx.database)
  return {
    name: 'baton',
    url: hub.url,
    async prepare(n) {
      const created = await client.run({
        origin: hub.url,
        concurrency: opts.concurrency,
        keepBodies: true,
        requests: Array.from({ length: n }, (_, i) => ({
          method: 'POST',
          path: '/services/v1/handoff',
          body: JSON.stringify({ payload: { task: 'bench', n: i } }),
        })),
      })
      assertAllAnswered(`baton ${store} create`, created, 201)
      const handoffs = created.bodies!.map(
        (b) => JSON.parse(b) as { handoff_id: string; receiver_token: string },
      )
      const ids = handoffs.map((h) => h.handoff_id)
      const passes = STEPS.map(([from, to]) =>
        handoffs.map((h) => ({
          method: 'POST',
          path: `/services/v1/handoff/${h.handoff_id}/${to}`,
          headers: { authorization: `Bearer ${h.receiver_token}` },
          body: JSON.stringify({ from }),
        })),
      )
      return {
        passes,
        async verify() {
          const row = await db
            .selectFrom('handoffs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('id', 'in', ids)
            .where('state', '=', 'working')
            .where('version', '=', 3)
            .executeTakeFirstOrThrow()
          const moves = await db
            .selectFrom('handoff_moves')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('handoff_id', 'in', ids)
            .executeTakeFirstOrThrow()
          if (Number(row.n) !== n || Number(moves.n) !== 2 * n) {
            throw new Error(
              `baton ${store}: ${row.n}/${n} handoffs in working v3, ${moves.n}/${2 * n} history rows`,
            )
          }
        },
      }
    },
    async batchCounter() {
      const m = await hub.ctx.metrics.batchSize.get()
      const pick = (suffix: string) =>
        m.values.find((v) => v.metricName === `baton_write_batch_size_${suffix}`)?.value ?? 0
      return { sum: pick('sum'), count: pick('count'), statements: counts.statements }
    },
    writerCpu: hub.ctx.database.writerCpuMicros,
    async stop() {
      await hub.stop()
    },
  }
}

/**
 * CPU µs this thread has run (Linux: its schedstat); undefined where the system does not tell.
 * The bench runs both servers in this process, so this is their event loop's thread.
 */
function threadCpuUs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1000
  } catch {
    return undefined
  }
}

/** Times one pass (every item moved one step) on a target; all must answer 200. */
async function pass(
  target: Target,
  client: LoadClient,
  requests: LoadRequest[],
  c: number,
): Promise<Sample> {
  const before = await target.batchCounter?.()
  const writerBefore = await target.writerCpu?.()
  // Both servers share this process and take turns, so the process's CPU over a pass is the
  // CPU of the server being timed (the load client is another process).
  const cpuBefore = process.cpuUsage()
  const mainBefore = threadCpuUs()
  const load = await client.run({ origin: target.url, concurrency: c, requests })
  const cpu = process.cpuUsage(cpuBefore)
  const mainAfter = threadCpuUs()
  const writerAfter = await target.writerCpu?.()
  assertAllAnswered(`${target.name} move`, load, 200)
  const after = await target.batchCounter?.()
  const n = requests.length
  const sample: Sample = { load, cpuUs: (cpu.user + cpu.system) / n }
  if (mainBefore !== undefined && mainAfter !== undefined)
    sample.mainUs = (mainAfter - mainBefore) / n
  if (writerBefore !== undefined && writerAfter !== undefined)
    sample.writerUs = (writerAfter - writerBefore) / n
  if (before && after && after.count > before.count) {
    sample.batchMean = (after.sum - before.sum) / (after.count - before.count)
  }
  if (before && after)
    sample.statementsPerMove = (after.statements - before.statements) / requests.length
  return sample
}

/**
 * One round: `n` fresh items on each target, then each pass timed on both targets back to back
 * (alternating who goes first), so every Baton sample has a baseline sample taken moments apart.
 */
async function round(
  targets: Target[],
  client: LoadClient,
  opts: MoveOptions,
  r: number,
): Promise<Record<Target['name'], Sample[]>> {
  const prepared = []
  for (const t of targets) prepared.push({ t, ...(await t.prepare(opts.handoffs)) })
  const samples: Record<Target['name'], Sample[]> = { baseline: [], baton: [] }
  for (let step = 0; step < STEPS.length; step++) {
    const order = (r + step) % 2 === 0 ? prepared : [...prepared].reverse()
    for (const p of order) {
      samples[p.t.name].push(await pass(p.t, client, p.passes[step]!, opts.concurrency))
    }
  }
  for (const p of prepared) await p.verify()
  return samples
}

/** Median fsync time of a 4 KiB write in `dir`, in milliseconds: what one durable commit costs. */
function probeFsync(dir: string, times = 100): number {
  const fd = openSync(path.join(dir, 'fsync-probe'), 'w')
  const block = Buffer.alloc(4096, 1)
  const ms: number[] = []
  try {
    for (let i = 0; i < times; i++) {
      writeSync(fd, block, 0, block.length, (i % 16) * 4096)
      const started = performance.now()
      fsyncSync(fd)
      ms.push(performance.now() - started)
    }
  } finally {
    closeSync(fd)
  }
  return median(ms)
}

async function benchStore(store: Store, opts: MoveOptions, client: LoadClient): Promise<Result> {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-bench-'))
  let pgServer: { url: string; stop: () => Promise<void> } | undefined
  let url = env.DATABASE_URL
  if (store === 'postgres' && !url) {
    const { startPostgres } = await import('../scripts/postgres.js')
    pgServer = await startPostgres()
    url = pgServer.url
  }
  const targets: Target[] = []
  try {
    targets.push(await startBaseline(store, { dir, url }, opts.pgPoolSize))
    targets.push(await startBaton(store, { dir, url }, opts, client))
    // Warm both servers (JIT, connections, page cache) before anything is timed.
    await round(targets, client, { ...opts, handoffs: Math.min(500, opts.handoffs) }, 0)
    const fsyncBefore = probeFsync(dir)
    const samples: Record<Target['name'], Sample[]> = { baseline: [], baton: [] }
    // The machine may be shared: the 1-minute load average after each round, printed beside.
    const loads: number[] = []
    for (let r = 0; r < opts.rounds; r++) {
      const got = await round(targets, client, opts, r)
      loads.push(loadavg()[0]!)
      for (const t of targets) {
        samples[t.name].push(...got[t.name])
        log(
          `${store} round ${r + 1}/${opts.rounds} ${t.name}: ` +
            got[t.name].map((s) => `${Math.round(s.load.perSecond)}/s`).join(', ') +
            (got[t.name][0]?.batchMean
              ? ` (mean batch ${got[t.name].map((s) => s.batchMean?.toFixed(1)).join(', ')})`
              : '') +
            ` cpu µs/move ${got[t.name].map((s) => s.cpuUs.toFixed(0)).join(', ')}`,
        )
      }
    }
    const fsyncMs = median([fsyncBefore, probeFsync(dir)])
    const med = (name: Target['name'], f: (s: Sample) => number | undefined) =>
      median(samples[name].map(f).filter((v): v is number => v !== undefined))
    const ratios = samples.baton.map(
      (s, i) => s.load.perSecond / samples.baseline[i]!.load.perSecond,
    )
    const rows = (['baseline', 'baton'] as const).map((name) => ({
      store,
      server: name,
      'moves/s': med(name, (s) => s.load.perSecond),
      'p50 ms': med(name, (s) => s.load.p50),
      'p99 ms': med(name, (s) => s.load.p99),
      'mean batch': name === 'baton' ? med(name, (s) => s.batchMean) : 1,
      'statements/move': name === 'baton' ? med(name, (s) => s.statementsPerMove) : 1,
      'cpu µs/move': med(name, (s) => s.cpuUs),
      'main µs/move': med(name, (s) => s.mainUs),
      'writer µs/move': med(name, (s) => s.writerUs),
      samples: samples[name].length,
    }))
    printTable(Object.keys(rows[0]!), rows)
    return {
      name: `handoff moves, ${store}, c=${opts.concurrency}`,
      baseline: rows[0]!['moves/s'],
      value: rows[1]!['moves/s'],
      ratio: median(ratios),
      unit: 'moves/s',
      detail: {
        baseline_p50_ms: rows[0]!['p50 ms'],
        baseline_p99_ms: rows[0]!['p99 ms'],
        baton_p50_ms: rows[1]!['p50 ms'],
        baton_p99_ms: rows[1]!['p99 ms'],
        // NaN when the hub recorded no batches (its metrics changed); JSON writes it as null.
        baton_mean_batch: rows[1]!['mean batch'],
        baton_statements_per_move: rows[1]!['statements/move'],
        // CPU per move over the timed passes: the whole process, its event-loop thread, and the
        // hub's SQLite writer thread (NaN where there is none or the system does not tell).
        baseline_cpu_us_per_move: rows[0]!['cpu µs/move'],
        baseline_main_us_per_move: rows[0]!['main µs/move'],
        baton_cpu_us_per_move: rows[1]!['cpu µs/move'],
        baton_main_us_per_move: rows[1]!['main µs/move'],
        baton_writer_us_per_move: rows[1]!['writer µs/move'],
        fsync_p50_ms: fsyncMs,
        loadavg_1m: median(loads),
        samples: ratios.length,
        ratio_min: Math.min(...ratios),
        ratio_max: Math.max(...ratios),
      },
    }
  } finally {
    for (const t of targets.reverse()) await t.stop().catch((e) => log(`stop ${t.name}: ${e}`))
    if (pgServer) await pgServer.stop()
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Times `offered -> accepted -> working` for many handoffs at once, per store, beside the bare
 * one-commit-per-request baseline. `ratio` is the median of per-pass ratios (Baton / baseline).
 */
export async function run(opts: Partial<MoveOptions> = {}): Promise<Result[]> {
  const o = options(opts)
  const client = await startLoadClient(o.client)
  log(
    `${o.handoffs} handoffs x 2 passes, concurrency ${o.concurrency}, ${o.rounds} rounds, ` +
      `load client ${client.where}, stores ${o.stores.join(',')}`,
  )
  try {
    const results: Result[] = []
    for (const store of o.stores) results.push(await benchStore(store, o, client))
    return results
  } finally {
    await client.close()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printResults(await run())
}
