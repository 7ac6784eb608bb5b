import assert from 'node:assert/strict'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { checkNotifyUrl, isDeliverableAddress, postSignal } from '../src/handoffs/notify.js'
import { call, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

async function create(hub: TestHub, extra: Record<string, unknown> = {}) {
  const res = await call(hub, 'POST', H, { body: { payload: { t: 1 }, ...extra } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body as { handoff_id: string; owner_token: string; receiver_token: string }
}

/** A real HTTP server that records what it receives. */
async function receiver(status = 200) {
  const got: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = []
  const waiters: (() => void)[] = []
  const server = createServer((req, res) => {
    let data = ''
    req.on('data', (c) => {
      data += c
    })
    req.on('end', () => {
      got.push({ headers: req.headers, body: JSON.parse(data) })
      res.writeHead(status, status === 302 ? { location: 'http://127.0.0.1:1/' } : {}).end()
      for (const w of waiters.splice(0)) w()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    got,
    next: () => new Promise<void>((r) => waiters.push(r)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

for (const store of testStores) {
  describe(`handoff waits and notify signals (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_NOTIFY_ALLOW_LOOPBACK: 'true' })
    })
    after(() => hub.close())

    test('a wait answers as soon as the other side moves', async () => {
      const h = await create(hub)
      const held = hub.ctx.waits.waiting
      const waiting = call(hub, 'GET', `${H}/${h.handoff_id}/wait/20`, { token: h.owner_token })
      await hub.ctx.waits.untilWaiting(held + 1)
      const started = Date.now()
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body: { from: 'offered' },
      })
      const res = await waiting
      assert.equal(res.status, 200)
      assert.equal(res.body.changed, true)
      assert.equal(res.body.state, 'accepted')
      assert.equal(res.body.version, 2)
      // A wait that missed the move would answer the same at its 20 s deadline: half of it is
      // a bound no scheduling delay reaches, and a missed wake always does.
      assert.ok(Date.now() - started < 10_000, 'woken by the move, not by the timeout')
    })

    test('the waiters one move wakes get the same JSON octets, per token', async () => {
      const h = await create(hub)
      const waitFor = (token: string) =>
        fetch(`${hub.url}${H}/${h.handoff_id}/wait/20`, {
          headers: { authorization: `Bearer ${token}` },
        }).then(async (res) => ({
          status: res.status,
          type: res.headers.get('content-type'),
          length: Number(res.headers.get('content-length')),
          text: await res.text(),
        }))
      const held = hub.ctx.waits.waiting
      const owners = Array.from({ length: 12 }, () => waitFor(h.owner_token))
      const receivers = Array.from({ length: 12 }, () => waitFor(h.receiver_token))
      await hub.ctx.waits.untilWaiting(held + 24)
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body: { from: 'offered' },
      })
      for (const group of [await Promise.all(owners), await Promise.all(receivers)]) {
        for (const answer of group) {
          assert.equal(answer.status, 200)
          assert.equal(answer.type, 'application/json; charset=utf-8')
          assert.equal(answer.length, Buffer.byteLength(answer.text))
          assert.equal(answer.text, group[0]!.text)
        }
        const body = JSON.parse(group[0]!.text)
        assert.deepEqual([body.state, body.version, body.changed], ['accepted', 2, true])
        // the same fields as a plain read of the handoff, and `changed`
        const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
        assert.deepEqual(Object.keys(body).sort(), [...Object.keys(read.body), 'changed'].sort())
      }
    })

    test('a change between read and wait is not missed: version answers at once', async () => {
      const h = await create(hub)
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body: { from: 'offered' },
      })
      const res = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/25?version=1`, {
        token: h.owner_token,
      })
      assert.equal(res.body.changed, true)
      assert.equal(res.body.version, 2)
    })

    test('an ended handoff answers a wait at once', async () => {
      const h = await create(hub)
      await call(hub, 'POST', `${H}/${h.handoff_id}/done`, {
        token: h.receiver_token,
        body: { from: 'offered' },
      })
      const res = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/25`, { token: h.owner_token })
      assert.equal(res.body.ended, true)
      assert.equal(res.body.changed, false)
    })

    test('a wait with no change times out with changed: false', async () => {
      const h = await create(hub)
      const res = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1`, { token: h.owner_token })
      assert.equal(res.status, 200)
      assert.equal(res.body.changed, false)
      assert.equal(res.body.version, 1)
    })

    test('waits longer than 25 s are clamped, not refused', async () => {
      const h = await create(hub)
      const held = hub.ctx.waits.waiting
      const waiting = call(hub, 'GET', `${H}/${h.handoff_id}/wait/3600`, { token: h.owner_token })
      await hub.ctx.waits.untilWaiting(held + 1)
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token,
        body: { from: 'offered' },
      })
      assert.equal((await waiting).body.changed, true)
    })

    test('waits check the token like reads', async () => {
      const h = await create(hub)
      assert.equal((await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1`)).status, 401)
      const wrong = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1`, { token: 'hot_o_nope' })
      assert.equal(wrong.status, 404)
    })

    test('notify_url receives a small signal after each move: no payload, no token', async () => {
      const hook = await receiver()
      try {
        const h = await create(hub, { notify_url: hook.url, payload: { secret: 'payload-text' } })
        const first = hook.next()
        await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
          token: h.receiver_token,
          body: { from: 'offered' },
        })
        await first
        const second = hook.next()
        await call(hub, 'POST', `${H}/${h.handoff_id}/done`, {
          token: h.receiver_token,
          body: { from: 'accepted' },
        })
        await second
        assert.equal(hook.got.length, 2)
        const [a, b] = hook.got
        // The signal carries a stable event id (reliable notify) besides the seed's fields.
        assert.deepEqual(Object.keys(a!.body).sort(), [
          'at',
          'ended',
          'event_id',
          'handoff_id',
          'state',
          'version',
        ])
        assert.deepEqual(
          { ...a!.body, at: undefined, event_id: undefined },
          {
            handoff_id: h.handoff_id,
            state: 'accepted',
            version: 2,
            ended: false,
            at: undefined,
            event_id: undefined,
          },
        )
        assert.notEqual(a!.body.event_id, b!.body.event_id)
        assert.equal(b!.body.state, 'done')
        assert.equal(b!.body.ended, true)
        const raw = JSON.stringify(hook.got)
        assert.ok(!raw.includes('payload-text'))
        assert.ok(!raw.includes(h.owner_token) && !raw.includes(h.receiver_token))
        assert.equal(a!.headers['content-type'], 'application/json')
      } finally {
        await hook.close()
      }
    })

    test('a notify signal carries the trace context of the move it tells of', async () => {
      const hook = await receiver()
      try {
        const h = await create(hub, { notify_url: hook.url })
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
        const tracestate = 'rojo=00f067aa0ba902b7'
        const first = hook.next()
        await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
          token: h.receiver_token,
          body: { from: 'offered' },
          headers: { traceparent, tracestate },
        })
        await first
        const second = hook.next()
        const untraced = await call(hub, 'POST', `${H}/${h.handoff_id}/done`, {
          token: h.receiver_token,
          body: { from: 'accepted' },
        })
        await second
        const [a, b] = hook.got
        assert.equal(a!.headers.traceparent, traceparent)
        assert.equal(a!.headers.tracestate, tracestate)
        // A move sent without trace context was put in a trace of the hub's own, its answer's.
        assert.equal(b!.headers.traceparent, untraced.headers.get('traceresponse'))
        assert.equal(b!.headers.tracestate, undefined)
      } finally {
        await hook.close()
      }
    })

    test('a failing receiver never blocks or undoes the move', async () => {
      const hook = await receiver(500)
      try {
        const h = await create(hub, { notify_url: hook.url })
        const res = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
          token: h.receiver_token,
          body: { from: 'offered' },
        })
        assert.equal(res.status, 200)
        await hub.ctx.notifier.drain()
        // Retries now follow the outbox's backoff (covered in hardening/notify-outbox.test.ts).
        assert.ok(hook.got.length >= 1)
        const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
        assert.equal(read.body.state, 'accepted')
      } finally {
        await hook.close()
      }
    })
  })
}

