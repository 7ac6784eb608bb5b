// The worker pool: overruns end and replace a worker, the pool keeps serving, a full queue and a
// closed pool answer their codes, and nothing that is not bounded JSON reaches a worker.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { evaluateJsonExpr } from './json-expr.js'
import { createComputePool } from './pool.js'

const code = (expected: string) => (e: unknown) => e instanceof BatonError && e.code === expected

// A tree that doubles with each element of `xs`: comparing two takes 2^n steps.
const tree = { reduce: [{ var: 'xs' }, [{ var: 'accumulator' }, { var: 'accumulator' }], 0] }
const endless = { '==': [tree, tree] }
const endlessInput = { xs: Array.from({ length: 60 }, (_, i) => i) }
const unbounded = { maxSteps: 9e15 }

const pool = createComputePool({ size: 1, worker: { timeoutMs: 10_000, memoryMb: 32 } })
after(() => pool.close())

test('a program past its wall time is ended, its worker replaced, and the pool serves on', async () => {
  await pool.ready()
  const before = pool.stats().replaced
  // The worker was ready before the task was posted, so by its wall time it has charged steps:
  // the failure reports the steps it used, not 0.
  await assert.rejects(
    pool.evaluate(endless, endlessInput, { limits: unbounded, timeoutMs: 500 }),
    (e: unknown) =>
      code('compute_timeout')(e) &&
      typeof (e as BatonError).context.steps === 'number' &&
      ((e as BatonError).context.steps as number) > 0,
  )
  assert.equal(pool.stats().replaced, before + 1)
  const r = await pool.evaluate({ '+': [{ var: 'a' }, 1] }, { a: 41 })
  assert.equal(r.output, 42)
  assert.equal(pool.stats().workers, 1)
})

test('a program past its heap is ended with compute_memory_exceeded, and the pool serves on', async () => {
  const grow = {
    reduce: [{ var: 'xs' }, { merge: [{ var: 'accumulator' }, { var: 'accumulator' }] }, [1]],
  }
  const before = pool.stats().replaced
  await assert.rejects(
    pool.evaluate(
      grow,
      { xs: Array.from({ length: 40 }, (_, i) => i) },
      { limits: { maxSteps: 9e15, maxArrayLength: 9e15 }, timeoutMs: 30_000 },
    ),
    // the heap ran out only after the steps that filled it: the worker's count tells them
    (e: unknown) =>
      code('compute_memory_exceeded')(e) && ((e as BatonError).context.steps as number) > 1000,
  )
  assert.equal(pool.stats().replaced, before + 1)
  assert.deepEqual((await pool.evaluate({ merge: [[1], 2] }, null)).output, [1, 2])
})

test('a full queue answers compute_busy with Retry-After, and close fails what is left', async () => {
  const busy = createComputePool({ size: 1, maxQueue: 1, worker: { timeoutMs: 60_000 } })
  await busy.ready()
  const running = busy.evaluate(endless, endlessInput, { limits: unbounded })
  const waiting = busy.evaluate({ var: '' }, 1)
  assert.deepEqual(busy.stats(), {
    workers: 1,
    ready: 1,
    busy: 1,
    queued: 1,
    replaced: 0,
    retired: 0,
  })
  await assert.rejects(busy.evaluate({ var: '' }, 2), (e: unknown) => {
    assert.ok(e instanceof BatonError)
    assert.equal(e.code, 'compute_busy')
    assert.equal(e.status, 503)
    assert.equal(e.headers['retry-after'], '1')
    assert.equal(e.context.retry_after, 1)
    return true
  })
  const ended = [
    assert.rejects(running, code('shutting_down')),
    assert.rejects(waiting, code('shutting_down')),
  ]
  await busy.close()
  await Promise.all(ended)
  await assert.rejects(busy.evaluate({ var: '' }, 3), code('shutting_down'))
})

