import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call, exited, serveProcess, testStores } from './support.js'

const H = '/services/v1/handoff'

for (const store of testStores) {
  describe(`killed mid-load (${store.name})`, () => {
    test('every move acknowledged before SIGKILL is there after restart, and nothing half-written', async () => {
      const db = await store.fresh()
      const env = { ...db.env, BATON_HANDOFF_DAILY_QUOTA: '100000' }
      try {
        const first = await serveProcess(env)
        const handoffs = await Promise.all(
          Array.from({ length: 150 }, async () => {
            const res = await call(first, 'POST', H, { body: { payload: { n: 1 } } })
            return res.body as { handoff_id: string; owner_token: string }
          }),
        )
        const acked: { id: string; token: string; version: number }[] = []
        let killed = false
        const moves = handoffs.flatMap((h) =>
          ['accepted', 'working'].map((to, i) => ({
            h,
            to,
            from: i === 0 ? 'offered' : 'accepted',
          })),
        )
        // Fire every first move, then every second one, and kill the hub while they are in flight.
        const inFlight = moves.map(async (m, i) => {
          await new Promise((r) => setTimeout(r, i < 150 ? 0 : 30))
          try {
            const res = await call(first, 'POST', `${H}/${m.h.handoff_id}/${m.to}`, {
              token: m.h.owner_token,
              body: { from: m.from, nonce: `${m.h.handoff_id}-${m.to}` },
            })
            if (res.status === 200 && !killed) {
              acked.push({
                id: m.h.handoff_id,
                token: m.h.owner_token,
                version: Number(res.body.version),
              })
            }
          } catch {
            // the connection died with the hub: not acknowledged
          }
        })
        while (acked.length < 60) await new Promise((r) => setTimeout(r, 2))
        killed = true
        first.child.kill('SIGKILL')
        await exited(first.child)
        await Promise.all(inFlight)
        assert.ok(acked.length >= 60)

        const second = await serveProcess(env)
        try {
          for (const a of acked) {
            const read = await call(second, 'GET', `${H}/${a.id}`, { token: a.token })
            assert.equal(read.status, 200)
            assert.ok(Number(read.body.version) >= a.version, `${a.id} lost an acknowledged move`)
          }
          // Nothing half-written: every handoff's version matches its history.
          for (const h of handoffs) {
            const read = await call(second, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
            const history = read.body.history as { version: number }[]
            assert.equal(Number(read.body.version), history.length + 1)
            assert.deepEqual(
              history.map((m) => m.version),
              Array.from({ length: history.length }, (_, i) => i + 2),
            )
          }
        } finally {
          second.child.kill('SIGTERM')
          await exited(second.child)
        }
      } finally {
        await db.drop()
      }
    })
  })
}
