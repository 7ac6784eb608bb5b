// Session transfers (seed 004) over signed HTTP: full lifecycles per second (snapshot, provision
// token, provision, claim, push, activate token, activate, one usage report that exhausts the
// budget) and usage reports per second on active transfers, each beside signed `GET /v1/me` per
// second measured in the same run on the same hub. Medians of 3 rounds. Beside them: statements
// and commits per lifecycle under load, and per step of one lifecycle run alone.
// Run alone: node --import tsx bench/transfers.ts

import { randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { pathToFileURL } from 'node:url'
import {
  createIdentity,
  SignedClient,
  snapshotChecksum,
  TransferAdminClient,
  TransferClient,
} from '@baton/client'
import { countStatements } from '../packages/hub/src/store/transaction.js'
import { perStore, type Store, startBenchHub } from './hub.js'
import { median, printResults, type Result } from './lib.js'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)
const ADMIN = `bench-${randomBytes(24).toString('hex')}`

const options = {
  stores: (env.BENCH_STORES ?? 'sqlite,postgres').split(',') as Store[],
  lifecycles: intEnv('BENCH_TRANSFER_LIFECYCLES', 40),
  reports: intEnv('BENCH_TRANSFER_REPORTS', 300),
  baseline: intEnv('BENCH_TRANSFER_BASELINE_REQUESTS', 300),
  concurrency: intEnv('BENCH_TRANSFER_CONCURRENCY', 8),
  rounds: intEnv('BENCH_ROUNDS', 3),
}

const snapshot = (i: number) => ({
  systemPrompt: 'You resume the job.',
  messages: [
    { role: 'user', content: `task ${i}` },
    { role: 'assistant', content: [{ type: 'text', text: 'working' }] },
  ],
  toolState: { progress: { step: i } },
  mcpConfig: { servers: [{ name: 'docs', env: { TOKEN: { credRef: 'env://DOCS_TOKEN' } } }] },
})

/** Runs `n` tasks, at most `concurrency` at once; answers tasks per second. */
async function throughput(n: number, concurrency: number, task: (i: number) => Promise<unknown>) {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await task(next++)
    }),
  )
  return (n / (performance.now() - started)) * 1000
}

/** This bench's hub on a store: PostgreSQL's on a database of its own on the server given. */
function hubFor(store: Store, postgres: string | undefined) {
  return startBenchHub(
    'transfers',
    {
      BATON_ADMIN_TOKEN: ADMIN,
      BATON_QUOTA_REQUESTS_PER_DAY: '100000000',
    },
    { postgres: store === 'postgres' ? postgres : undefined },
  )
}

