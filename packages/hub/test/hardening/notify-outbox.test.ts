import assert from 'node:assert/strict'
import { createPublicKey, verify } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { matchContentDigest, parseDictionary, type SfInnerList, signatureBase } from '@baton/client'
import pino from 'pino'
import { ManualClock } from '../../src/clock.js'
import { loadConfig } from '../../src/config.js'
import type { RunningHub } from '../../src/hub.js'
import { startHub } from '../../src/hub.js'
import {
  call,
  exited,
  restartableHub,
  serveProcess,
  startTestHub,
  type TestHub,
  testStores,
  until,
} from '../support.js'

const H = '/services/v1/handoff'
const ADMIN = 'operator-token-for-the-notify-outbox-tests-0123456789'
const HOUR = 3_600_000

interface Received {
  path: string
  headers: IncomingHttpHeaders
  raw: string
  body: { event_id: string; handoff_id: string; version: number; state: string }
  answered: number
}

/** A real receiver on loopback that answers 503 while `failing` says so, then 204. */
async function receiver() {
  const got: Received[] = []
  const state = { failures: 0, failing: (_r: Received) => state.failures-- > 0 }
  const server = createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', (c) => {
      raw += c
    })
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body: JSON.parse(raw),
        answered: 0,
      }
      r.answered = state.failing(r) ? 503 : 204
      got.push(r)
      res.writeHead(r.answered).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    url: `${origin}/hook`,
    got,
    state,
    delivered: () => got.filter((r) => r.answered === 204),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

