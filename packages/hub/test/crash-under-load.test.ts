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
        const gone = exited(first.child)
        const handoffs = await Promise.all(
          Array.from({ length: 150 }, async () => {
            const res = await call(first, 'POST', H, { body: { payload: { n: 1 } } })
            return res.body as { handoff_id: string; owner_token: string }
          }),
        )
        const acked: { id: string; token: string; version: number }[] = []
        // Every handoff makes its two moves in turn, all handoffs at once; the hub is killed as the
        // 60th move is acknowledged, with the others still in flight.
        const move = async (h: (typeof handoffs)[number], from: string, to: string) => {
          const res = await call(first, 'POST', `${H}/${h.handoff_id}/${to}`, {
            token: h.owner_token,
            body: { from, nonce: `${h.handoff_id}-${to}` },
          })
          if (res.status !== 200 || acked.length >= 60) return false
          acked.push({ id: h.handoff_id, token: h.owner_token, version: Number(res.body.version) })
          if (acked.length === 60) first.child.kill('SIGKILL')
          return true
        }
        await Promise.all(
          handoffs.map(async (h) => {
            try {
              if (await move(h, 'offered', 'accepted')) await move(h, 'accepted', 'working')
            } catch {
              // the connection died with the hub: not acknowledged
            }
          }),
        )
        first.child.kill('SIGKILL')
        await gone
        assert.equal(acked.length, 60, 'the hub was killed mid-load')

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