async function measure(store: Store, pgUrl: string | undefined): Promise<Result[]> {
  const { hub, stop } = await hubFor(store, pgUrl)
  try {
    const discovery = `${hub.url}/.well-known/agent-net`
    const owner = await SignedClient.connect(discovery, createIdentity(hub.url))
    const runtime = await SignedClient.connect(discovery, createIdentity(hub.url))
    await owner.me()
    await runtime.me()
    const agent = new TransferClient(owner)
    const rt = new TransferClient(runtime)
    const orchestrator = new TransferAdminClient(hub.url, ADMIN)
    const budget = { tier: 'standard', budgetMicros: 1000, rateMicrosPerSecond: 10 }
    const counts = countStatements(hub.ctx.database)
    let seq = 0
    type Step = <T>(name: string, send: () => Promise<T>) => Promise<T>
    const direct: Step = (_name, send) => send()
    const lifecycle = async (step: Step = direct) => {
      const i = seq++
      const s = snapshot(i)
      const t = await step('snapshot', () => agent.snapshot(s))
      const id = t.transferId
      const { token } = await step('mint', () =>
        orchestrator.mint(id, { scope: 'provision', ...budget }),
      )
      await step('provision', () => agent.provision(id, { ...budget, token }))
      await step('claim', () => rt.claim(id))
      await step('push', () => rt.push(id, snapshotChecksum(s)))
      const { token: act } = await step('mint', () => orchestrator.mint(id, { scope: 'activate' }))
      await step('activate', () => agent.activate(id, act))
      const used = await step('usage', () =>
        rt.reportUsage(id, { idempotencyKey: `u-${i}`, amountMicros: 1000 }),
      )
      if (used.state !== 'insolvent') throw new Error(`lifecycle ended ${used.state}`)
    }
    /** Statements/commits of each step of one lifecycle run alone, e.g. `claim 7/1`. */
    const perStep: string[] = []
    await lifecycle(async (name, send) => {
      await hub.ctx.batcher.flush()
      const before = { ...counts }
      const value = await send()
      await hub.ctx.batcher.flush()
      perStep.push(
        `${name} ${counts.statements - before.statements}/${counts.commits - before.commits}`,
      )
      return value
    })
    // Active transfers with a budget that never runs out, one per worker.
    const big = { tier: 'large', budgetMicros: 1_000_000_000, rateMicrosPerSecond: 10 }
    const active: string[] = []
    for (let w = 0; w < options.concurrency; w++) {
      const s = snapshot(-w - 1)
      const id = (await agent.snapshot(s)).transferId
      await agent.provision(id, {
        ...big,
        token: (await orchestrator.mint(id, { scope: 'provision', ...big })).token,
      })
      await rt.claim(id)
      await rt.push(id, snapshotChecksum(s))
      await agent.activate(id, (await orchestrator.mint(id, { scope: 'activate' })).token)
      active.push(id)
    }
    let reportSeq = 0
    const report = async (i: number) => {
      const id = active[i % active.length]!
      await rt.reportUsage(id, { idempotencyKey: `r-${reportSeq++}`, amountMicros: 1 })
    }
    const me = () => owner.me()

    await throughput(20, options.concurrency, me)
    const base: number[] = []
    const lifecycles: number[] = []
    const reports: number[] = []
    const loaded = { statements: 0, commits: 0, lifecycles: 0 }
    for (let round = 0; round < options.rounds; round++) {
      base.push(await throughput(options.baseline, options.concurrency, me))
      await hub.ctx.batcher.flush()
      const before = { ...counts }
      lifecycles.push(await throughput(options.lifecycles, options.concurrency, () => lifecycle()))
      await hub.ctx.batcher.flush()
      loaded.statements += counts.statements - before.statements
      loaded.commits += counts.commits - before.commits
      loaded.lifecycles += options.lifecycles
      reports.push(await throughput(options.reports, options.concurrency, report))
      process.stderr.write(
        `  ${store} round ${round + 1}: me ${base.at(-1)!.toFixed(0)}/s, lifecycles ${lifecycles.at(-1)!.toFixed(1)}/s, reports ${reports.at(-1)!.toFixed(0)}/s, load ${loadavg()[0]!.toFixed(1)}\n`,
      )
    }
    const b = median(base)
    const l = median(lifecycles)
    const r = median(reports)
    return [
      {
        name: `transfer lifecycles (${store})`,
        baseline: b,
        value: l,
        ratio: l / b,
        unit: 'per s (baseline: signed GET /v1/me per s)',
        detail: {
          requestsPerLifecycle: 8,
          concurrency: options.concurrency,
          statementsPerLifecycle: (loaded.statements / loaded.lifecycles).toFixed(1),
          commitsPerLifecycle: (loaded.commits / loaded.lifecycles).toFixed(2),
          'alone (statements/commits)': perStep.join(', '),
          load: loadavg()
            .map((l) => l.toFixed(1))
            .join(' '),
        },
      },
      {
        name: `transfer usage reports (${store})`,
        baseline: b,
        value: r,
        ratio: r / b,
        unit: 'per s (baseline: signed GET /v1/me per s)',
        detail: { concurrency: options.concurrency },
      },
    ]
  } finally {
    await stop()
  }
}

/** The scenario: both stores, medians of `BENCH_ROUNDS` rounds. */
export function run(): Promise<Result[]> {
  return perStore(options.stores, measure)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
