import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { call, onPostgres } from './support.js'

const H = '/services/v1/handoff'
const postgres = onPostgres.store

// Many instances share one PostgreSQL database; SQLite is the single-instance store by design.
describe('two hub instances on one PostgreSQL database', { skip: onPostgres.skip }, () => {
  let a: RunningHub
  let b: RunningHub
  let drop: () => Promise<void>
  before(async () => {
    const db = await postgres!.fresh()
    drop = db.drop
    const config = loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', ...db.env })
    a = await startHub(config, { log: pino({ level: 'silent' }) })
    b = await startHub(config, { log: pino({ level: 'silent' }) })
  })
  after(async () => {
    await a.stop()
    await b.stop()
    await drop()
  })

  test('a waiter on one instance wakes when another instance commits the move', async () => {
    const h = (await call(a, 'POST', H, { body: { payload: 1 } })).body as Record<string, string>
    const started = Date.now()
    const held = b.ctx.waits.waiting
    const waiting = call(b, 'GET', `${H}/${h.handoff_id}/wait/20?version=1`, {
      token: h.owner_token!,
    })
    await b.ctx.waits.untilWaiting(held + 1)
    const moved = await call(a, 'POST', `${H}/${h.handoff_id}/accepted`, {
      token: h.receiver_token!,
      body: { from: 'offered' },
    })
    assert.equal(moved.status, 200)
    const res = await waiting
    assert.equal(res.body.changed, true, `${Date.now() - started} ms ${JSON.stringify(res.body)}`)
    assert.equal(res.body.state, 'accepted')
    assert.ok(Date.now() - started < 15_000, 'woken through LISTEN/NOTIFY, not by the timeout')
  })

  test('racers split across instances: exactly one winner', async () => {
    const h = (await call(a, 'POST', H, { body: { payload: 1 } })).body as Record<string, string>
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 ? a : b, 'POST', `${H}/${h.handoff_id}/${i % 3 ? 'accepted' : 'working'}`, {
          token: h.owner_token!,
          body: { from: 'offered' },
        }),
      ),
    )
    assert.equal(results.filter((r) => r.status === 200).length, 1)
    assert.equal(results.filter((r) => r.status === 409).length, 39)
  })
})
