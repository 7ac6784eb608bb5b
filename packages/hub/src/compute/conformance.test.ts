// Runs every conformance file (conformance/*.json) in this thread and through the worker pool:
// each case must answer its `output` or fail with its `error` code, the same way in both.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { after, describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { evaluateJsonExpr, type JsonValue } from './json-expr.js'
import type { ComputeLimits, WorkerLimits } from './limits.js'
import { type ComputePool, createComputePool } from './pool.js'

interface Case {
  section?: string
  name?: string
  program: unknown
  input: unknown
  output?: JsonValue
  error?: string
  limits?: Partial<ComputeLimits>
  worker?: Partial<WorkerLimits>
  only?: 'pool'
}

const dir = new URL('./conformance/', import.meta.url)
const files = readdirSync(dir).filter((f) => f.endsWith('.json'))

const label = (c: Case, i: number) =>
  `#${i} ${c.section ?? ''}: ${c.name ?? JSON.stringify(c.program).slice(0, 80)}`

function check(c: Case, answer: () => JsonValue): void {
  if (c.error === undefined) {
    assert.deepEqual(answer(), c.output)
    return
  }
  assert.throws(answer, (e: unknown) => e instanceof BatonError && e.code === c.error)
}

async function checkAsync(c: Case, answer: () => Promise<JsonValue>): Promise<void> {
  if (c.error === undefined) {
    assert.deepEqual(await answer(), c.output)
    return
  }
  await assert.rejects(answer, (e: unknown) => e instanceof BatonError && e.code === c.error)
}

const pools = new Map<string, ComputePool>()
function poolFor(worker: Partial<WorkerLimits> = {}): ComputePool {
  const key = JSON.stringify(worker)
  let pool = pools.get(key)
  if (!pool) {
    // wall time decides only the cases that set it, never a slow moment of a shared machine
    pool = createComputePool({ size: 1, worker: { timeoutMs: 60_000, ...worker } })
    pools.set(key, pool)
  }
  return pool
}
after(async () => {
  for (const pool of pools.values()) await pool.close()
})

test('there are conformance files, and negative cases outnumber none', () => {
  assert.ok(files.includes('jsonlogic-tests.json'))
  assert.ok(files.includes('v1.json'))
})

for (const file of files) {
  const doc = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as { cases: Case[] }
  describe(file, () => {
    test('in this thread', () => {
      doc.cases.forEach((c, i) => {
        if (c.only === 'pool') return
        assert.doesNotThrow(
          () => check(c, () => evaluateJsonExpr(c.program, c.input, c.limits).output),
          label(c, i),
        )
      })
    })
    test('through the worker pool', async () => {
      for (const [i, c] of doc.cases.entries()) {
        const pool = poolFor(c.worker)
        const options = {
          ...(c.limits ? { limits: c.limits } : {}),
          ...(c.worker?.timeoutMs ? { timeoutMs: c.worker.timeoutMs } : {}),
        }
        await checkAsync(
          c,
          async () => (await pool.evaluate(c.program, c.input, options)).output,
        ).catch((e: unknown) => {
          throw new Error(`${label(c, i)}: ${String(e)}`)
        })
      }
    })
  })
}
