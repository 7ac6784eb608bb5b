import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { diffJson } from '../src/web/diff.js'
import { toDashboardEvent } from '../src/web/events.js'
import { parseCookies, SESSION_TTL_MS, SessionKeeper, SignInLimiter } from '../src/web/session.js'
import { call, startTestHub, testStores } from './support.js'

const TOKEN = 'operator-token-for-the-dashboard-server-tests-42'

describe('dashboard diffs', () => {
  test('walks objects by key and arrays by index, naming each change by path', () => {
    const before = { status: 'open', tags: ['a'], nested: { n: 1, gone: true }, 'odd key': 1 }
    const after = { status: 'done', tags: ['a', 'b'], nested: { n: 2 }, 'odd key': 1, added: null }
    assert.deepEqual(diffJson(before, after), [
      { op: 'change', path: '$.status', before: 'open', after: 'done' },
      { op: 'add', path: '$.tags[1]', after: 'b' },
      { op: 'change', path: '$.nested.n', before: 1, after: 2 },
      { op: 'remove', path: '$.nested.gone', before: true },
      { op: 'add', path: '$.added', after: null },
    ])
  })

  test('equal values have no changes; a type change is one change; the list is capped', () => {
    assert.deepEqual(diffJson({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }), [])
    assert.deepEqual(diffJson({ a: [1] }, { a: { 0: 1 } }), [
      { op: 'change', path: '$.a', before: [1], after: { 0: 1 } },
    ])
    assert.deepEqual(diffJson({ 'a.b': 1 }, {}), [{ op: 'remove', path: '$["a.b"]', before: 1 }])
    const big = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i]))
    assert.equal(diffJson({}, big, 50).length, 50)
  })
})

describe('dashboard sessions', () => {
  const now = Date.UTC(2026, 10, 30, 12)

  test('a signed cookie verifies until expiry, and not after tampering, sign-out or a new token', () => {
    const keeper = new SessionKeeper(TOKEN)
    const { cookie, session } = keeper.issue(now)
    assert.deepEqual(keeper.verify(cookie, now + 1000), session)
    assert.equal(keeper.verify(cookie, now + SESSION_TTL_MS), undefined, 'expired')
    const [v, exp, id, mac] = cookie.split('.')
    assert.equal(keeper.verify(`${v}.${Number(exp) + 1}.${id}.${mac}`, now), undefined)
    assert.equal(keeper.verify(`${v}.${exp}.${id}x.${mac}`, now), undefined)
    assert.equal(keeper.verify(`${cookie}x`, now), undefined)
    assert.equal(keeper.verify('', now), undefined)
    assert.equal(new SessionKeeper(`${TOKEN}!`).verify(cookie, now), undefined)
    const other = new SessionKeeper(TOKEN)
    assert.deepEqual(other.verify(cookie, now), session, 'another instance with the same token')
    keeper.end(session, now)
    assert.equal(keeper.verify(cookie, now), undefined, 'signed out')
  })

  test('the CSRF token is bound to its session', () => {
    const keeper = new SessionKeeper(TOKEN)
    const a = keeper.issue(now).session
    const b = keeper.issue(now).session
    assert.ok(keeper.checkCsrf(a, keeper.csrfToken(a)))
    assert.ok(!keeper.checkCsrf(a, keeper.csrfToken(b)))
    assert.ok(!keeper.checkCsrf(a, undefined))
    assert.ok(!keeper.checkCsrf(a, ''))
  })

  test('failed sign-ins are limited per address; success clears the count', () => {
    const limiter = new SignInLimiter(3, 60_000)
    for (let i = 0; i < 3; i++) {
      assert.equal(limiter.retryAfter('1.2.3.4', now), 0)
      limiter.fail('1.2.3.4', now)
    }
    assert.equal(limiter.retryAfter('1.2.3.4', now), 60)
    assert.equal(limiter.retryAfter('5.6.7.8', now), 0)
    assert.equal(limiter.retryAfter('1.2.3.4', now + 60_000), 0, 'the window passed')
    limiter.succeed('1.2.3.4')
    assert.equal(limiter.retryAfter('1.2.3.4', now), 0)
  })

  test('cookies parse by name, first one wins', () => {
    assert.deepEqual(parseCookies('a=1; b=x=y;a=2; junk'), { a: '1', b: 'x=y' })
    assert.deepEqual(parseCookies(undefined), {})
  })
})