test('an invalid or oversized program is refused before it reaches a worker', async () => {
  await assert.rejects(pool.evaluate({ log: 'x' }, null), code('compute_invalid_program'))
  await assert.rejects(
    pool.evaluate({ cat: ['x'.repeat(100)] }, null, { limits: { maxProgramBytes: 64 } }),
    code('compute_program_too_large'),
  )
  await assert.rejects(
    pool.evaluate({ var: '' }, 'x'.repeat(100), { limits: { maxInputBytes: 64 } }),
    code('compute_input_too_large'),
  )
})

test('nesting far past the bound is refused, never a stack overflow', async () => {
  let program: unknown = true
  let input: unknown = 1
  for (let i = 0; i < 200_000; i++) {
    program = { '!': program }
    input = [input]
  }
  assert.throws(() => evaluateJsonExpr(program, null), code('compute_depth_exceeded'))
  assert.throws(() => evaluateJsonExpr({ var: '' }, input), code('compute_depth_exceeded'))
  await assert.rejects(pool.evaluate(program, null), code('compute_depth_exceeded'))
  await assert.rejects(pool.evaluate({ var: '' }, input), code('compute_depth_exceeded'))
  const cycle: unknown[] = []
  cycle.push(cycle)
  assert.throws(() => evaluateJsonExpr({ var: '' }, cycle), code('compute_depth_exceeded'))
})

test('values JSON cannot carry are refused as input or program', () => {
  const sparse: unknown[] = []
  sparse[2] = 1
  for (const input of [
    undefined,
    () => 1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    new Date(0),
    sparse,
    1n,
    new Map(),
  ]) {
    assert.throws(() => evaluateJsonExpr({ var: '' }, input), code('compute_invalid_input'))
  }
  for (const program of [undefined, Number.NaN, { var: [undefined] }, new Date(0)]) {
    assert.throws(() => evaluateJsonExpr(program, null), code('compute_invalid_program'))
  }
})

test('every failure of an evaluation carries the steps it used', () => {
  const fail = (program: unknown, input: unknown, limits = {}) => {
    try {
      evaluateJsonExpr(program, input, limits)
    } catch (e) {
      assert.ok(e instanceof BatonError)
      return { code: e.code, steps: e.context.steps }
    }
    assert.fail('it answered')
  }
  assert.deepEqual(fail(endless, endlessInput, { maxSteps: 500 }), {
    code: 'compute_steps_exceeded',
    steps: 500,
  })
  assert.deepEqual(fail({ cat: [{ var: 's' }, { var: 's' }] }, { s: 'x'.repeat(40_000) }), {
    code: 'compute_string_too_long',
    steps: 7,
  })
  assert.deepEqual(fail({ eval: 1 }, null), { code: 'compute_invalid_program', steps: 0 })
  assert.deepEqual(fail(1, { a: [1, { 'b/c~': Number.NaN }] }), {
    code: 'compute_invalid_input',
    steps: 0,
  })
})

test('an error names the place refused as a JSON Pointer', () => {
  const at = (program: unknown, input: unknown) => {
    try {
      evaluateJsonExpr(program, input)
    } catch (e) {
      assert.ok(e instanceof BatonError)
      return e.context.path
    }
    assert.fail('it answered')
  }
  assert.equal(at(1, { a: [1, { 'b/c~': Number.NaN }] }), '/a/1/b~1c~0')
  assert.equal(at({ if: [true, [0, { 'x/': 1 }]] }, null), '/if/1/1')
  assert.equal(at({ '!': { eval: 1 } }, null), '/!')
})

test('bounds must be positive integers', () => {
  assert.throws(() => evaluateJsonExpr(1, null, { maxSteps: 0 }), code('invalid_request'))
  assert.throws(() => evaluateJsonExpr(1, null, { maxDepth: 1.5 }), code('invalid_request'))
  assert.throws(() => createComputePool({ worker: { timeoutMs: -1 } }), code('invalid_request'))
})

