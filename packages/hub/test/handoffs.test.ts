import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ManualClock } from '../src/clock.js'
import { call, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

/** Resolves once `done()` holds, checking every few milliseconds for at most 10 s. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.ok(done(), 'the condition never held')
}

for (const store of testStores) {
  describe(`token handoffs over HTTP (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    before(async () => {
      hub = await startTestHub(store, { BATON_HANDOFF_DAILY_QUOTA: '100000' }, { clock })
    })
    after(() => hub.close())

    async function create(body: unknown = { payload: { task: 'translate', words: 120 } }) {
      const res = await call(hub, 'POST', H, { body })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body as {
        handoff_id: string
        owner_token: string
        receiver_token: string
        version: number
      }
    }

    test('create answers 201 with id, both tokens, state, version, machine and expiry', async () => {
      const res = await call(hub, 'POST', H, {
        body: { payload: { task: 'translate', words: 120 }, note: 'from the planner' },
      })
      assert.equal(res.status, 201)
      const b = res.body
      assert.match(String(b.handoff_id), /^ho_/)
      assert.match(String(b.owner_token), /^hot_o_[A-Za-z0-9_-]{43}$/)
      assert.match(String(b.receiver_token), /^hot_r_[A-Za-z0-9_-]{43}$/)
      assert.equal(b.state, 'offered')
      assert.equal(b.version, 1)
      assert.equal(b.ended, false)
      assert.deepEqual((b.machine as { final: string[] }).final, ['done', 'failed', 'returned'])
      assert.equal(b.expires_at, new Date(clock.now() + 24 * 3600 * 1000).toISOString())
    })

    test('tokens are stored only as hashes', async () => {
      const h = await create()
      const row = await hub.ctx.database.db
        .selectFrom('handoffs')
        .selectAll()
        .where('id', '=', h.handoff_id)
        .executeTakeFirstOrThrow()
      assert.ok(!JSON.stringify(row).includes(h.owner_token))
      assert.ok(!JSON.stringify(row).includes(h.receiver_token))
      assert.notEqual(row.owner_token_hash, row.receiver_token_hash)
    })

    test('both tokens read; the history records which token moved', async () => {
      const h = await create({ payload: { a: 1 }, note: 'n' })
      const m1 = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body: { from: 'offered', nonce: 'r-1', note: 'taking it' },
      })
      assert.equal(m1.status, 200)
      assert.equal(m1.body.by, 'receiver')
      const m2 = await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'accepted' },
      })
      assert.equal(m2.body.by, 'owner')
      for (const token of [h.owner_token, h.receiver_token]) {
        const r = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token })
        assert.equal(r.status, 200)
        assert.equal(r.body.state, 'working')
        assert.equal(r.body.version, 3)
        assert.equal(r.body.ended, false)
        assert.deepEqual(r.body.payload, { a: 1 })
        assert.equal(r.body.note, 'n')
        assert.deepEqual(r.body.allowed_next, ['done', 'failed', 'returned'])
        const history = r.body.history as Record<string, unknown>[]
        assert.equal(history.length, 2)
        assert.deepEqual(
          history.map((m) => [m.from, m.to, m.version, m.by, m.nonce, m.note]),
          [
            ['offered', 'accepted', 2, 'receiver', 'r-1', 'taking it'],
            ['accepted', 'working', 3, 'owner', null, null],
          ],
        )
      }
    })

    test('a move from the wrong state is 409 naming the real state, version and ended', async () => {
      const h = await create()
      await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      const res = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      assert.equal(res.status, 409)
      assert.equal(res.body.code, 'state_conflict')
      assert.equal(res.body.state, 'working')
      assert.equal(res.body.version, 2)
      assert.equal(res.body.ended, false)
      assert.equal(typeof res.body.error, 'string')
      assert.equal(typeof res.body.fix, 'string')
    })

    test('a backward or sideways step from the right state is 409 transition_not_allowed', async () => {
      const h = await create()
      await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      const back = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'working' },
      })
      assert.equal(back.status, 409)
      assert.equal(back.body.code, 'transition_not_allowed')
      assert.equal(back.body.state, 'working')
      assert.equal(back.body.version, 2)
      const same = await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'working' },
      })
      assert.equal(same.body.code, 'transition_not_allowed')
    })

    test('a final state ends the handoff; every further move is 409 with ended', async () => {
      const h = await create()
      const done = await call(hub, 'POST', `${H}/${h.handoff_id}/done`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      assert.equal(done.body.ended, true)
      const again = await call(hub, 'POST', `${H}/${h.handoff_id}/failed`, {
        token: h.owner_token,
        body: { from: 'done' },
      })
      assert.equal(again.status, 409)
      assert.equal(again.body.ended, true)
      assert.equal(again.body.state, 'done')
    })

    test('a repeat with the same nonce answers the committed move with repeated: true', async () => {
      const h = await create()
      const body = { from: 'offered', nonce: 'lost-answer-1' }
      const first = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body,
      })
      assert.equal(first.status, 200)
      assert.equal(first.body.repeated, false)
      // The handoff moves on before the retry arrives.
      await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'accepted' },
      })
      const retry = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body,
      })
      assert.equal(retry.status, 200)
      assert.equal(retry.body.repeated, true)
      assert.equal(retry.body.state, 'accepted')
      assert.equal(retry.body.version, 2)
      assert.equal(retry.body.current_state, 'working')
      assert.equal(retry.body.current_version, 3)
      assert.equal(retry.body.current_ended, false)
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal((read.body.history as unknown[]).length, 2)
    })

    test('the same nonce on a different move is 409 idempotency_conflict and changes nothing', async () => {
      const h = await create()
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'offered', nonce: 'n1' },
      })
      const res = await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'accepted', nonce: 'n1' },
      })
      assert.equal(res.status, 409)
      assert.equal(res.body.code, 'idempotency_conflict')
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.state, 'accepted')
    })

    test('unknown state names are 400 unknown_state', async () => {
      const h = await create()
      const to = await call(hub, 'POST', `${H}/${h.handoff_id}/nowhere`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      assert.equal(to.status, 400)
      assert.equal(to.body.code, 'unknown_state')
      const from = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'nowhere' },
      })
      assert.equal(from.body.code, 'unknown_state')
      assert.equal(from.body.field, 'from')
    })

    test('missing token 401; wrong token and unknown id answer the same 404', async () => {
      const h = await create()
      const none = await call(hub, 'GET', `${H}/${h.handoff_id}`)
      assert.equal(none.status, 401)
      assert.equal(none.body.code, 'token_missing')
      const basic = await call(hub, 'GET', `${H}/${h.handoff_id}`, {
        headers: { authorization: 'Basic abc' },
      })
      assert.equal(basic.body.code, 'token_missing')
      const wrong = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: 'hot_o_wrong' })
      const other = await create()
      const crossed = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: other.owner_token })
      const unknown = await call(hub, 'GET', `${H}/ho_AAAAAAAAAAAAAAAAAAAAAA`, {
        token: h.owner_token,
      })
      const malformed = await call(hub, 'GET', `${H}/not-an-id`, { token: h.owner_token })
      for (const r of [wrong, crossed, unknown, malformed]) {
        assert.equal(r.status, 404)
        assert.equal(r.body.code, 'handoff_not_found')
      }
      assert.deepEqual(
        { ...wrong.body, error: '' },
        { ...unknown.body, error: '' },
        'a wrong token reveals nothing an unknown id does not',
      )
      const move = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: other.receiver_token,
        body: { from: 'offered' },
      })
      assert.equal(move.status, 404)
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.version, 1)
    })

    test('a caller that leaves a wait releases it before the wait is up', async () => {
      const h = await create()
      const waiting = hub.ctx.waits.waiting
      const leave = new AbortController()
      const pending = fetch(`${hub.url}${H}/${h.handoff_id}/wait/25`, {
        headers: { authorization: `Bearer ${h.receiver_token}` },
        signal: leave.signal,
      }).catch((error: unknown) => error)
      await until(() => hub.ctx.waits.waiting === waiting + 1)
      leave.abort()
      assert.equal(((await pending) as Error).name, 'AbortError')
      // Its 25 s are not up within the bound of `until`: only the closed connection ends it.
      await until(() => hub.ctx.waits.waiting === waiting)
    })

    test('payload boundary: exactly 16384 bytes of JSON accepted, 16385 refused with 413', async () => {
      const overhead = JSON.stringify({ s: '' }).length
      const exact = { s: 'x'.repeat(16384 - overhead) }
      assert.equal(Buffer.byteLength(JSON.stringify(exact)), 16384)
      const ok = await call(hub, 'POST', H, { body: { payload: exact } })
      assert.equal(ok.status, 201)
      const over = { s: 'x'.repeat(16385 - overhead) }
      const res = await call(hub, 'POST', H, { body: { payload: over } })
      assert.equal(res.status, 413)
      assert.equal(res.body.code, 'payload_too_large')
      const multibyte = { s: 'é'.repeat(8192) }
      const mb = await call(hub, 'POST', H, { body: { payload: multibyte } })
      assert.equal(mb.status, 413, 'size is counted in UTF-8 bytes, not characters')
    })

    test('payload may be any JSON but null', async () => {
      for (const payload of [0, 'text', false, [], [1, { a: null }], { deep: { er: [true] } }]) {
        const res = await call(hub, 'POST', H, { body: { payload } })
        assert.equal(res.status, 201, JSON.stringify(payload))
        const read = await call(hub, 'GET', `${H}/${res.body.handoff_id}`, {
          token: String(res.body.owner_token),
        })
        assert.deepEqual(read.body.payload, payload)
      }
      for (const body of [{ payload: null }, {}]) {
        const res = await call(hub, 'POST', H, { body })
        assert.equal(res.status, 400)
        assert.equal(res.body.code, 'invalid_request')
        assert.equal(res.body.field, 'payload')
      }
    })

    test('note: at most 500 characters', async () => {
      assert.equal(
        (await call(hub, 'POST', H, { body: { payload: 1, note: 'n'.repeat(500) } })).status,
        201,
      )
      const res = await call(hub, 'POST', H, { body: { payload: 1, note: 'n'.repeat(501) } })
      assert.equal(res.status, 400)
      assert.equal(res.body.field, 'note')
      const move = await create()
      const long = await call(hub, 'POST', `${H}/${move.handoff_id}/accepted`, {
        token: move.owner_token,
        body: { from: 'offered', note: 'n'.repeat(501) },
      })
      assert.equal(long.status, 400)
    })

    test("a custom machine moves only forward over its declared steps (the seed's example)", async () => {
      const h = await create({
        payload: { draft_id: 42 },
        states: ['draft', 'review', 'published', 'rejected'],
        final: ['published', 'rejected'],
        transitions: { draft: ['review'] },
      })
      const skip = await call(hub, 'POST', `${H}/${h.handoff_id}/published`, {
        token: h.owner_token,
        body: { from: 'draft' },
      })
      assert.equal(skip.status, 409)
      assert.equal(skip.body.code, 'transition_not_allowed')
      assert.deepEqual(skip.body.allowed_next, ['review'])
      const review = await call(hub, 'POST', `${H}/${h.handoff_id}/review`, {
        token: h.owner_token,
        body: { from: 'draft' },
      })
      assert.equal(review.status, 200)
      const pub = await call(hub, 'POST', `${H}/${h.handoff_id}/published`, {
        token: h.receiver_token,
        body: { from: 'review' },
      })
      assert.equal(pub.body.ended, true)
      const offered = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'review' },
      })
      assert.equal(offered.body.code, 'unknown_state', 'default states are not in a custom machine')
    })

    test('invalid machines are 400 invalid_machine and create nothing', async () => {
      const before = await countHandoffs(hub)
      for (const m of [
        { states: ['a', 'b', 'a'] },
        { states: ['a', 'b'], final: ['c'] },
        { states: ['a', 'b', 'c'], transitions: { b: ['a'] } },
        { states: ['a', 'b'], final: ['a'] },
        { states: ['a', 'b'], transitions: { z: ['b'] } },
      ]) {
        const res = await call(hub, 'POST', H, { body: { payload: 1, ...m } })
        assert.equal(res.status, 400, JSON.stringify(m))
        assert.equal(res.body.code, 'invalid_machine')
        assert.equal(typeof res.body.field, 'string')
      }
      // How many states a machine may have is a shape, published in the schema (maxItems).
      const many = await call(hub, 'POST', H, {
        body: { payload: 1, states: Array.from({ length: 13 }, (_, i) => `s${i}`) },
      })
      assert.equal(many.status, 400)
      assert.equal(many.body.code, 'invalid_request')
      assert.equal(many.body.field, 'states')
      assert.equal(await countHandoffs(hub), before)
    })

    test('bad input is a 4xx with a stable code and changes nothing', async () => {
      const h = await create()
      const before = await countHandoffs(hub)
      const cases: [string, string, Parameters<typeof call>[3], number, string][] = [
        ['POST', H, { raw: '{"payload": ' }, 400, 'invalid_json'],
        [
          'POST',
          H,
          { raw: '', headers: { 'content-type': 'application/json' } },
          400,
          'invalid_request',
        ],
        [
          'POST',
          H,
          { raw: 'payload=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
          415,
          'unsupported_media_type',
        ],
        [
          'POST',
          H,
          { raw: '{"payload":1}', headers: { 'content-type': 'text/plain' } },
          415,
          'unsupported_media_type',
        ],
        [
          'POST',
          H,
          { raw: JSON.stringify({ payload: 'x'.repeat(70_000) }) },
          413,
          'body_too_large',
        ],
        ['POST', H, { body: [1, 2] }, 400, 'invalid_request'],
        [
          'POST',
          H,
          { raw: `{"payload":${'['.repeat(20_000)}${']'.repeat(20_000)}}` },
          400,
          'invalid_request',
        ],
        ['POST', H, { body: 'payload' }, 400, 'invalid_request'],
        ['POST', H, { body: { payload: 1, extra: true } }, 400, 'unknown_field'],
        ['POST', H, { body: { payload: 1, note: 5 } }, 400, 'invalid_request'],
        ['POST', H, { body: { payload: 1, states: 'a,b' } }, 400, 'invalid_request'],
        [
          'POST',
          H,
          { body: { payload: 1, notify_url: 'ftp://example.com/x' } },
          400,
          'invalid_notify_url',
        ],
        [
          'POST',
          H,
          { body: { payload: 1, notify_url: 'http://10.0.0.1/x' } },
          400,
          'invalid_notify_url',
        ],
        ['POST', H, { body: { payload: 1, notify_url: 'not a url' } }, 400, 'invalid_notify_url'],
        [
          'POST',
          H,
          { body: { payload: 1 }, headers: { 'idempotency-key': 'short' } },
          400,
          'invalid_request',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          { token: h.owner_token, raw: '{' },
          400,
          'invalid_json',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          { token: h.owner_token, body: {} },
          400,
          'invalid_request',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          { token: h.owner_token, body: { from: 1 } },
          400,
          'invalid_request',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          { token: h.owner_token, body: { from: 'offered', x: 1 } },
          400,
          'unknown_field',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          { token: h.owner_token, body: { from: 'offered', nonce: 'has space' } },
          400,
          'invalid_request',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/accepted`,
          {
            token: h.owner_token,
            raw: '{"from":"offered"}',
            headers: { 'content-type': 'text/plain' },
          },
          415,
          'unsupported_media_type',
        ],
        [
          'POST',
          `${H}/${h.handoff_id}/acc%00epted`,
          { token: h.owner_token, body: { from: 'offered' } },
          400,
          'invalid_text',
        ],
        [
          'POST',
          `${H}/${'x'.repeat(60)}/accepted`,
          { token: h.owner_token, body: { from: 'offered' } },
          404,
          'handoff_not_found',
        ],
        [
          'POST',
          `${H}/${'x'.repeat(300)}/accepted`,
          { token: h.owner_token, body: { from: 'offered' } },
          414,
          'uri_too_long',
        ],
        ['GET', `${H}/${h.handoff_id}/wait/abc`, { token: h.owner_token }, 400, 'invalid_request'],
        ['GET', `${H}/${h.handoff_id}/wait/-1`, { token: h.owner_token }, 400, 'invalid_request'],
        [
          'GET',
          `${H}/${h.handoff_id}/wait/1?version=x`,
          { token: h.owner_token },
          400,
          'invalid_request',
        ],
        [
          'PUT',
          `${H}/${h.handoff_id}`,
          { token: h.owner_token, body: {} },
          405,
          'method_not_allowed',
        ],
        ['GET', '/nope', {}, 404, 'not_found'],
      ]
      for (const [method, path, opts, status, code] of cases) {
        const res = await call(hub, method, path, opts)
        assert.equal(
          res.status,
          status,
          `${method} ${path.slice(0, 80)} ${JSON.stringify(opts).slice(0, 80)} -> ${JSON.stringify(res.body)}`,
        )
        assert.equal(res.body.code, code, `${method} ${path.slice(0, 80)}`)
        assert.equal(typeof res.body.error, 'string')
        assert.equal(typeof res.body.fix, 'string')
        assert.ok(!JSON.stringify(res.body).includes('    at '), 'no stack trace')
      }
      assert.equal(await countHandoffs(hub), before)
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.version, 1)
    })

    test('Idempotency-Key on create: same key and body answers the first result; other body 409', async () => {
      const key = 'create-key-0001'
      const body = { payload: { job: 7 } }
      const a = await call(hub, 'POST', H, { body, headers: { 'idempotency-key': key } })
      const b = await call(hub, 'POST', H, { body, headers: { 'idempotency-key': key } })
      assert.equal(a.status, 201)
      assert.equal(b.status, 201)
      assert.deepEqual(b.body, a.body)
      const c = await call(hub, 'POST', H, {
        body: { payload: { job: 8 } },
        headers: { 'idempotency-key': key },
      })
      assert.equal(c.status, 409)
      assert.equal(c.body.code, 'idempotency_conflict')
      const stored = await hub.ctx.database.db.selectFrom('idempotency_keys').selectAll().execute()
      assert.ok(
        !JSON.stringify(stored).includes(String(a.body.owner_token)),
        'answers are stored encrypted',
      )
    })

    test('expiry: 24 h after creation reads and moves answer 410, after cleanup 404', async () => {
      const h = await create()
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      clock.advance(24 * 3600 * 1000 - 1)
      assert.equal(
        (await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })).status,
        200,
      )
      clock.advance(1)
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.receiver_token })
      assert.equal(read.status, 410)
      assert.equal(read.body.code, 'handoff_expired')
      const move = await call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
        token: h.owner_token,
        body: { from: 'accepted' },
      })
      assert.equal(move.status, 410)
      const wait = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1`, { token: h.owner_token })
      assert.equal(wait.status, 410)
      await hub.ctx.runCleanup()
      const gone = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(gone.status, 404)
      assert.equal(gone.body.code, 'handoff_not_found')
      const moves = await hub.ctx.database.db
        .selectFrom('handoff_moves')
        .selectAll()
        .where('handoff_id', '=', h.handoff_id)
        .execute()
      assert.equal(moves.length, 0)
    })

    test('activity does not extend expiry', async () => {
      const h = await create()
      const created = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      clock.advance(3600 * 1000)
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      const later = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(later.body.expires_at, created.body.expires_at)
    })

    test('200 concurrent HTTP racers for one move: exactly one winner, 199 conflicts naming it', async () => {
      const h = await create()
      const targets = ['accepted', 'working', 'done', 'failed', 'returned']
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          call(hub, 'POST', `${H}/${h.handoff_id}/${targets[i % targets.length]}`, {
            token: i % 2 ? h.owner_token : h.receiver_token,
            body: { from: 'offered' },
          }),
        ),
      )
      const winners = results.filter((r) => r.status === 200)
      const losers = results.filter((r) => r.status === 409)
      assert.equal(winners.length, 1)
      assert.equal(losers.length, 199)
      const won = winners[0]!.body.state
      for (const l of losers) {
        assert.equal(l.body.code, 'state_conflict')
        assert.equal(l.body.state, won)
        assert.equal(l.body.version, 2)
      }
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal((read.body.history as unknown[]).length, 1)
    })

    test('moves in batches of a size seen before write exactly what each move asked', async () => {
      // Batch statements are compiled once per size; later batches bind only their parameters.
      const hs = await Promise.all(Array.from({ length: 12 }, () => create()))
      const ask = (i: number, step: number) => ({
        from: step === 0 ? 'offered' : 'accepted',
        nonce: `n-${i}-${step}`,
        note: `note ${i}.${step}`,
      })
      for (let i = 0; i < 4; i++) {
        const res = await call(hub, 'POST', `${H}/${hs[i]!.handoff_id}/accepted`, {
          token: hs[i]!.receiver_token,
          body: ask(i, 0),
        })
        assert.equal(res.status, 200, JSON.stringify(res.body))
      }
      const rest = await Promise.all(
        hs.slice(4).map((h, j) =>
          call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
            token: h.receiver_token,
            body: ask(j + 4, 0),
          }),
        ),
      )
      assert.ok(rest.every((r) => r.status === 200))
      const second = await Promise.all(
        hs.map((h, i) =>
          call(hub, 'POST', `${H}/${h.handoff_id}/working`, {
            token: i % 2 ? h.owner_token : h.receiver_token,
            body: ask(i, 1),
          }),
        ),
      )
      assert.ok(second.every((r) => r.status === 200))
      for (const [i, h] of hs.entries()) {
        const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
        assert.equal(read.body.state, 'working')
        assert.equal(read.body.version, 3)
        const history = (read.body.history as Record<string, unknown>[]).map(
          ({ at: _at, ...m }) => m,
        )
        assert.deepEqual(history, [
          { from: 'offered', to: 'accepted', version: 2, by: 'receiver', ...pick(ask(i, 0)) },
          {
            from: 'accepted',
            to: 'working',
            version: 3,
            by: i % 2 ? 'owner' : 'receiver',
            ...pick(ask(i, 1)),
          },
        ])
      }
    })

    test('concurrent repeats of one nonce commit once and all answer the same move', async () => {
      const h = await create()
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
            token: h.receiver_token,
            body: { from: 'offered', nonce: 'same' },
          }),
        ),
      )
      assert.ok(results.every((r) => r.status === 200))
      assert.equal(results.filter((r) => r.body.repeated === false).length, 1)
      assert.ok(results.every((r) => r.body.version === 2 && r.body.state === 'accepted'))
    })
  })
}

function pick(a: { nonce: string; note: string }) {
  return { nonce: a.nonce, note: a.note }
}

async function countHandoffs(hub: TestHub): Promise<number> {
  const row = await hub.ctx.database.db
    .selectFrom('handoffs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
