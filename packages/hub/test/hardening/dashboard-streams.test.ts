import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pino from 'pino'
import { loadConfig } from '../../src/config.js'
import { type RunningHub, startHub } from '../../src/hub.js'
import { onPostgres, testStores } from '../support.js'

const TOKEN = 'operator-streams-token-0123456789abcdefgh'

interface Session {
  cookie: string
  csrf: string
}

async function signIn(hub: RunningHub): Promise<Session> {
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

async function signOut(hub: RunningHub, s: Session): Promise<void> {
  const res = await fetch(`${hub.url}/dashboard/signout`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'x-csrf-token': s.csrf },
  })
  assert.equal(res.status, 204)
}

/** An open event stream: what it has sent so far, and a way to read on. */
async function openStream(hub: RunningHub, s: Session) {
  const controller = new AbortController()
  const res = await fetch(`${hub.url}/dashboard/events`, {
    headers: { cookie: s.cookie },
    signal: controller.signal,
  })
  assert.equal(res.status, 200)
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  /** Reads until `needle` arrives (true) or the stream ends (false). */
  const readUntil = async (needle: string) => {
    while (!text.includes(needle)) {
      const { value, done } = await reader.read()
      if (done) return false
      text += decoder.decode(value)
    }
    return true
  }
  assert.ok(await readUntil(': connected'))
  return {
    readUntil,
    text: () => text,
    close: () => controller.abort(),
  }
}

const openStatus = async (hub: RunningHub, s: Session) => {
  const res = await fetch(`${hub.url}/dashboard/events`, { headers: { cookie: s.cookie } })
  const out = {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    code: res.status === 200 ? undefined : ((await res.json()) as { code: string }).code,
  }
  if (res.status === 200) await res.body!.cancel()
  return out
}

/** A change after the sign-out: a stream that still runs would forward it. */
const publishChange = (hub: RunningHub, marker: string) =>
  hub.ctx.bus.publish({
    topic: `resource:${marker}`,
    type: 'resource.updated',
    at: 1,
    data: { resourceId: marker, version: 2 },
  })

const start = (env: Record<string, string>) =>
  startHub(
    loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', BATON_ADMIN_TOKEN: TOKEN, ...env }),
    { log: pino({ level: 'silent' }) },
  )

for (const store of testStores) {
  describe(`dashboard event streams end at sign-out and are capped (${store.name})`, () => {
    test('a stream opened before sign-out ends with it and forwards nothing after', async () => {
      const db = await store.fresh()
      const hub = await start(db.env)
      try {
        const session = await signIn(hub)
        const other = await signIn(hub)
        const streams = [await openStream(hub, session), await openStream(hub, session)]
        const kept = await openStream(hub, other)
        await signOut(hub, session)
        publishChange(hub, 'rs_after_signout')
        for (const s of streams) {
          assert.equal(await s.readUntil('rs_after_signout'), false, 'the stream has ended')
          assert.ok(!s.text().includes('rs_after_signout'))
        }
        assert.equal(await kept.readUntil('rs_after_signout'), true, 'other sessions go on')
        assert.equal((await openStatus(hub, session)).status, 401)
        kept.close()
      } finally {
        await hub.stop()
        await db.drop()
      }
    })

    test('streams are capped per session and in all, answered 429 with Retry-After', async () => {
      const db = await store.fresh()
      const hub = await start({
        ...db.env,
        BATON_DASHBOARD_STREAMS_PER_SESSION: '2',
        BATON_DASHBOARD_STREAMS_MAX: '3',
      })
      try {
        const a = await signIn(hub)
        const b = await signIn(hub)
        const open = [await openStream(hub, a), await openStream(hub, a)]
        const overSession = await openStatus(hub, a)
        assert.equal(overSession.status, 429)
        assert.equal(overSession.code, 'rate_limited')
        assert.ok(Number(overSession.retryAfter) > 0)
        open.push(await openStream(hub, b))
        const overTotal = await openStatus(hub, b)
        assert.equal(overTotal.status, 429)
        assert.equal(overTotal.code, 'rate_limited')
        // A sign-out frees its session's streams for others.
        await signOut(hub, a)
        for (const s of open.slice(0, 2)) assert.equal(await s.readUntil('never'), false)
        const again = await openStream(hub, b)
        assert.equal((await openStatus(hub, b)).status, 429, 'b now holds its two')
        again.close()
        open[2]!.close()
      } finally {
        await hub.stop()
        await db.drop()
      }
    })
  })
}

describe('dashboard event streams end at sign-out on every instance (two on postgres)', {
  skip: onPostgres.skip,
}, () => {
  test('signing out on one instance ends the session’s streams on the other', async () => {
    const db = await onPostgres.store!.fresh()
    const a = await start(db.env)
    const b = await start(db.env)
    try {
      const session = await signIn(a)
      const onB = await openStream(b, session)
      await signOut(a, session)
      // Wait until b has heard of the sign-out (its cookie refused), then change something.
      let status = (await openStatus(b, session)).status
      for (let i = 0; i < 100 && status !== 401; i++) {
        await new Promise((r) => setTimeout(r, 100))
        status = (await openStatus(b, session)).status
      }
      assert.equal(status, 401)
      publishChange(b, 'rs_after_remote_signout')
      assert.equal(await onB.readUntil('rs_after_remote_signout'), false)
    } finally {
      await a.stop()
      await b.stop()
      await db.drop()
    }
  })
})
