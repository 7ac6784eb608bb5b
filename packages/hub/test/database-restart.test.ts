import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pino from 'pino'
import { startPostgres } from '../../../scripts/postgres.js'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { call, onPostgres, PG_KEY_SECRET, until } from './support.js'

const H = '/services/v1/handoff'

// A PostgreSQL server of this test's own, so it can be stopped and started under a running hub.
describe('the database restarts under a running hub (postgres)', { skip: onPostgres.skip }, () => {
  let pg: Awaited<ReturnType<typeof startPostgres>>
  let hub: RunningHub
  before(async () => {
    pg = await startPostgres()
    hub = await startHub(
      loadConfig({
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        DATABASE_URL: pg.url,
        BATON_HUB_KEY_SECRET: PG_KEY_SECRET,
      }),
      { log: pino({ level: 'silent' }) },
    )
  })
  after(async () => {
    await hub.stop()
    await pg.stop()
  })

  test('while it is down the hub answers 503 unavailable; once back, it works and lost nothing', async () => {
    const created = await call(hub, 'POST', H, { body: { payload: { n: 1 } } })
    const { handoff_id: id, owner_token: token } = created.body as Record<string, string>
    await call(hub, 'POST', `${H}/${id}/accepted`, { token, body: { from: 'offered' } })

    await pg.halt()
    const ready = await call(hub, 'GET', '/readyz')
    assert.equal(ready.status, 503)
    assert.equal(ready.body.code, 'unavailable')
    const read = await call(hub, 'GET', `${H}/${id}`, { token })
    assert.equal(read.status, 503)
    assert.equal(read.body.code, 'unavailable')
    assert.equal(read.headers.get('retry-after'), '1')
    const move = await call(hub, 'POST', `${H}/${id}/working`, {
      token,
      body: { from: 'accepted' },
    })
    assert.equal(move.status, 503, 'a write the database cannot take is refused, not lost')

    await pg.start()
    await until(
      'the hub is ready again',
      async () => (await call(hub, 'GET', '/readyz')).status === 200,
    )
    const after = await call(hub, 'GET', `${H}/${id}`, { token })
    assert.equal(after.body.state, 'accepted')
    assert.equal(after.body.version, 2)
    const retried = await call(hub, 'POST', `${H}/${id}/working`, {
      token,
      body: { from: 'accepted' },
    })
    assert.equal(retried.status, 200)
    assert.equal(retried.body.version, 3)
  })
})
