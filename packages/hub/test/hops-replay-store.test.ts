import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { HopRecord } from '@baton/context'
import { restartableHub, testStores } from './support.js'

// The hub-backed ReplayStore (seed 003) keeps the library's contract, over the hub's database:
// it survives a restart and is one store for every instance.
const ISS = 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp'
const rec = (hop: string, digest: string, expiresAt: number): HopRecord => ({
  iss: ISS,
  hop,
  digest,
  expiresAt,
})

for (const store of testStores) {
  describe(`the hub replay store (${store.name})`, () => {
    test('the library contract: remember, expiry, replacement, sweep, hop data', async () => {
      const db = await restartableHub(store)
      const hub = await db.start()
      try {
        const s = hub.ctx.hops.replay
        assert.equal(await s.remember(rec('h1', 'd1', 2000), 1000), undefined)
        assert.equal((await s.remember(rec('h1', 'd2', 3000), 1000))?.digest, 'd1')
        assert.equal((await s.get(ISS, 'h1', 1999))?.digest, 'd1')
        assert.equal(await s.get(ISS, 'h1', 2000), undefined)
        // An expired record is replaced by the next remember, which is new.
        assert.equal(await s.remember(rec('h1', 'd9', 5000), 2000), undefined)
        assert.equal((await s.get(ISS, 'h1', 2000))?.digest, 'd9')
        await s.put({ ...rec('h2', 'd2', 9000), data: { state: 'accepted', last: 'x.y.z' } })
        assert.deepEqual((await s.get(ISS, 'h2', 0))?.data, { state: 'accepted', last: 'x.y.z' })
        assert.deepEqual(
          (await s.list(4000)).map((r) => r.hop),
          ['h1', 'h2'],
        )
        assert.equal(await s.sweep(6000), 1)
        assert.deepEqual(
          (await s.list(0)).map((r) => r.hop),
          ['h2'],
        )
      } finally {
        await hub.stop()
        await db.drop()
      }
    })

    test('concurrent remembers of one (iss, hop), on every instance: exactly one is new', async () => {
      const db = await restartableHub(store)
      const hubs = [await db.start()]
      if (store.name === 'postgres') hubs.push(await db.start())
      try {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            hubs[i % hubs.length]!.ctx.hops.replay.remember(rec('h3', `d${i}`, 9000), 1000),
          ),
        )
        assert.equal(answers.filter((a) => a === undefined).length, 1)
        // After expiry, racing replacements also have one winner.
        const later = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            hubs[i % hubs.length]!.ctx.hops.replay.remember(rec('h3', `e${i}`, 20_000), 9000),
          ),
        )
        assert.equal(later.filter((a) => a === undefined).length, 1)
      } finally {
        for (const h of hubs) await h.stop()
        await db.drop()
      }
    })

    test('records survive a restart, hop data included', async () => {
      const db = await restartableHub(store)
      const first = await db.start()
      await first.ctx.hops.replay.remember(rec('h4', 'd4', 10_000), 0)
      await first.ctx.hops.replay.put({ ...rec('h4', 'd4', 20_000), data: { state: 'completed' } })
      await first.stop()
      const second = await db.start()
      try {
        const r = await second.ctx.hops.replay.get(ISS, 'h4', 0)
        assert.equal(r?.digest, 'd4')
        assert.equal(r?.expiresAt, 20_000)
        assert.deepEqual(r?.data, { state: 'completed' })
        assert.equal(
          (await second.ctx.hops.replay.remember(rec('h4', 'd5', 30_000), 0))?.digest,
          'd4',
        )
      } finally {
        await second.stop()
        await db.drop()
      }
    })
  })
}
