// Properties over generated programs: whatever a program is, evaluation answers within its bounds
// or fails with a bound or invalid-program code (never anything else), and it is deterministic:
// the same program and input answer the same twice, and the same in a worker as in this thread.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import fc from 'fast-check'
import {
  compileJsonExpr,
  evaluateJsonExpr,
  JSON_EXPR_V1_OPERATORS,
  runCompiled,
} from './json-expr.js'
import type { ComputeLimits } from './limits.js'
import { createComputePool } from './pool.js'

const EXPECTED = new Set([
  'compute_invalid_program',
  'compute_program_too_large',
  'compute_input_too_large',
  'compute_depth_exceeded',
  'compute_steps_exceeded',
  'compute_output_too_large',
  'compute_string_too_long',
  'compute_array_too_long',
])

const names = Object.keys(JSON_EXPR_V1_OPERATORS)
// mostly v1 operators, sometimes a name that must be refused
const opName = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...names) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('log', 'method', '__proto__', 'toString', 'constructor', 'x'),
  },
)
const scalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(
    '',
    'a',
    'a.b',
    '0',
    '1',
    'xs',
    'current',
    'accumulator',
    '__proto__',
    'toString',
  ),
  fc.string({ maxLength: 6 }),
)
const { program } = fc.letrec<{ program: unknown; call: unknown }>((tie) => ({
  program: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('program'), { maxLength: 3 }),
    tie('call'),
    tie('call'),
  ),
  call: fc
    .tuple(opName, fc.oneof(tie('program'), fc.array(tie('program'), { maxLength: 4 })))
    .map(([op, args]) =>
      Object.defineProperty({}, op, {
        value: args,
        enumerable: true,
        writable: true,
        configurable: true,
      }),
    ),
}))
const input = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({
    xs: fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 12 }),
    a: fc.jsonValue({ maxDepth: 2 }),
  }),
)
const limits: fc.Arbitrary<Partial<ComputeLimits>> = fc.oneof(
  fc.constant({}),
  fc.record(
    {
      maxSteps: fc.integer({ min: 1, max: 400 }),
      maxDepth: fc.integer({ min: 1, max: 8 }),
      maxOutputBytes: fc.integer({ min: 1, max: 200 }),
      maxStringLength: fc.integer({ min: 1, max: 40 }),
      maxArrayLength: fc.integer({ min: 1, max: 10 }),
      maxProgramBytes: fc.integer({ min: 1, max: 400 }),
      maxInputBytes: fc.integer({ min: 1, max: 400 }),
    },
    { requiredKeys: [] },
  ),
)

type Outcome = { text: string; steps: number } | { code: string }

function outcome(p: unknown, i: unknown, l: Partial<ComputeLimits>): Outcome {
  try {
    const r = evaluateJsonExpr(p, i, l)
    return { text: r.outputText, steps: r.steps }
  } catch (e) {
    if (e instanceof BatonError && EXPECTED.has(e.code)) return { code: e.code }
    throw e
  }
}

test('every program answers within its bounds or fails with a bound or invalid-program code', () => {
  fc.assert(
    fc.property(program, input, limits, (p, i, l) => {
      const o = outcome(p, i, l)
      if ('text' in o) {
        const bound = { maxSteps: 1_000_000, maxOutputBytes: 1_048_576, ...l }
        assert.ok(o.steps <= bound.maxSteps)
        assert.ok(Buffer.byteLength(o.text) <= bound.maxOutputBytes)
        JSON.parse(o.text)
      }
    }),
    { numRuns: 2000 },
  )
})

test('evaluation is deterministic: the same program and input answer the same twice', () => {
  fc.assert(
    fc.property(program, input, limits, (p, i, l) => {
      assert.deepEqual(outcome(p, i, l), outcome(p, i, l))
    }),
    { numRuns: 1000 },
  )
})

// The programs that do the most work per step: operators over long text, large arrays and objects,
// and deep structures, each repeated so one evaluation runs near its step bound.
const text = fc
  .tuple(
    fc.constantFrom('x', 'ab', 'é', '\u{1F600}', ' ', '0'),
    fc.integer({ min: 0, max: 60_000 }),
  )
  .map(([unit, n]) => unit.repeat(n))
const bigArray = fc.oneof(
  fc.integer({ min: 0, max: 50_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  fc
    .tuple(text, fc.integer({ min: 0, max: 40 }))
    .map(([t, n]) => Array.from({ length: n }, () => t.slice(0, 2000))),
  fc.integer({ min: 0, max: 8_000 }).map((n) => Array.from({ length: n }, (_, i) => [i, [i]])),
)
const bigObject = fc
  .integer({ min: 0, max: 20_000 })
  .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))