describe('notify_url rules', () => {
  test('only http(s) URLs with a host; literal private addresses refused', () => {
    const refused = [
      'ftp://example.com/',
      'file:///etc/passwd',
      'http://user:pw@example.com/',
      'http://10.1.2.3/',
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://127.0.0.1:8080/',
      'http://[::1]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://0.0.0.0/',
      'http://localhost/',
      'http://api.localhost/',
      'relative/path',
    ]
    for (const url of refused) {
      assert.throws(() => checkNotifyUrl(url, false), { code: 'invalid_notify_url' }, url)
    }
    for (const url of [
      'https://example.com/hook',
      'http://93.184.216.34:8080/x',
      'https://[2606:4700::1]/',
    ]) {
      assert.equal(checkNotifyUrl(url, false).href.length > 0, true, url)
    }
    assert.ok(checkNotifyUrl('http://127.0.0.1:9/', true))
    assert.throws(() => checkNotifyUrl('http://10.0.0.1/', true), { code: 'invalid_notify_url' })
  })

  test('address classes', () => {
    for (const a of [
      '10.0.0.1',
      '127.0.0.1',
      '169.254.1.1',
      '::1',
      'fe80::1',
      'fc00::1',
      '100.64.0.1',
      '224.0.0.1',
      '::ffff:10.0.0.1',
    ]) {
      assert.equal(isDeliverableAddress(a, false), false, a)
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) {
      assert.equal(isDeliverableAddress(a, false), true, a)
    }
    assert.equal(isDeliverableAddress('127.0.0.1', true), true)
    assert.equal(isDeliverableAddress('10.0.0.1', true), false)
  })

  test('at delivery time, a host resolving to loopback is refused unless allowed', async () => {
    const hook = await receiver()
    try {
      // `localhost` resolves through the system resolver to a loopback address.
      const outcome = await postSignal(hook.url.replace('127.0.0.1', 'localhost'), '{}', {
        allowLoopback: false,
        timeoutMs: 1000,
      })
      assert.equal(outcome, 'refused-address')
      assert.equal(hook.got.length, 0)
    } finally {
      await hook.close()
    }
  })

  test('redirects are not followed', async () => {
    const hook = await receiver(302)
    try {
      const outcome = await postSignal(hook.url, '{}', { allowLoopback: true, timeoutMs: 1000 })
      assert.equal(outcome, 'failed')
      // One attempt per call: retries are the outbox's job.
      assert.equal(hook.got.length, 1)
    } finally {
      await hook.close()
    }
  })
})