async function createWith(hub: { url: string }, notify_url: string) {
  const res = await call(hub, 'POST', H, { body: { payload: { t: 1 }, notify_url } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body as { handoff_id: string; owner_token: string; receiver_token: string }
}

async function move(
  hub: { url: string },
  h: { handoff_id: string; receiver_token: string },
  from: string,
  to: string,
) {
  const res = await call(hub, 'POST', `${H}/${h.handoff_id}/${to}`, {
    token: h.receiver_token,
    body: { from },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

/** Moves the clock past any backoff and runs one delivery pass. */
async function retry(hub: RunningHub, clock: ManualClock) {
  clock.advance(HOUR + 1)
  await hub.ctx.notifier.drain()
  await hub.ctx.notifier.deliverDue()
}

async function metric(hub: { url: string }, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${hub.url}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`))
  return line ? Number(line.split(' ').pop()) : 0
}

async function outboxRows(hub: RunningHub) {
  return hub.ctx.database.db.selectFrom('notify_outbox').selectAll().orderBy('seq').execute()
}

/** Verifies a received signal as a receiver would: with the hub key published by discovery. */
async function verifySignal(hub: { url: string }, r: Received, targetUri: string) {
  const discovery = (await (await fetch(`${hub.url}/.well-known/agent-net`)).json()) as {
    hubKey: { kid: string; kty: string; crv: string; x: string }
  }
  const { kid, ...jwk } = discovery.hubKey
  const input = parseDictionary(String(r.headers['signature-input']))
  const signature = parseDictionary(String(r.headers.signature))
  assert.equal(input.length, 1)
  const [label, member] = input[0]!
  const list = member as SfInnerList
  const params = Object.fromEntries(list.params)
  assert.equal(params.keyid, kid)
  assert.equal(typeof params.created, 'number')
  assert.deepEqual(
    list.items.map((i) => i.value),
    ['@method', '@target-uri', 'content-digest'],
  )
  assert.equal(matchContentDigest(String(r.headers['content-digest']), Buffer.from(r.raw)), true)
  const base = signatureBase({ method: 'POST', targetUri, headers: r.headers }, list)
  const sig = signature.find(([l]) => l === label)![1] as { value: Uint8Array }
  const key = createPublicKey({ key: jwk, format: 'jwk' })
  return verify(null, Buffer.from(base), key, sig.value)
}

for (const store of testStores) {
  describe(`notify outbox (${store.name})`, () => {
    const clock = new ManualClock()
    let hub: TestHub
    let hook: Awaited<ReturnType<typeof receiver>>
    before(async () => {
      hook = await receiver()
      hub = await startTestHub(
        store,
        { BATON_NOTIFY_ALLOW_LOOPBACK: 'true', BATON_ADMIN_TOKEN: ADMIN },
        { clock },
      )
    })
    after(async () => {
      await hub.close()
      await hook.close()
    })

    test('a receiver failing 3 times gets the signal once, same event id, signed by the hub key', async () => {
      hook.got.length = 0
      hook.state.failures = 3
      const url = `${hook.origin}/once?x=1`
      const h = await createWith(hub, url)
      await move(hub, h, 'offered', 'accepted')
      await hub.ctx.notifier.drain()
      for (let i = 0; i < 4; i++) await retry(hub, clock)
      assert.deepEqual(
        hook.got.map((r) => r.answered),
        [503, 503, 503, 204],
      )
      assert.equal(new Set(hook.got.map((r) => r.body.event_id)).size, 1)
      assert.equal(new Set(hook.got.map((r) => r.raw)).size, 1)
      assert.deepEqual(
        { ...hook.got[0]!.body, event_id: undefined, at: undefined },
        {
          event_id: undefined,
          at: undefined,
          handoff_id: h.handoff_id,
          state: 'accepted',
          version: 2,
          ended: false,
        },
      )
      assert.equal(await verifySignal(hub, hook.delivered()[0]!, url), true)
      const tampered = {
        ...hook.delivered()[0]!,
        raw: hook.delivered()[0]!.raw.replace('accepted', 'rejected'),
      }
      assert.notEqual(
        matchContentDigest(String(tampered.headers['content-digest']), Buffer.from(tampered.raw)),
        true,
      )
      const [row] = (await outboxRows(hub)).filter((r) => r.handoff_id === h.handoff_id)
      assert.equal(row!.status, 'delivered')
      assert.equal(row!.attempts, 4)
      assert.equal(await metric(hub, 'baton_notify_outbox_signals', 'status="delivered"'), 1)
      assert.equal(await metric(hub, 'baton_notify_deliveries_total', 'outcome="failed"'), 3)
      assert.equal(await metric(hub, 'baton_notify_deliveries_total', 'outcome="delivered"'), 1)
    })

    test('signals to one URL arrive in commit order, a failing one holding back later ones', async () => {
      hook.got.length = 0
      hook.state.failures = 1
      const url = `${hook.origin}/ordered`
      const a = await createWith(hub, url)
      const b = await createWith(hub, url)
      await move(hub, a, 'offered', 'accepted')
      await hub.ctx.notifier.drain()
      await move(hub, b, 'offered', 'accepted')
      await move(hub, a, 'accepted', 'done')
      await move(hub, b, 'accepted', 'failed')
      await hub.ctx.notifier.drain()
      await hub.ctx.notifier.deliverDue()
      // The first signal failed and is not due yet: nothing after it to that URL went out.
      assert.equal(hook.got.length, 1)
      await retry(hub, clock)
      const order = hook
        .delivered()
        .map((r) => `${r.body.handoff_id === a.handoff_id ? 'a' : 'b'}${r.body.version}`)
      assert.deepEqual(order, ['a2', 'b2', 'a3', 'b3'])
    })

    test('moves committed together write one signal each, in the same transaction', async () => {
      hook.got.length = 0
      hook.state.failures = 0
      const hs = await Promise.all(
        Array.from({ length: 12 }, (_, i) => createWith(hub, `${hook.origin}/batch/${i}`)),
      )
      const before = (await outboxRows(hub)).length
      const results = await Promise.all(
        hs.flatMap((h) => [
          call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
            token: h.receiver_token,
            body: { from: 'offered' },
          }),
          // The same move again from a stale state: a conflict leaves no signal behind.
          call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
            token: h.receiver_token,
            body: { from: 'accepted' },
          }),
        ]),
      )
      const moved = results.filter((r) => r.status === 200).length
      assert.equal(moved, 12)
      const rows = await outboxRows(hub)
      assert.equal(rows.length - before, 12)
      assert.equal(new Set(rows.map((r) => r.seq)).size, rows.length)
      await hub.ctx.notifier.drain()
      await hub.ctx.notifier.deliverDue()
      assert.equal(hook.delivered().length, 12)
    })

    test('past the horizon (24 h by default) a signal is dead and kept', async () => {
      hook.got.length = 0
      hook.state.failing = () => true
      try {
        const h = await createWith(hub, `${hook.origin}/dead`)
        await move(hub, h, 'offered', 'accepted')
        await hub.ctx.notifier.drain()
        for (let i = 0; i < 30; i++) await retry(hub, clock)
        const [row] = (await outboxRows(hub)).filter((r) => r.handoff_id === h.handoff_id)
        assert.equal(row!.status, 'dead')
        assert.ok(row!.attempts > 5)
        // The last try was scheduled within the horizon; it ran at the next pass after that.
        assert.ok(Number(row!.done_at) - Number(row!.created_at) <= 25 * HOUR)
        const attempts = hook.got.length
        await retry(hub, clock)
        assert.equal(hook.got.length, attempts)
        assert.equal(await metric(hub, 'baton_notify_outbox_signals', 'status="dead"'), 1)
        const anonymous = await call(hub, 'GET', '/dashboard/api/notify')
        assert.equal(anonymous.status, 401)
        assert.equal(anonymous.body.code, 'dashboard_signin_required')
        const signIn = await fetch(`${hub.url}/dashboard/session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: ADMIN }),
        })
        const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
        const view = await call(hub, 'GET', '/dashboard/api/notify', { headers: { cookie } })
        assert.equal(view.status, 200)
        const queue = view.body as unknown as Awaited<ReturnType<typeof hub.ctx.notifier.queue>>
        assert.equal(queue.counts.dead, 1)
        assert.equal(queue.oldestDead[0]!.handoff_id, h.handoff_id)
        assert.equal(queue.oldestDead[0]!.origin, hook.origin)
        assert.ok(!JSON.stringify(queue).includes('/dead'), 'no receiver paths')
      } finally {
        hook.state.failing = (_r) => hook.state.failures-- > 0
      }
    })
  })

  describe(`notify outbox across restarts and instances (${store.name})`, () => {
    test('a signal pending when the hub closes is delivered, once, after restart', async () => {
      const hook = await receiver()
      const clock = new ManualClock()
      const { start, drop } = await restartableHub(
        store,
        { BATON_NOTIFY_ALLOW_LOOPBACK: 'true' },
        clock,
      )
      try {
        hook.state.failures = 1
        const first = await start()
        const h = await createWith(first, hook.url)
        await move(first, h, 'offered', 'accepted')
        await first.ctx.notifier.drain()
        await first.stop()
        assert.equal(hook.got.length, 1)
        const second = await start()
        try {
          await retry(second, clock)
          assert.equal(hook.delivered().length, 1)
          assert.equal(hook.delivered()[0]!.body.event_id, hook.got[0]!.body.event_id)
          await retry(second, clock)
          assert.equal(hook.got.length, 2)
        } finally {
          await second.stop()
        }
      } finally {
        await drop()
        await hook.close()
      }
    })

    test('a hub killed with a signal pending delivers it after restart', async () => {
      const hook = await receiver()
      const db = await store.fresh()
      const env = { ...db.env, BATON_NOTIFY_ALLOW_LOOPBACK: 'true', BATON_LOG_LEVEL: 'silent' }
      try {
        hook.state.failing = () => true
        const { url, child } = await serveProcess({ ...env, BATON_LOG_LEVEL: 'info' })
        const h = await createWith({ url }, hook.url)
        await move({ url }, h, 'offered', 'accepted')
        await until('the hub tried to deliver the signal', () => hook.got.length > 0)
        child.kill('SIGKILL')
        await exited(child)
        hook.state.failing = () => false
        // Past any lease the killed process may still hold, and past the backoff.
        const clock = new ManualClock(Date.now() + 2 * HOUR)
        const config = loadConfig({ BATON_HOST: '127.0.0.1', BATON_PORT: '0', ...env })
        const hub = await startHub(config, { clock, log: pino({ level: 'silent' }) })
        try {
          await hub.ctx.notifier.drain()
          await hub.ctx.notifier.deliverDue()
          assert.equal(hook.delivered().length, 1)
          assert.equal(hook.delivered()[0]!.body.event_id, hook.got[0]!.body.event_id)
        } finally {
          await hub.stop()
        }
      } finally {
        await db.drop()
        await hook.close()
      }
    })

    test('two instances on one database deliver each signal once', async () => {
      const hook = await receiver()
      const clock = new ManualClock()
      const { start, drop } = await restartableHub(
        store,
        { BATON_NOTIFY_ALLOW_LOOPBACK: 'true' },
        clock,
      )
      const a = await start()
      const b = await start()
      try {
        hook.state.failing = () => true
        const hs = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            createWith(i % 2 ? a : b, `${hook.origin}/i/${i % 8}`),
          ),
        )
        for (const [i, h] of hs.entries()) await move(i % 2 ? b : a, h, 'offered', 'accepted')
        await Promise.all([a.ctx.notifier.drain(), b.ctx.notifier.drain()])
        hook.state.failing = () => false
        clock.advance(HOUR + 1)
        await Promise.all([a.ctx.notifier.deliverDue(), b.ctx.notifier.deliverDue()])
        await Promise.all([a.ctx.notifier.drain(), b.ctx.notifier.drain()])
        const ids = hook.delivered().map((r) => r.body.event_id)
        assert.equal(ids.length, 16)
        assert.equal(new Set(ids).size, 16)
        const rows = await a.ctx.database.db.selectFrom('notify_outbox').select('status').execute()
        assert.deepEqual(new Set(rows.map((r) => r.status)), new Set(['delivered']))
      } finally {
        await a.stop()
        await b.stop()
        await drop()
        await hook.close()
      }
    })
  })
}
