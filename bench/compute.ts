// json-expr-v1 (the bounded compute language): evaluations per second of a small program through
// the worker pool (program and input checked, sent as JSON to a worker thread, evaluated under
// every bound, answered back) beside the raw evaluator in this thread, in the same run. The
// ratio is the price of isolation: what wall-time and memory bounds cost per evaluation.
//
//   node --import tsx bench/compute.ts
//   BENCH_ROUNDS=7 BENCH_EVALS=4000 BENCH_WORKERS=2 node --import tsx bench/compute.ts
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { evaluateJsonExpr } from '../packages/hub/src/compute/json-expr.js'
import { createComputePool } from '../packages/hub/src/compute/pool.js'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const EVALS = Number(process.env.BENCH_EVALS ?? 4000)
const WORKERS = Number(process.env.BENCH_WORKERS ?? Math.min(2, os.availableParallelism()))

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

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const r of await run()) {
    console.log(
      `${r.name}\n  in-process ${r.baseline.toFixed(0)} ${r.unit}  pool ${r.value.toFixed(0)} ${r.unit}  ratio ${r.ratio.toFixed(3)} (median of ${ROUNDS} rounds; load average ${Number(r.detail?.loadavg1).toFixed(2)})`,
    )
  }
}