test('the output is a fresh JSON value, and the step count is deterministic', () => {
  const input = { a: { b: [1, 2] } }
  const r = evaluateJsonExpr({ var: 'a' }, input)
  assert.deepEqual(r.output, { b: [1, 2] })
  assert.notEqual(r.output, input.a)
  assert.equal(r.outputText, '{"b":[1,2]}')
  assert.equal(evaluateJsonExpr({ var: 'a' }, input).steps, r.steps)
})

test('a worker that cannot start fails ready() with the reason instead of leaving it waiting', async () => {
  const broken = createComputePool({
    size: 1,
    entry: new URL('data:text/javascript,throw new Error("no evaluator here")'),
  })
  try {
    await assert.rejects(broken.ready(), /could not start: no evaluator here/)
  } finally {
    await broken.close()
  }
})

// A lazy pool whose idle check runs when the test says so, not after a wait.
function lazyPool(options: Parameters<typeof createComputePool>[0] = {}) {
  const pending: (() => void)[] = []
  const pool = createComputePool({
    size: 1,
    idleMs: 60_000,
    schedule: (run) => {
      pending.push(run)
      return () => pending.splice(pending.indexOf(run), 1)
    },
    ...options,
  })
  const idle = () => {
    for (const run of pending.splice(0)) run()
  }
  return { pool, idle, pending }
}

test('a lazy pool starts no worker until there is work, and ends it once idle', async () => {
  const { pool: lazy, idle, pending } = lazyPool()
  try {
    assert.equal(lazy.lazy, true)
    assert.equal(lazy.size, 1)
    assert.equal(lazy.stats().workers, 0)
    assert.equal((await lazy.evaluate({ '+': [{ var: 'a' }, 1] }, { a: 1 })).output, 2)
    assert.equal(lazy.stats().workers, 1)
    assert.equal(pending.length, 1)
    idle()
    assert.deepEqual(lazy.stats(), {
      workers: 0,
      ready: 0,
      busy: 0,
      queued: 0,
      replaced: 0,
      retired: 1,
    })
    assert.equal((await lazy.evaluate({ '*': [{ var: 'a' }, 3] }, { a: 2 })).output, 6)
    assert.equal(lazy.stats().workers, 1)
  } finally {
    await lazy.close()
  }
})

test('a lazy pool keeps a worker that is running an evaluation, and its limits still hold', async () => {
  const { pool: lazy, idle, pending } = lazyPool({ worker: { timeoutMs: 60_000 } })
  try {
    const running = lazy.evaluate(endless, endlessInput, { limits: unbounded, timeoutMs: 300 })
    assert.equal(pending.length, 0)
    idle()
    await assert.rejects(running, code('compute_timeout'))
    assert.equal(lazy.stats().replaced, 1)
    assert.equal((await lazy.evaluate({ var: '' }, 7)).output, 7)
    idle()
    assert.equal(lazy.stats().workers, 0)
  } finally {
    await lazy.close()
  }
})

test('a lazy worker that cannot start fails its evaluation and ready(), and close still ends it', async () => {
  const { pool: broken } = lazyPool({
    entry: new URL('data:text/javascript,throw new Error("no evaluator here")'),
  })
  try {
    assert.equal(broken.stats().workers, 0)
    await assert.rejects(broken.evaluate({ var: '' }, 1), code('internal'))
    await assert.rejects(broken.ready(), /could not start: no evaluator here/)
  } finally {
    await broken.close()
  }
  await assert.rejects(broken.evaluate({ var: '' }, 1), code('shutting_down'))
})

test('a lazy pool starts only the workers its work needs, and ready() starts the rest', async () => {
  const { pool: lazy } = lazyPool({ size: 3 })
  try {
    assert.equal((await lazy.evaluate({ var: '' }, 1)).output, 1)
    assert.equal(lazy.stats().workers, 1)
    const both = await Promise.all([lazy.evaluate({ var: '' }, 2), lazy.evaluate({ var: '' }, 3)])
    assert.deepEqual(
      both.map((e) => e.output),
      [2, 3],
    )
    assert.equal(lazy.stats().workers, 2)
    await lazy.ready()
    assert.equal(lazy.stats().ready, 3)
  } finally {
    await lazy.close()
  }
})
