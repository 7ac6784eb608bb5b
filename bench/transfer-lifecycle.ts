// Session transfers (seed 004) at the service level, on one PostgreSQL: Baton's transfer service
// called directly (no HTTP, no signatures) beside the seed's reference implementation called the
// same way, 16 workers and a pool of 16 each, interleaved rounds. Figures: full lifecycles per
// second (snapshot, provision token, provision, claim, push, activate token, activate, one usage
// report that exhausts the budget), usage reports per second on active transfers, status reads
// per second; and what each side's lifecycles cost its database: statements and commits counted
// at the pg client, the CPU of its PostgreSQL backends, and the rows its sequential scans read.
//
// Rounds are timed, not counted, and no side's tables are ever emptied: each side's tables keep
// every transfer, event, token and report its rounds made, as a hub's do, so a statement whose
// cost grows with a table shows as a figure that falls (and a CPU per lifecycle that rises) from
// one round to the next. Both sides are treated alike: the same phases for the same time.
//
// The reference runs only when BENCH_REFERENCE_DIR names a checkout of it; its service functions
// are loaded from there unchanged and given a node-postgres drizzle database whose `batch([...])`
// runs its queries in one transaction (its own driver is Neon's HTTP one). drizzle-orm is
// installed on demand into node_modules/.cache, outside the lock file.
// Run alone: node --import tsx bench/transfer-lifecycle.ts
import { AsyncLocalStorage } from 'node:async_hooks'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { register } from 'node:module'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { canonicalJson } from '@baton/protocol'
import pg from 'pg'
import pino from 'pino'
import { systemClock } from '../packages/hub/src/clock.js'
import { loadConfig } from '../packages/hub/src/config.js'
import { PgEventBus } from '../packages/hub/src/events/pg-bus.js'
import { WaitRegistry } from '../packages/hub/src/events/wait.js'
import { openDatabase } from '../packages/hub/src/store/database.js'
import { WriteBatcher } from '../packages/hub/src/store/transaction.js'
import { checksumOfCanonical, TransferService } from '../packages/hub/src/transfers/service.js'
import { TokenKeyring } from '../packages/hub/src/transfers/tokens.js'
import { startPostgres } from '../scripts/postgres.js'
import { median, printResults, type Result } from './lib.js'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)

const options = {
  workers: intEnv('BENCH_TRANSFER_WORKERS', 16),
  pool: intEnv('BENCH_TRANSFER_POOL', 16),
  /** How long each side runs lifecycles in a round. */
  lifecycleMs: intEnv('BENCH_TRANSFER_ROUND_MS', 15_000),
  /** How long each side runs usage reports, then status reads, in a round. */
  phaseMs: intEnv('BENCH_TRANSFER_PHASE_MS', 5_000),
  rounds: Math.max(5, intEnv('BENCH_ROUNDS', 5)),
  reference: env.BENCH_REFERENCE_DIR,
}

const repoRoot = fileURLToPath(new URL('..', import.meta.url))
const cache = path.join(repoRoot, 'node_modules/.cache/baton-bench-reference')
const DRIZZLE = 'drizzle-orm@0.36.4'

/** Runs tasks on `workers` workers until `ms` have passed; answers how many and per second. */
async function forDuration(ms: number, workers: number, task: (i: number) => Promise<unknown>) {
  let next = 0
  let done = 0
  const started = performance.now()
  const deadline = started + ms
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < deadline) {
        await task(next++)
        done++
      }
    }),
  )
  return { done, perSecond: (done / (performance.now() - started)) * 1000 }
}

/** The CPU time, in ms, of the PostgreSQL backends serving `database`, by process id. */
async function backendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = $1',
    [database],
  )
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    try {
      // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 a second).
      const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ')
      cpu.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / 100)
    } catch {
      // A backend that ended, or a server on another machine: its CPU is not read.
    }
  }
  return cpu
}

/** CPU ms the backends spent between two readings; a backend that started since counts whole. */
function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ms = 0
  for (const [pid, t] of after) ms += t - (before.get(pid) ?? 0)
  return ms
}

/** Rows read by sequential scans, and scans made, over the tables of the connected database. */
async function seqScans(client: pg.Client): Promise<{ scans: number; rows: number }> {
  const { rows } = await client.query<{ scans: string; rows: string }>(
    'select coalesce(sum(seq_scan), 0) as scans, coalesce(sum(seq_tup_read), 0) as rows from pg_stat_user_tables',
  )
  return { scans: Number(rows[0]!.scans), rows: Number(rows[0]!.rows) }
}