describe('dashboard events', () => {
  test('an event reaches the browser as type, topic and ids, never its payload', () => {
    const ev = toDashboardEvent({
      topic: 'handoff:ho_1',
      type: 'handoff.moved',
      at: 5,
      data: { handoff_id: 'ho_1', state: 'done', version: 3, payload: { secret: 1 }, token: 't' },
    })
    assert.deepEqual(ev, {
      type: 'handoff.moved',
      topic: 'handoff:ho_1',
      at: 5,
      ids: { handoff_id: 'ho_1', state: 'done', version: 3 },
    })
  })
})

for (const store of testStores) {
  describe(`dashboard server (${store.name})`, () => {
    test('the event stream forwards bus events, and shutdown ends open streams', async () => {
      // A very long grace: if open streams held shutdown, this test would time out.
      const hub = await startTestHub(store, {
        BATON_ADMIN_TOKEN: TOKEN,
        BATON_SHUTDOWN_GRACE_MS: '600000',
      })
      let closed = false
      try {
        const signIn = await call(hub, 'POST', '/dashboard/session', { body: { token: TOKEN } })
        assert.equal(signIn.status, 200)
        const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
        const res = await fetch(`${hub.url}/dashboard/events`, { headers: { cookie } })
        assert.equal(res.status, 200)
        assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/)
        assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/)
        const reader = res.body!.getReader()
        const decoder = new TextDecoder()
        let text = ''
        const readUntil = async (needle: string) => {
          while (!text.includes(needle)) {
            const { value, done } = await reader.read()
            if (done) return false
            text += decoder.decode(value)
          }
          return true
        }
        assert.ok(await readUntil(': connected'))
        hub.ctx.bus.publish({
          topic: 'resource:rs_1',
          type: 'resource.updated',
          at: 1,
          data: { resourceId: 'rs_1', version: 2, actor: 'did:key:z', data: 'SECRET' },
        })
        assert.ok(await readUntil('resource.updated'))
        assert.ok(!text.includes('SECRET'))
        await hub.close()
        closed = true
        // The stream ends at shutdown instead of holding the hub open.
        while (true) {
          const { done } = await reader.read().catch(() => ({ done: true }))
          if (done) break
        }
      } finally {
        if (!closed) await hub.close()
      }
    })

    test('sign-in attempts are rate-limited per address; the CSRF header guards decisions', async () => {
      const hub = await startTestHub(store, { BATON_ADMIN_TOKEN: TOKEN })
      try {
        const ok = await call(hub, 'POST', '/dashboard/session', { body: { token: TOKEN } })
        const cookie = (ok.headers.get('set-cookie') ?? '').split(';')[0]!
        const session = await call(hub, 'GET', '/dashboard/api/session', { headers: { cookie } })
        const csrf = session.body.csrfToken as string
        const decide = (headers: Record<string, string>) =>
          call(hub, 'POST', '/dashboard/api/principals/did:key:zUnknown/approve', {
            headers: { cookie, ...headers },
          })
        assert.equal((await decide({})).body.code, 'csrf_token_invalid')
        assert.equal((await decide({ 'x-csrf-token': `${csrf}x` })).body.code, 'csrf_token_invalid')
        assert.equal(
          (await decide({ 'x-csrf-token': csrf, origin: 'https://evil.example' })).body.code,
          'csrf_token_invalid',
        )
        // With the token, the decision reaches the identity service (which knows no such key).
        assert.equal((await decide({ 'x-csrf-token': csrf })).body.code, 'principal_not_found')

        for (let i = 0; i < 10; i++) {
          const wrong = await call(hub, 'POST', '/dashboard/session', {
            body: { token: 'y'.repeat(40) },
          })
          assert.equal(wrong.status, 401)
        }
        const limited = await call(hub, 'POST', '/dashboard/session', { body: { token: TOKEN } })
        assert.equal(limited.status, 429)
        assert.equal(limited.body.code, 'rate_limited')
        assert.ok(Number(limited.headers.get('retry-after')) > 0)
      } finally {
        await hub.close()
      }
    })
  })
}
