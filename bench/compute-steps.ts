// json-expr-v1's step bound as a bound of time: for each kind of program that does the most work
// per step (long text compared, searched, converted or built; large arrays and objects compared,
// listed, merged; folds; deep paths), a program just under the default step bound is run through
// the worker pool, and its wall time is set beside the default wall-time bound. Steps bound time
// when the slowest of them ends well inside the timeout, under load too.
//
//   node --import tsx bench/compute-steps.ts
//   BENCH_ROUNDS=3 BENCH_SPIN=4 node --import tsx bench/compute-steps.ts
import { fork } from 'node:child_process'
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { evaluateJsonExpr } from '../packages/hub/src/compute/json-expr.js'
import {
  DEFAULT_COMPUTE_LIMITS,
  DEFAULT_WORKER_LIMITS,
} from '../packages/hub/src/compute/limits.js'
import { createComputePool } from '../packages/hub/src/compute/pool.js'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
// Busy child processes that load the machine while the programs run (0: only what runs anyway).
const SPIN = Number(process.env.BENCH_SPIN ?? 0)
const BOUND = DEFAULT_COMPUTE_LIMITS.maxSteps

const xs = Array.from({ length: 60_000 }, (_, i) => i)
const text = 'x'.repeat(480_000)
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const repeat = (n: number, unit: unknown) => Array.from({ length: n }, () => unit)
const over = (body: unknown) => ({ '!': [{ map: [{ var: 'xs' }, body] }] })

interface Kind {
  name: string
  input: unknown
  /** The program of `n` units of the slow operation. */
  program: (n: number) => unknown
}