// Statements and commits per database, counted at every pg client of this process. A commit is
// an explicit COMMIT or a write sent outside a transaction (which commits on its own).
const counts = new Map<string, { statements: number; commits: number }>()
const inTx = new WeakSet<object>()
const uncounted = new WeakSet<object>()
function countStatements(): void {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
  const original = proto.query
  proto.query = function (this: pg.Client, ...args: unknown[]) {
    if (uncounted.has(this)) return original.apply(this, args)
    const first = args[0]
    const text =
      typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '')
    const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? ''
    const db = this.database ?? ''
    const c = counts.get(db) ?? { statements: 0, commits: 0 }
    counts.set(db, c)
    if (verb === 'begin') inTx.add(this)
    else if (verb === 'commit' || verb === 'rollback') {
      inTx.delete(this)
      if (verb === 'commit') c.commits++
    } else if (!inTx.has(this) && verb !== 'listen' && !/^select\b(?!.*pg_notify)/is.test(text)) {
      c.commits++
    }
    if (verb !== 'listen') c.statements++
    return original.apply(this, args)
  }
}
const snapshotCounts = (db: string) => ({ ...(counts.get(db) ?? { statements: 0, commits: 0 }) })

async function createDatabase(adminUrl: string, prefix: string) {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    },
  }
}

/** A connection to a side's database for reading its statistics, kept out of the counts. */
async function statsClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  uncounted.add(client)
  return client
}

