// json-expr-v1 (the bounded compute language): evaluations per second of a small program through
// the worker pool (program and input checked, sent as JSON to a worker thread, evaluated under
// every bound, answered back) beside the raw evaluator in this thread, in the same run. The
// ratio is the price of isolation: what wall-time and memory bounds cost per evaluation.
//
//   node --import tsx bench/compute.ts
//   BENCH_ROUNDS=7 BENCH_EVALS=4000 BENCH_WORKERS=2 node --import tsx bench/compute.ts
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { SubmitComputeJobInput } from '@baton/protocol'
import pino from 'pino'
import { createApp } from '../packages/hub/src/app.js'
import { evaluateJsonExpr } from '../packages/hub/src/compute/json-expr.js'
import { createComputePool } from '../packages/hub/src/compute/pool.js'
import { loadConfig } from '../packages/hub/src/config.js'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const EVALS = Number(process.env.BENCH_EVALS ?? 4000)
const WORKERS = Number(process.env.BENCH_WORKERS ?? Math.min(2, os.availableParallelism()))
const JOBS = Number(process.env.BENCH_JOBS ?? 200)

// A pricing rule of the kind a handoff might carry: a discount for large orders of good customers.
const PROGRAM = {
  if: [
    {
      and: [
        { '>=': [{ var: 'order.total' }, 100] },
        { in: [{ var: 'customer.tier' }, ['gold', 'platinum']] },
      ],
    },
    { '*': [{ var: 'order.total' }, 0.9] },
    { var: 'order.total' },
  ],
}
const inputs = Array.from({ length: 64 }, (_, i) => ({
  order: { total: 50 + i * 3, lines: [{ sku: `s${i}`, qty: 1 + (i % 4) }] },
  customer: { tier: ['bronze', 'gold', 'platinum', 'silver'][i % 4] },
}))

/** Runs the scenario and answers its result row. */
export async function run(): Promise<Result[]> {
  const pool = createComputePool({ size: WORKERS, maxQueue: EVALS })
  await pool.ready()
  const raw = (): number => {
    const started = performance.now()
    for (let i = 0; i < EVALS; i++) evaluateJsonExpr(PROGRAM, inputs[i % inputs.length])
    return (EVALS / (performance.now() - started)) * 1000
  }
  const pooled = async (): Promise<number> => {
    const started = performance.now()
    const all: Promise<unknown>[] = []
    for (let i = 0; i < EVALS; i++) all.push(pool.evaluate(PROGRAM, inputs[i % inputs.length]))
    await Promise.all(all)
    return (EVALS / (performance.now() - started)) * 1000
  }
  // warm-up, not counted
  raw()
  await pooled()
  const raws: number[] = []
  const pools: number[] = []
  const ratios: number[] = []
  const loads: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // alternate which side goes first, so the load of a shared machine falls on both alike
    let r: number
    let p: number
    if (round % 2 === 0) {
      r = raw()
      p = await pooled()
    } else {
      p = await pooled()
      r = raw()
    }
    raws.push(r)
    pools.push(p)
    ratios.push(p / r)
    loads.push(os.loadavg()[0]!)
  }
  const stats = pool.stats()
  await pool.close()
  return [
    await jobs(),
    {
      name: `compute: json-expr-v1 through a ${WORKERS}-worker pool vs in-process`,
      baseline: median(raws),
      value: median(pools),
      ratio: median(ratios),
      unit: 'evals/s',
      detail: {
        ratioMin: Math.min(...ratios),
        ratioMax: Math.max(...ratios),
        loadavg1: median(loads),
        evalsPerRound: EVALS,
        rounds: ROUNDS,
        workersReplaced: stats.replaced,
      },
    },
  ]
}

/**
 * Compute jobs end to end in one hub on SQLite: submit (durable, quota-counted), claim by the
 * embedded runtime under a lease, evaluate on its pool, commit the result, answer the waiter;
 * beside the raw evaluator in the same run. The ratio is what durability and leases cost a job.
 */
async function jobs(): Promise<Result> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-bench-compute-'))
  // The hub's own timers are unref'd (its server holds the process open); nothing else does here.
  const keepAlive = setInterval(() => {}, 60_000)
  const ctx = await createApp(
    loadConfig({
      BATON_DATA_DIR: dir,
      BATON_LOG_LEVEL: 'silent',
      BATON_COMPUTE_WORKERS: String(WORKERS),
      BATON_QUOTA_COMPUTE_CONCURRENT: String(JOBS),
      BATON_QUOTA_COMPUTE_JOBS_PER_DAY: String(JOBS * (ROUNDS + 1)),
    }),
    { log: pino({ level: 'silent' }) },
  )
  const owner = 'did:key:z6MkbenchComputeJobsOwner'
  let key = 0
  const once = async (): Promise<number> => {
    const started = performance.now()
    await Promise.all(
      Array.from({ length: JOBS }, async (_, i) => {
        // The service takes what the operation parsed: the bench parses as the operation does.
        const body = SubmitComputeJobInput.parse({
          language: 'json-expr-v1',
          program: PROGRAM,
          input: inputs[i % inputs.length],
          idempotencyKey: `bench-job-${++key}`,
        })
        const job = await ctx.compute.submit(owner, body)
        let view = await ctx.compute.wait(owner, job.jobId, 25)
        while (view.state === 'queued' || view.state === 'running') {
          view = await ctx.compute.wait(owner, job.jobId, 25, view.version)
        }
      }),
    )
    return (JOBS / (performance.now() - started)) * 1000
  }
  const raw = (): number => {
    const started = performance.now()
    for (let i = 0; i < JOBS; i++) evaluateJsonExpr(PROGRAM, inputs[i % inputs.length])
    return (JOBS / (performance.now() - started)) * 1000
  }
  try {
    await once()
    const raws: number[] = []
    const runs: number[] = []
    const ratios: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const r = raw()
      const j = await once()
      raws.push(r)
      runs.push(j)
      ratios.push(j / r)
    }
    return {
      name: `compute: json-expr-v1 jobs (submit, claim, run, wait) on SQLite vs in-process`,
      baseline: median(raws),
      value: median(runs),
      ratio: median(ratios),
      unit: 'jobs/s',
      detail: { jobsPerRound: JOBS, rounds: ROUNDS, loadavg1: os.loadavg()[0]! },
    }
  } finally {
    clearInterval(keepAlive)
    await ctx.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Worker threads and the hub's timers are unref'd; hold the process open until the run ends.
  const keepAlive = setInterval(() => {}, 60_000)
  const results = await run()
  clearInterval(keepAlive)
  for (const r of results) {
    console.log(
      `${r.name}\n  in-process ${r.baseline.toFixed(0)} ${r.unit}  pool ${r.value.toFixed(0)} ${r.unit}  ratio ${r.ratio.toFixed(3)} (median of ${ROUNDS} rounds; load average ${Number(r.detail?.loadavg1).toFixed(2)})`,
    )
  }
}
