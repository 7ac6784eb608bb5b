import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { GroupOutcome } from '../store/transaction.js'
import { AutocommitLane } from './lane.js'

describe('autocommit lane', () => {
  test('inputs that arrive together commit together; what it leaves goes the careful way', async () => {
    const commits: number[][] = []
    const events: string[] = []
    const lane = new AutocommitLane<number, string>({
      maxBatch: 3,
      inFlight: 1,
      commit: async (inputs) => {
        commits.push(inputs)
        return inputs.map((n): GroupOutcome<string> | undefined => {
          if (n % 5 === 0) return undefined
          if (n % 7 === 0) return { ok: false, error: new Error(`refused ${n}`) }
          return { ok: true, value: `fast ${n}`, after: () => events.push(`after ${n}`) }
        })
      },
      careful: async (n) => `careful ${n}`,
    })
    const answers = await Promise.allSettled([1, 5, 7, 8, 10].map((n) => lane.run(n)))
    assert.deepEqual(commits, [
      [1, 5, 7],
      [8, 10],
    ])
    assert.deepEqual(
      answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message)),
      ['fast 1', 'careful 5', 'refused 7', 'fast 8', 'careful 10'],
    )
    assert.deepEqual(events, ['after 1', 'after 8'])
  })

  test('a failed commit rejects each of its inputs, and a throwing hook harms no answer', async () => {
    let fail = true
    const lane = new AutocommitLane<number, number>({
      maxBatch: 10,
      inFlight: 2,
      commit: async (inputs) => {
        if (fail) throw new Error('down')
        return inputs.map((n) => ({
          ok: true as const,
          value: n,
          after: () => {
            throw new Error('hook')
          },
        }))
      },
      careful: async () => assert.fail('nothing goes the careful way'),
    })
    const failed = await Promise.allSettled([1, 2].map((n) => lane.run(n)))
    assert.deepEqual(
      failed.map((f) => f.status),
      ['rejected', 'rejected'],
    )
    fail = false
    assert.deepEqual(await Promise.all([3, 4].map((n) => lane.run(n))), [3, 4])
    await lane.flush()
  })

  test('at most inFlight commits run at once', async () => {
    let running = 0
    let most = 0
    const lane = new AutocommitLane<number, number>({
      maxBatch: 1,
      inFlight: 2,
      commit: async (inputs) => {
        running++
        most = Math.max(most, running)
        await new Promise((r) => setImmediate(r))
        running--
        return inputs.map((n) => ({ ok: true as const, value: n }))
      },
      careful: async (n) => n,
    })
    await Promise.all(Array.from({ length: 8 }, (_, i) => lane.run(i)))
    assert.equal(most, 2)
  })
})