async function countRows(client: pg.Client, table: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${table}`)
  return Number(rows[0]!.n)
}

const snapshot = (i: number) => ({
  systemPrompt: 'You resume the job.',
  messages: [
    { role: 'user' as const, content: `task ${i}` },
    { role: 'assistant' as const, content: [{ type: 'text', text: 'working' }] },
  ],
  toolState: { progress: { step: i } },
  mcpConfig: { servers: [{ name: 'docs', env: { TOKEN: { credRef: 'env://DOCS_TOKEN' } } }] },
})

/** One side of the comparison: the same four operations, however each implements them. */
interface Side {
  label: string
  database: string
  /** A connection of the side's own, for its database's statistics (not counted). */
  stats: pg.Client
  /** How many transfers the side's tables hold. */
  transfers(): Promise<number>
  lifecycle(i: number): Promise<void>
  /** Active transfers with a budget that never runs out, one per worker. */
  prepareActive(n: number): Promise<void>
  report(i: number): Promise<void>
  status(i: number): Promise<void>
  close(): Promise<void>
}

async function batonSide(adminUrl: string): Promise<Side> {
  const created = await createDatabase(adminUrl, 'baton_bench_tl')
  const log = pino({ level: 'silent' })
  const config = loadConfig({
    BATON_DATA_DIR: await mkdtemp(path.join(tmpdir(), 'baton-bench-tl-')),
    BATON_LOG_LEVEL: 'silent',
  })
  const database = await openDatabase({
    databaseUrl: created.url,
    dataDir: config.dataDir,
    poolSize: options.pool,
    log,
  })
  const batcher = new WriteBatcher(
    database,
    config.maxBatch,
    undefined,
    database.caps.writeConcurrency,
  )
  const bus = await PgEventBus.connect(created.url, log)
  const waits = new WaitRegistry(bus, new Promise<void>(() => {}), config.waits)
  const service = new TransferService({
    database,
    batcher,
    clock: systemClock,
    bus,
    config: config.transfer,
    keyring: new TokenKeyring([{ kid: 'k1', secret: randomBytes(32) }]),
    log,
    waits,
  })
  const owner = 'did:key:bench-owner'
  const runtime = 'did:key:bench-runtime'
  const budget = { tier: 'standard', budgetMicros: 1000, rateMicrosPerSecond: 10 }
  const big = { tier: 'large', budgetMicros: 1_000_000_000, rateMicrosPerSecond: 10 }
  const start = async (i: number, b: typeof budget) => {
    const s = snapshot(i)
    const { transferId: id } = await service.create(owner, { snapshot: s })
    const { token } = await service.mint(id, { scope: 'provision', ...b })
    await service.provision(owner, id, { ...b, token })
    await service.claim(runtime, id)
    await service.push(runtime, id, { checksum: checksumOfCanonical(canonicalJson(s)) })
    const { token: act } = await service.mint(id, { scope: 'activate' })
    await service.activate(owner, id, { token: act })
    return id
  }
  const active: string[] = []
  let seq = 0
  const stats = await statsClient(created.url)
  return {
    label: 'Baton',
    database: created.name,
    stats,
    transfers: () => countRows(stats, 'transfers'),
    async lifecycle() {
      const i = seq++
      const id = await start(i, budget)
      const used = await service.usage(runtime, id, {
        idempotencyKey: `u-${i}`,
        amountMicros: 1000,
      })
      if (used.state !== 'insolvent') throw new Error(`lifecycle ended ${used.state}`)
    },
    async prepareActive(n) {
      for (let w = 0; w < n; w++) active.push(await start(-w - 1, big))
    },
    async report(i) {
      await service.usage(runtime, active[i % active.length]!, {
        idempotencyKey: `r-${seq++}`,
        amountMicros: 1,
      })
    },
    async status(i) {
      await service.get(owner, active[i % active.length]!)
    },
    async close() {
      await stats.end()
      await batcher.flush()
      await bus.close()
      await database.close()
      await rm(config.dataDir, { recursive: true, force: true })
      await created.drop()
    },
  }
}

/** Installs drizzle-orm into the bench cache once; answers the folder it resolves from. */
async function drizzleHome(): Promise<string> {
  if (existsSync(path.join(repoRoot, 'node_modules/drizzle-orm/package.json'))) return repoRoot
  if (!existsSync(path.join(cache, 'node_modules/drizzle-orm/package.json'))) {
    mkdirSync(cache, { recursive: true })
    process.stderr.write(`  installing ${DRIZZLE} into ${path.relative(repoRoot, cache)}\n`)
    await promisify(execFile)(
      'npm',
      ['install', '--prefix', cache, '--no-audit', '--no-fund', '--no-save', DRIZZLE],
      { timeout: 300_000 },
    )
  }
  return cache
}

/**
 * The reference, unchanged, on node-postgres: its `drizzle-orm` imports resolve from the bench
 * cache, and its `db.batch([...])` (a Neon HTTP transaction) becomes one pg transaction.
 */
async function referenceSide(adminUrl: string, dir: string): Promise<Side> {
  const home = await drizzleHome()
  const hook = `
    const home = ${JSON.stringify(`${pathToFileURL(home).href}/`)};
    const ref = ${JSON.stringify(pathToFileURL(path.resolve(dir)).href)};
    export async function resolve(specifier, context, next) {
      if ((specifier === 'drizzle-orm' || specifier.startsWith('drizzle-orm/')) &&
          context.parentURL?.startsWith(ref)) {
        return next(specifier, { ...context, parentURL: home + 'index.js' })
      }
      return next(specifier, context)
    }`
  register(`data:text/javascript,${encodeURIComponent(hook)}`)
  const core = path.resolve(dir, 'packages/core')
  const created = await createDatabase(adminUrl, 'ref_bench_tl')
  const migrations = (await readdir(path.join(core, 'drizzle')))
    .filter((f) => f.endsWith('.sql'))
    .sort()
  const setup = new pg.Client({ connectionString: created.url })
  await setup.connect()
  for (const file of migrations) {
    const text = await readFile(path.join(core, 'drizzle', file), 'utf8')
    for (const statement of text.split('--> statement-breakpoint')) {
      if (statement.trim()) await setup.query(statement)
    }
  }
  await setup.end()

  const pool = new pg.Pool({ connectionString: created.url, max: options.pool })
  const inBatch = new AsyncLocalStorage<pg.PoolClient>()
  // Not a pg.Pool to drizzle, so it sends every query here; inside a batch, to its client.
  const client = {
    query: (...args: unknown[]) =>
      (inBatch.getStore() ?? pool).query(...(args as Parameters<pg.Pool['query']>)),
  }
  const { drizzle } = (await import(
    pathToFileURL(path.join(home, 'node_modules/drizzle-orm/node-postgres/index.js')).href
  )) as { drizzle: (client: unknown, config: unknown) => Record<string, unknown> }
  const schema = await import(pathToFileURL(path.join(core, 'src/schema.ts')).href)
  const db = drizzle(client, { schema })
  db.batch = async (queries: PromiseLike<unknown>[]) => {
    const conn = await pool.connect()
    try {
      await conn.query('begin')
      const results = await inBatch.run(conn, async () => {
        const out: unknown[] = []
        for (const q of queries) out.push(await q)
        return out
      })
      await conn.query('commit')
      return results
    } catch (error) {
      await conn.query('rollback').catch(() => {})
      throw error
    } finally {
      conn.release()
    }
  }
  type Fn = (...args: unknown[]) => Promise<Record<string, unknown>>
  const svc = (await import(pathToFileURL(path.join(core, 'src/service.ts')).href)) as Record<
    string,
    Fn
  >
  const auth = (await import(pathToFileURL(path.join(core, 'src/auth.ts')).href)) as Record<
    string,
    (...args: unknown[]) => string
  >
  const secret = randomBytes(32).toString('base64url')
  const history = (i: number) => [
    { role: 'user', content: `task ${i}` },
    { role: 'assistant', content: 'working' },
  ]
  const start = async (i: number, allocatedUsd: number) => {
    const t = await svc.snapshotState!(db, {
      sourceHost: 'bench',
      systemPrompt: 'You resume the job.',
      messageHistory: history(i),
      toolState: { progress: { step: i } },
      mcpConfig: [{ server: 'docs', credRef: 'env://DOCS_TOKEN' }],
    })
    const id = t.id as string
    const token = auth.issueTransferToken!(id, 'provision_runtime', secret)
    await svc.provisionRuntime!(
      db,
      { transferId: id, tier: 'sandbox-medium', allocatedUsd, ratePerHourUsd: 0.25, token },
      secret,
    )
    await svc.pushState!(db, id, svc.computeSnapshotChecksum!(history(i)))
    await svc.activate!(db, id, auth.issueTransferToken!(id, 'activate', secret), secret)
    return id
  }
  const active: string[] = []
  let seq = 0
  const stats = await statsClient(created.url)
  return {
    label: 'reference',
    database: created.name,
    stats,
    transfers: () => countRows(stats, 'transfers'),
    async lifecycle() {
      const id = await start(seq++, 0.001)
      const status = await svc.reportUsage!(db, { transferId: id, costUsd: 0.001 })
      const state = (status.transfer as { status: string }).status
      if (state !== 'insolvent') throw new Error(`reference lifecycle ended ${state}`)
    },
    async prepareActive(n) {
      for (let w = 0; w < n; w++) active.push(await start(-w - 1, 100_000))
    },
    async report(i) {
      await svc.reportUsage!(db, { transferId: active[i % active.length]!, costUsd: 0.000001 })
    },
    async status(i) {
      await svc.getStatus!(db, active[i % active.length]!)
    },
    async close() {
      await stats.end()
      await pool.end()
      await created.drop()
    },
  }
}

/** What one round measured of one side. */
interface Round {
  lifecycles: number
  reports: number
  reads: number
  statements: number
  commits: number
  /** PostgreSQL backend CPU per lifecycle, ms (NaN when the server's processes are not local). */
  cpuMs: number
  /** Rows read by sequential scans per lifecycle (from the statistics, which lag by a second). */
  seqRows: number
  /** Transfers the side's tables hold at the round's end. */
  transfers: number
}

/** The scenario: medians of interleaved rounds (reference, Baton, reference, Baton, …). */
export async function run(): Promise<Result[]> {
  countStatements()
  let started: { url: string; stop: () => Promise<void> } | undefined
  let adminUrl = env.DATABASE_URL
  if (!adminUrl) {
    started = await startPostgres()
    adminUrl = started.url
  }
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  uncounted.add(admin)
  const sides: Side[] = []
  try {
    if (options.reference) sides.push(await referenceSide(adminUrl, options.reference))
    else process.stderr.write('  BENCH_REFERENCE_DIR unset: the reference rows are skipped\n')
    sides.push(await batonSide(adminUrl))
    for (const side of sides) {
      await side.prepareActive(options.workers)
      await forDuration(1000, options.workers, side.lifecycle)
    }
    const rounds = new Map<Side, Round[]>(sides.map((s) => [s, []]))
    for (let round = 0; round < options.rounds; round++) {
      const now = new Map<Side, Round>()
      for (const side of sides) {
        const seqBefore = await seqScans(side.stats)
        const cpuBefore = await backendCpu(admin, side.database)
        const before = snapshotCounts(side.database)
        const done = await forDuration(options.lifecycleMs, options.workers, side.lifecycle)
        const after = snapshotCounts(side.database)
        const cpu = cpuBetween(cpuBefore, await backendCpu(admin, side.database))
        const seqAfter = await seqScans(side.stats)
        now.set(side, {
          lifecycles: done.perSecond,
          reports: 0,
          reads: 0,
          statements: (after.statements - before.statements) / done.done,
          commits: (after.commits - before.commits) / done.done,
          cpuMs: cpuBefore.size > 0 && cpu > 0 ? cpu / done.done : Number.NaN,
          seqRows: (seqAfter.rows - seqBefore.rows) / done.done,
          transfers: 0,
        })
      }
      for (const side of sides) {
        now.get(side)!.reports = (
          await forDuration(options.phaseMs, options.workers, side.report)
        ).perSecond
      }
      for (const side of sides) {
        now.get(side)!.reads = (
          await forDuration(options.phaseMs, options.workers, side.status)
        ).perSecond
      }
      for (const side of sides) {
        now.get(side)!.transfers = await side.transfers()
        rounds.get(side)!.push(now.get(side)!)
      }
      process.stderr.write(
        `  round ${round + 1} (load ${loadavg()[0]!.toFixed(2)}): ${sides
          .map((s) => {
            const r = now.get(s)!
            return `${s.label} lifecycles ${r.lifecycles.toFixed(1)}/s (${r.cpuMs.toFixed(1)} ms PostgreSQL CPU, ${r.seqRows.toFixed(0)} rows seq-scanned each), reports ${r.reports.toFixed(0)}/s, reads ${r.reads.toFixed(0)}/s, ${r.transfers} transfers`
          })
          .join('; ')}\n`,
      )
    }
    const baton = sides.at(-1)!
    const ref = sides.length > 1 ? sides[0]! : undefined
    const of = (s: Side | undefined, k: keyof Round) => (s ? rounds.get(s)!.map((r) => r[k]) : [])
    const m = (s: Side | undefined, k: keyof Round) => (s ? median(of(s, k)) : Number.NaN)
    const list = (s: Side | undefined, k: keyof Round) =>
      s
        ? of(s, k)
            .map((v) => (Number.isFinite(v) ? Number(v.toFixed(1)) : 'n/a'))
            .join(' ')
        : 'skipped'
    const per = (s: Side | undefined, k: keyof Round) =>
      s ? Number(m(s, k).toFixed(1)) : 'skipped'
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
    const detail = {
      workers: options.workers,
      pool: options.pool,
      rounds: options.rounds,
      roundSeconds: options.lifecycleMs / 1000,
      loadAverage: load,
    }
    const row = (name: string, k: keyof Round, extra: Record<string, number | string> = {}) => ({
      name,
      baseline: m(ref, k),
      value: m(baton, k),
      // The median of each round's ratio: a round's two sides ran seconds apart, under one load.
      ratio: ref ? median(of(baton, k).map((v, i) => v / of(ref, k)[i]!)) : Number.NaN,
      unit: ref
        ? 'per s (baseline: the seed-004 reference, same PostgreSQL)'
        : 'per s (reference skipped)',
      detail: { ...detail, ...extra },
    })
    return [
      row('service-level transfer lifecycles (postgres)', 'lifecycles', {
        statementsPerLifecycle: per(baton, 'statements'),
        commitsPerLifecycle: per(baton, 'commits'),
        referenceStatementsPerLifecycle: per(ref, 'statements'),
        referenceCommitsPerLifecycle: per(ref, 'commits'),
        postgresCpuMsPerLifecycleByRound: list(baton, 'cpuMs'),
        referencePostgresCpuMsPerLifecycleByRound: list(ref, 'cpuMs'),
        seqScannedRowsPerLifecycleByRound: list(baton, 'seqRows'),
        referenceSeqScannedRowsPerLifecycleByRound: list(ref, 'seqRows'),
        lifecyclesPerSecondByRound: list(baton, 'lifecycles'),
        referenceLifecyclesPerSecondByRound: list(ref, 'lifecycles'),
        transfersAtEnd: of(baton, 'transfers').at(-1) ?? 0,
        referenceTransfersAtEnd: ref ? (of(ref, 'transfers').at(-1) ?? 0) : 'skipped',
      }),
      row('service-level transfer usage reports (postgres)', 'reports'),
      row('service-level transfer status reads (postgres)', 'reads'),
    ]
  } finally {
    for (const side of sides) await side.close().catch(() => {})
    await admin.end()
    await started?.stop()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
