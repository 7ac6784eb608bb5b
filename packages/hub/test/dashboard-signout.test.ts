import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { onPostgres, testStores } from './support.js'

const TOKEN = 'operator-signout-token-0123456789abcdefgh'

async function signIn(hub: RunningHub): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${hub.url}/dashboard/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: TOKEN }),
  })
  assert.equal(res.status, 200)
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!
  const session = await fetch(`${hub.url}/dashboard/api/session`, { headers: { cookie } })
  const { csrfToken } = (await session.json()) as { csrfToken: string }
  return { cookie, csrf: csrfToken }
}

const overview = (hub: RunningHub, cookie: string) =>
  fetch(`${hub.url}/dashboard/api/overview`, { headers: { cookie } }).then((r) => r.status)

async function signOut(hub: RunningHub, s: { cookie: string; csrf: string }): Promise<void> {
  const res = await fetch(`${hub.url}/dashboard/signout`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'x-csrf-token': s.csrf },
  })
  assert.equal(res.status, 204)
}

const start = (env: Record<string, string>) =>
  startHub(
    loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', BATON_ADMIN_TOKEN: TOKEN, ...env }),
    { log: pino({ level: 'silent' }) },
  )

for (const store of testStores) {
  describe(`dashboard sign-out holds everywhere (${store.name})`, () => {
    test('a signed-out cookie stays refused after a restart', async () => {
      const db = await store.fresh()
      try {
        let hub = await start(db.env)
        const session = await signIn(hub)
        assert.equal(await overview(hub, session.cookie), 200)
        await signOut(hub, session)
        assert.equal(await overview(hub, session.cookie), 401)
        await hub.stop()
        hub = await start(db.env)
        try {
          assert.equal(await overview(hub, session.cookie), 401)
          const fresh = await signIn(hub)
          assert.equal(await overview(hub, fresh.cookie), 200, 'other sessions are untouched')
        } finally {
          await hub.stop()
        }
      } finally {
        await db.drop()
      }
    })
  })
}

describe('dashboard sign-out holds everywhere (two instances on postgres)', {
  skip: onPostgres.skip,
}, () => {
  test('signing out on one instance refuses the cookie on the other', async () => {
    const db = await onPostgres.store!.fresh()
    const a = await start(db.env)
    const b = await start(db.env)
    try {
      const session = await signIn(a)
      assert.equal(await overview(b, session.cookie), 200, 'one cookie works on every instance')
      await signOut(a, session)
      let status = await overview(b, session.cookie)
      for (let i = 0; i < 100 && status !== 401; i++) {
        await new Promise((r) => setTimeout(r, 100))
        status = await overview(b, session.cookie)
      }
      assert.equal(status, 401)
    } finally {
      await a.stop()
      await b.stop()
      await db.drop()
    }
  })
})