const slowCall = fc.constantFrom<(a: unknown, b: unknown) => unknown>(
  (a, b) => ({ '===': [a, b] }),
  (a, b) => ({ '!==': [a, b] }),
  (a, b) => ({ '==': [a, b] }),
  (a, b) => ({ '!=': [a, b] }),
  (a, b) => ({ '<': [a, b] }),
  (a, b) => ({ '<=': [a, b, a] }),
  (a, b) => ({ '>=': [a, b] }),
  (a, b) => ({ in: [a, b] }),
  (a, b) => ({ in: [{ substr: [b, 1] }, a] }),
  (a, b) => ({ cat: [a, b] }),
  (a, b) => ({ merge: [a, b, a] }),
  (a, b) => ({ '+': [a, b] }),
  (a, _b) => ({ '*': [a, 1] }),
  (a, b) => ({ '-': [a, b] }),
  (a, b) => ({ max: [a, b] }),
  (a, _b) => ({ substr: [a, 1, -1] }),
  (a, b) => ({ missing: [a, b] }),
  (a, b) => ({ var: [a, b] }),
  (a, _b) => ({ some: [a, { '===': [{ var: '' }, -1] }] }),
  (a, b) => ({ map: [a, { in: [{ var: '' }, [b]] }] }),
)
const slowCase = fc.record({
  call: slowCall,
  a: fc.oneof(text, bigArray, bigObject),
  b: fc.oneof(text, bigArray, bigObject),
  same: fc.boolean(),
  times: fc.integer({ min: 1, max: 40 }),
})

// No step may stand for more than a constant amount of work: the evaluator counts, where it calls
// each builtin, the elements and code units that builtin touches, and the steps must keep pace.
// At one step per 16 code units, the most one step can stand for is 16 units of work.
const WORK_PER_STEP = 16

function workOf(p: unknown, i: unknown, l: Partial<ComputeLimits> = {}) {
  let meter = { steps: 0, work: 0 }
  try {
    runCompiled(compileJsonExpr(p, l), i, { meter: (m) => (meter = m) })
  } catch (e) {
    if (!(e instanceof BatonError && EXPECTED.has(e.code))) throw e
  }
  return meter
}

test('no step stands for more than a constant amount of work, however slow the program', () => {
  const bounds = { maxSteps: 200_000, maxInputBytes: 4 * 1_048_576 }
  fc.assert(
    fc.property(slowCase, ({ call, a, b, same, times }) => {
      const program = Array.from({ length: times }, () => call({ var: 'a' }, { var: 'b' }))
      const input = { a, b: same ? structuredClone(a) : b }
      const { steps, work } = workOf(program, input, bounds)
      assert.ok(work <= WORK_PER_STEP * steps, `${work} units of work in ${steps} steps`)
    }),
    { numRuns: 150 },
  )
  fc.assert(
    fc.property(program, input, limits, (p, i, l) => {
      const { steps, work } = workOf(p, i, l)
      assert.ok(work <= WORK_PER_STEP * steps, `${work} units of work in ${steps} steps`)
    }),
    { numRuns: 1000 },
  )
})

test('comparing, searching and listing large values costs steps by their size', () => {
  const long = 'x'.repeat(160_000)
  const steps = (p: unknown, i: unknown) => evaluateJsonExpr(p, i, { maxSteps: 1e9 }).steps
  const twice = { a: long, b: `${long}` }
  // 160,000 code units are 10,000 steps to compare, once for each comparison
  assert.ok(steps({ '===': [{ var: 'a' }, { var: 'b' }] }, twice) >= 10_000)
  assert.ok(steps({ in: ['y', { var: 'a' }] }, twice) >= 10_000)
  const keys = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]))
  // two objects whose member counts differ still cost their listing
  assert.ok(steps({ '===': [{ var: 'a' }, { var: 'b' }] }, { a: keys, b: { k: 1 } }) >= 10_000)
})

// wall time must not decide a generated case on a loaded machine: steps bound them all
const pool = createComputePool({ size: 1, worker: { timeoutMs: 60_000 } })
after(() => pool.close())

test('a worker answers exactly as this thread does', async () => {
  await pool.ready()
  await fc.assert(
    fc.asyncProperty(program, input, limits, async (p, i, l) => {
      // the pool carries JSON text, so compare against the JSON the worker receives (-0 is 0)
      const json = (v: unknown) => (v === undefined ? v : JSON.parse(JSON.stringify(v)))
      const here = outcome(json(p), json(i), l)
      let there: Outcome
      try {
        const r = await pool.evaluate(p, i, { limits: l })
        there = { text: r.outputText, steps: r.steps }
      } catch (e) {
        if (!(e instanceof BatonError && EXPECTED.has(e.code))) throw e
        there = { code: e.code }
      }
      assert.deepEqual(there, here)
    }),
    { numRuns: 300 },
  )
})
