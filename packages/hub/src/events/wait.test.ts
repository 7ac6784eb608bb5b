import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { MemoryEventBus } from './bus.js'
import { WaitRegistry } from './wait.js'

/** A read whose answers the test hands out one at a time. */
function controlledRead() {
  const pending: ((v: number) => void)[] = []
  return {
    read: () => new Promise<number>((r) => pending.push(r)),
    /** Answers the oldest read in flight with `v`. */
    answer: async (v: number) => {
      while (pending.length === 0) await new Promise((r) => setImmediate(r))
      pending.shift()!(v)
    },
    inFlight: () => pending.length,
  }
}

const event = (topic: string) => ({ topic, type: 't', at: 0, data: {} })

describe('wait registry', () => {
  test('waiters of one key share reads; events during a read cause exactly one more', async () => {
    const bus = new MemoryEventBus()
    const waits = new WaitRegistry(bus, new Promise(() => {}), {
      maxPerTopic: 10,
      maxPerAddress: 10,
    })
    const r = controlledRead()
    const spec = {
      key: 'k',
      topics: ['t'] as const,
      read: r.read,
      view: (v: number) => v,
      ready: (v: number, first: number) => v > first,
      timeoutMs: () => 60_000,
    }
    const answers = [waits.wait(spec), waits.wait(spec), waits.wait(spec)]
    assert.equal(r.inFlight(), 1)
    await r.answer(1)
    // The second and third joined during the first read, so one more read answers them.
    await r.answer(1)
    assert.equal(waits.reads, 2)
    assert.equal(waits.waiting, 3)

    bus.publish(event('t'))
    for (let i = 0; i < 5; i++) bus.publish(event('t'))
    assert.equal(r.inFlight(), 1)
    await r.answer(1)
    await r.answer(2)
    const got = await Promise.all(answers)
    assert.deepEqual(
      got.map((a) => a.last),
      [2, 2, 2],
    )
    assert.equal(waits.reads, 4)
    assert.equal(waits.waiting, 0)
    assert.equal(bus.listenerCount(), 0)
  })

  test('a refusal of one waiter leaves the others waiting; a caller going away frees its slots', async () => {
    const bus = new MemoryEventBus()
    const waits = new WaitRegistry(bus, new Promise(() => {}), {
      maxPerTopic: 10,
      maxPerAddress: 1,
    })
    const r = controlledRead()
    const base = {
      key: 'k',
      topics: ['t'] as const,
      read: r.read,
      ready: (v: number, first: number) => v > first,
      timeoutMs: () => 60_000,
    }
    const abort = new AbortController()
    const kept = waits.wait({ ...base, view: (v: number) => v, address: 'a', signal: abort.signal })
    const refused = waits.wait({
      ...base,
      view: () => {
        throw new BatonError('principal_suspended', 'suspended')
      },
    })
    await assert.rejects(
      waits.wait({ ...base, view: (v: number) => v, address: 'a' }),
      (e: BatonError) => e.code === 'rate_limited' && e.headers['retry-after'] === '1',
    )
    await r.answer(1)
    // It joined during the first read, so the second answers it.
    await r.answer(1)
    await assert.rejects(refused, (e: BatonError) => e.code === 'principal_suspended')
    assert.equal(waits.waiting, 1)
    abort.abort()
    assert.deepEqual(await kept, { first: 1, last: 1 })
    assert.equal(waits.waiting, 0)
    // The address's slot is free again.
    const again = waits.wait({ ...base, view: (v: number) => v, address: 'a', timeoutMs: () => 0 })
    await r.answer(5)
    assert.deepEqual(await again, { first: 5, last: 5 })
  })

  test('shutting down answers every waiter with one more read', async () => {
    const bus = new MemoryEventBus()
    let release: () => void = () => {}
    const closing = new Promise<void>((r) => {
      release = r
    })
    const waits = new WaitRegistry(bus, closing, { maxPerTopic: 10, maxPerAddress: 10 })
    const r = controlledRead()
    const spec = {
      key: 'k',
      topics: ['t'] as const,
      read: r.read,
      view: (v: number) => v,
      ready: () => false,
      timeoutMs: () => 60_000,
    }
    const answers = [waits.wait(spec), waits.wait({ ...spec, key: 'other' })]
    await r.answer(1)
    await r.answer(1)
    assert.equal(waits.waiting, 2)
    release()
    await r.answer(3)
    await r.answer(4)
    assert.deepEqual(
      (await Promise.all(answers)).map((a) => a.last),
      [3, 4],
    )
  })
})

