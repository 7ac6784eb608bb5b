// Session transfers (seed 004) at the service level, on one PostgreSQL: Baton's transfer service
// called directly (no HTTP, no signatures) beside the seed's reference implementation called the
// same way, 16 workers and a pool of 16 each, interleaved rounds. Figures: full lifecycles per
// second (snapshot, provision token, provision, claim, push, activate token, activate, one usage
// report that exhausts the budget), usage reports per second on active transfers, status reads
// per second; and the statements and commits each side sends per lifecycle, counted at the pg
// client.
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
  lifecycles: intEnv('BENCH_TRANSFER_LIFECYCLES', 160),
  reports: intEnv('BENCH_TRANSFER_REPORTS', 800),
  reads: intEnv('BENCH_TRANSFER_READS', 1600),
  rounds: Math.max(5, intEnv('BENCH_ROUNDS', 7)),
  reference: env.BENCH_REFERENCE_DIR,
}

const repoRoot = fileURLToPath(new URL('..', import.meta.url))
const cache = path.join(repoRoot, 'node_modules/.cache/baton-bench-reference')
const DRIZZLE = 'drizzle-orm@0.36.4'

/** Runs `n` tasks on `workers` workers; answers tasks per second. */
async function throughput(n: number, workers: number, task: (i: number) => Promise<unknown>) {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(workers, n) }, async () => {
      while (next < n) await task(next++)
    }),
  )
  return (n / (performance.now() - started)) * 1000
}

// Statements and commits per database, counted at every pg client of this process. A commit is
// an explicit COMMIT or a write sent outside a transaction (which commits on its own).
const counts = new Map<string, { statements: number; commits: number }>()
const inTx = new WeakSet<object>()
function countStatements(): void {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
  const original = proto.query
  proto.query = function (this: pg.Client, ...args: unknown[]) {
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
  return {
    label: 'Baton',
    database: created.name,
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
  return {
    label: 'reference',
    database: created.name,
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
      await pool.end()
      await created.drop()
    },
  }
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
  const sides: Side[] = []
  try {
    if (options.reference) sides.push(await referenceSide(adminUrl, options.reference))
    else process.stderr.write('  BENCH_REFERENCE_DIR unset: the reference rows are skipped\n')
    sides.push(await batonSide(adminUrl))
    for (const side of sides) {
      await side.prepareActive(options.workers)
      await throughput(options.workers * 2, options.workers, (i) => side.lifecycle(i))
    }
    type Figures = { lifecycles: number[]; reports: number[]; reads: number[] }
    const figures = new Map<Side, Figures>(
      sides.map((s) => [s, { lifecycles: [], reports: [], reads: [] }]),
    )
    const perLifecycle = new Map<Side, { statements: number[]; commits: number[] }>(
      sides.map((s) => [s, { statements: [], commits: [] }]),
    )
    for (let round = 0; round < options.rounds; round++) {
      for (const side of sides) {
        const f = figures.get(side)!
        const before = snapshotCounts(side.database)
        f.lifecycles.push(await throughput(options.lifecycles, options.workers, side.lifecycle))
        const after = snapshotCounts(side.database)
        const p = perLifecycle.get(side)!
        p.statements.push((after.statements - before.statements) / options.lifecycles)
        p.commits.push((after.commits - before.commits) / options.lifecycles)
      }
      for (const side of sides) {
        figures
          .get(side)!
          .reports.push(await throughput(options.reports, options.workers, side.report))
      }
      for (const side of sides) {
        figures.get(side)!.reads.push(await throughput(options.reads, options.workers, side.status))
      }
      process.stderr.write(
        `  round ${round + 1} (load ${loadavg()[0]!.toFixed(2)}): ${sides
          .map((s) => {
            const f = figures.get(s)!
            return `${s.label} lifecycles ${f.lifecycles.at(-1)!.toFixed(1)}/s, reports ${f.reports.at(-1)!.toFixed(0)}/s, reads ${f.reads.at(-1)!.toFixed(0)}/s`
          })
          .join('; ')}\n`,
      )
    }
    const baton = sides.at(-1)!
    const ref = sides.length > 1 ? sides[0]! : undefined
    const m = (s: Side | undefined, k: keyof Figures) => (s ? median(figures.get(s)![k]) : NaN)
    const per = (s: Side | undefined, k: 'statements' | 'commits') =>
      s ? Number(median(perLifecycle.get(s)![k]).toFixed(1)) : 'skipped'
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')
    const detail = {
      workers: options.workers,
      pool: options.pool,
      rounds: options.rounds,
      loadAverage: load,
    }
    const row = (name: string, k: keyof Figures, extra: Record<string, number | string> = {}) => ({
      name,
      baseline: m(ref, k),
      value: m(baton, k),
      // The median of each round's ratio: a round's two sides ran seconds apart, under one load.
      ratio: ref
        ? median(figures.get(baton)![k].map((v, i) => v / figures.get(ref)![k][i]!))
        : Number.NaN,
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
      }),
      row('service-level transfer usage reports (postgres)', 'reports'),
      row('service-level transfer status reads (postgres)', 'reads'),
    ]
  } finally {
    for (const side of sides) await side.close().catch(() => {})
    await started?.stop()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