const KINDS: Kind[] = [
  {
    name: 'equal 480,000-unit strings, ===',
    input: { a: text, b: `${text.slice(0, -1)}x` },
    program: (n) => repeat(n, { '===': [{ var: 'a' }, { var: 'b' }] }),
  },
  {
    name: 'equal 480,000-unit strings, <',
    input: { a: text, b: `${text.slice(0, -1)}x` },
    program: (n) => repeat(n, { '<': [{ var: 'a' }, { var: 'b' }] }),
  },
  {
    name: 'in: a 20,001-unit near-match needle in 400,000 units',
    input: { n: `${'a'.repeat(20_000)}b`, s: 'a'.repeat(400_000) },
    program: (n) => repeat(n, { in: [{ var: 'n' }, { var: 's' }] }),
  },
  {
    name: 'a 400,000-unit string to a number',
    input: { s: ' '.repeat(400_000) },
    program: (n) => repeat(n, { '-': [{ var: 's' }] }),
  },
  {
    name: '=== of two 60,000-element arrays',
    input: { a: xs, b: xs.slice() },
    program: (n) => repeat(n, { '===': [{ var: 'a' }, { var: 'b' }] }),
  },
  {
    name: '=== of objects of 30,000 and 30,001 members',
    input: { a: keys(30_000), b: keys(30_001) },
    program: (n) => repeat(n, { '===': [{ var: 'a' }, { var: 'b' }] }),
  },
  {
    name: '=== of two equal objects of 30,000 members',
    input: { a: keys(30_000), b: keys(30_000) },
    program: (n) => repeat(n, { '===': [{ var: 'a' }, { var: 'b' }] }),
  },
  {
    name: 'in over a 60,000-element array',
    input: { a: xs },
    program: (n) => repeat(n, { in: [-1, { var: 'a' }] }),
  },
  {
    name: 'text of a 10,000-element array (==)',
    input: { a: xs.slice(0, 10_000) },
    program: (n) => repeat(n, { '==': [{ var: 'a' }, 1] }),
  },
  {
    name: 'merge of two 30,000-element arrays',
    input: { a: xs.slice(0, 30_000) },
    program: (n) => repeat(n, { '!': [{ merge: [{ var: 'a' }, { var: 'a' }] }] }),
  },
  {
    name: 'cat to 60,000 units',
    input: { s: 'y'.repeat(30_000) },
    program: (n) => repeat(n, { '!': [{ cat: [{ var: 's' }, { var: 's' }] }] }),
  },
  {
    name: 'reduce: a sum over 60,000 elements',
    input: { xs },
    program: (n) =>
      repeat(n, {
        reduce: [{ var: 'xs' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0],
      }),
  },
  {
    name: 'map: var "" over 60,000 elements',
    input: { xs },
    program: (n) => repeat(n, over({ var: '' })),
  },
  {
    name: 'filter over 60,000 elements',
    input: { xs },
    program: (n) => repeat(n, { '!': [{ filter: [{ var: 'xs' }, { '%': [{ var: '' }, 2] }] }] }),
  },
  {
    name: 'map: an if of 40 conditions on each of 10,000 elements',
    input: { xs: xs.slice(0, 10_000) },
    program: (n) => repeat(n, over({ if: [...repeat(40, false), 0] })),
  },
  {
    name: 'map: a 60-segment var path on each of 1,000 elements',
    input: { xs: repeat(1000, JSON.parse(`${'{"a":'.repeat(60)}1${'}'.repeat(60)}`)) },
    program: (n) => repeat(n, over({ var: Array.from({ length: 60 }, () => 'a').join('.') })),
  },
]

/** The number of units that keeps a kind's program just under the default step bound. */
function unitsFor(kind: Kind): { units: number; steps: number } {
  const limits = { maxSteps: Number.MAX_SAFE_INTEGER, maxDepth: 128 }
  const one = evaluateJsonExpr(kind.program(1), kind.input, limits).steps
  const two = evaluateJsonExpr(kind.program(2), kind.input, limits).steps
  const units = Math.max(1, Math.floor((BOUND - (2 * one - two)) / (two - one)))
  return { units, steps: evaluateJsonExpr(kind.program(units), kind.input).steps }
}

function spin(n: number): () => void {
  const children = Array.from({ length: n }, () =>
    fork('-e', ['for (;;) {}'], { execArgv: [], stdio: 'ignore' }),
  )
  return () => {
    for (const c of children) c.kill()
  }
}

/** Runs the scenario and answers its result row: the slowest kind at the bound vs the timeout. */
export async function run(): Promise<Result[]> {
  const timeoutMs = DEFAULT_WORKER_LIMITS.timeoutMs
  // wall time must not end a run here: the point is to see how long it takes
  const pool = createComputePool({ size: 1, worker: { timeoutMs: 120_000 } })
  await pool.ready()
  const stop = spin(SPIN)
  const rows: { name: string; steps: number; ms: number; msAtBound: number }[] = []
  const loads: number[] = []
  try {
    for (const kind of KINDS) {
      const { units, steps } = unitsFor(kind)
      const program = kind.program(units)
      await pool.evaluate(program, kind.input)
      const times: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const started = performance.now()
        await pool.evaluate(program, kind.input)
        times.push(performance.now() - started)
        loads.push(os.loadavg()[0]!)
      }
      const ms = median(times)
      rows.push({ name: kind.name, steps, ms, msAtBound: (ms * BOUND) / steps })
    }
  } finally {
    stop()
    await pool.close()
  }
  rows.sort((a, b) => b.msAtBound - a.msAtBound)
  const slowest = rows[0]!
  return [
    {
      name: `compute: the slowest json-expr-v1 program per step at the ${BOUND}-step bound vs the ${timeoutMs} ms timeout`,
      baseline: timeoutMs,
      value: slowest.msAtBound,
      ratio: slowest.msAtBound / timeoutMs,
      unit: 'ms',
      detail: {
        slowest: slowest.name,
        loadavg1: median(loads),
        spinning: SPIN,
        rounds: ROUNDS,
        kinds: rows.map((r) => `${r.name}: ${r.steps} steps, ${r.ms.toFixed(0)} ms`).join('; '),
      },
    },
  ]
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keepAlive = setInterval(() => {}, 60_000)
  const [r] = await run()
  clearInterval(keepAlive)
  if (r) {
    console.log(r.name)
    for (const line of String(r.detail?.kinds).split('; ')) console.log(`  ${line}`)
    console.log(
      `  slowest: ${r.detail?.slowest}, ${r.value.toFixed(0)} ms at the bound = ${(r.ratio * 100).toFixed(1)}% of the timeout (load average ${Number(r.detail?.loadavg1).toFixed(2)}, ${SPIN} spinning)`,
    )
  }
}