describe('wait registry at scale', () => {
  const spec = (r: ReturnType<typeof controlledRead>, views: { n: number }, token: string) => ({
    key: 'k',
    topics: ['t'] as const,
    read: r.read,
    view: (v: number, data: { token: string }) => {
      views.n++
      if (data.token === 'wrong') throw new BatonError('handoff_not_found', 'no such handoff')
      return v
    },
    viewKey: token,
    ready: (v: number, first: number) => v > first,
    timeoutMs: () => 60_000,
    data: { token },
    changesOnlyWithEvents: true,
  })

  test('waiters joining between events take the last read: opening n waits is one read', async () => {
    const bus = new MemoryEventBus()
    const waits = new WaitRegistry(bus, new Promise(() => {}), {
      maxPerTopic: 1000,
      maxPerAddress: 1000,
    })
    const r = controlledRead()
    const views = { n: 0 }
    const answers = [waits.wait(spec(r, views, 'a'))]
    await r.answer(1)
    for (let i = 0; i < 99; i++) answers.push(waits.wait(spec(r, views, i % 2 ? 'a' : 'b')))
    const refused = waits.wait(spec(r, views, 'wrong'))
    await assert.rejects(refused, (e: BatonError) => e.code === 'handoff_not_found')
    assert.equal(waits.reads, 1)
    assert.equal(r.inFlight(), 0)
    assert.equal(waits.waiting, 100)
    // One view per token of the one read: a, b and the refused one.
    assert.equal(views.n, 3)

    bus.publish(event('t'))
    await r.answer(2)
    const got = await Promise.all(answers)
    assert.ok(got.every((a) => a.first === 1 && a.last === 2))
    assert.equal(waits.reads, 2)
    assert.equal(views.n, 5)
    assert.deepEqual(waits.held, { waiters: 0, keys: 0 })
  })

  test('a caller that left before its wait began is answered by the first read, not held', async () => {
    const bus = new MemoryEventBus()
    const waits = new WaitRegistry(bus, new Promise(() => {}), {
      maxPerTopic: 10,
      maxPerAddress: 10,
    })
    const r = controlledRead()
    const abort = new AbortController()
    abort.abort()
    const gone = waits.wait({
      key: 'k',
      topics: ['t'] as const,
      read: r.read,
      view: (v: number) => v,
      ready: (v: number, first: number) => v > first,
      timeoutMs: () => 60_000,
      address: 'a',
      signal: abort.signal,
    })
    await r.answer(1)
    assert.deepEqual(await gone, { first: 1, last: 1 })
    assert.equal(waits.waiting, 0)
    assert.deepEqual(waits.held, { waiters: 0, keys: 0 })
  })

  test('a read no event asked for answers only the waiters without a first value', async () => {
    const bus = new MemoryEventBus()
    const waits = new WaitRegistry(bus, new Promise(() => {}), {
      maxPerTopic: 1000,
      maxPerAddress: 1000,
    })
    const r = controlledRead()
    const views = { n: 0 }
    // Without changesOnlyWithEvents every joining waiter asks for a read of its own.
    const plain = (token: string) => ({ ...spec(r, views, token), changesOnlyWithEvents: false })
    const aborts: AbortController[] = []
    const answers: Promise<unknown>[] = []
    for (let i = 0; i < 50; i++) {
      const abort = new AbortController()
      aborts.push(abort)
      answers.push(waits.wait({ ...plain(`t${i}`), signal: abort.signal }))
      await r.answer(1)
    }
    assert.equal(waits.reads, 50)
    // Each read viewed only the waiter that asked for it, not every waiter already there.
    assert.equal(views.n, 50)
    assert.deepEqual(waits.held, { waiters: 50, keys: 1 })
    for (const abort of aborts) abort.abort()
    await Promise.all(answers)
    assert.deepEqual(waits.held, { waiters: 0, keys: 0 })
    assert.equal(bus.listenerCount(), 0)
  })
})
