import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'
import { call, startTestHub, type TestHub, testStores } from '../support.js'

const H = '/services/v1/handoff'
// The bench opens 10,000 (hub and client in separate processes); here both ends of every
// connection are in one process, and 10,000 of each would pass the usual limit of 20,000 open
// descriptors.
const WAITERS = 5000

async function create(hub: TestHub) {
  const res = await call(hub, 'POST', H, { body: { payload: { t: 1 } } })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body as { handoff_id: string; owner_token: string; receiver_token: string }
}

/** Resolves once `check` holds, looking again at every turn of the event loop. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20))
}

/** A GET on its own keep-alive connection, answering status and parsed body. */
function get(
  agent: http.Agent,
  url: URL,
  path: string,
  token: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path,
        agent,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}

for (const store of testStores) {
  describe(`long-poll waits at scale (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      // Every waiter of this test comes from one loopback address, so both caps are raised; the
      // defaults (100 per handoff, 1000 per address) are tested below with small values.
      hub = await startTestHub(store, {
        BATON_WAIT_MAX_PER_TOPIC: String(WAITERS),
        BATON_WAIT_MAX_PER_ADDRESS: String(WAITERS + 10),
        // Where the hub caps connections per client address, this test's 5,000 are let through.
        BATON_MAX_CONNECTIONS_PER_ADDRESS: '0',
        // Waits far longer than the test: a waiter released only by its timeout fails it.
        BATON_HANDOFF_MAX_WAIT_SECONDS: '3600',
      })
    })
    after(() => hub.close())

    test(`${WAITERS} waiters on one handoff share one read per move, and /healthz answers meanwhile`, {
      timeout: 180_000,
    }, async () => {
      const h = await create(hub)
      const url = new URL(hub.url)
      const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity })
      let answered = 0
      const waits: Promise<{ status: number; body: Record<string, unknown> }>[] = []
      // Connections are opened a few hundred at a time, within the listen backlog.
      while (waits.length < WAITERS) {
        for (let i = 0; i < 250 && waits.length < WAITERS; i++) {
          waits.push(
            get(agent, url, `${H}/${h.handoff_id}/wait/25?version=1`, h.owner_token).then((r) => {
              answered++
              return r
            }),
          )
        }
        const opened = waits.length
        await until(() => hub.ctx.waits.waiting === opened)
      }
      assert.equal(answered, 0)
      const readsBefore = hub.ctx.waits.reads
      // Waiters joining between events take the last read: opening them read the handoff once,
      // and once more for those that joined while that first read ran (before the fix, about one
      // read per batch of joiners, each checking every waiter's token again).
      assert.ok(readsBefore <= 2, `${readsBefore} reads to open ${WAITERS} waits`)
      assert.deepEqual(hub.ctx.waits.held, { waiters: WAITERS, keys: 1 })

      const move = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token,
        body: { from: 'offered' },
      })
      assert.equal(move.status, 200, JSON.stringify(move.body))
      const health = fetch(`${hub.url}/healthz`).then(async (res) => ({
        status: res.status,
        answeredBefore: answered,
      }))

      let bound: NodeJS.Timeout | undefined
      const all = await Promise.race([
        Promise.all(waits),
        new Promise<never>((_, reject) => {
          bound = setTimeout(() => reject(new Error('waiters not all answered in 20 s')), 20_000)
        }),
      ])
      clearTimeout(bound)
      for (const res of all) {
        assert.equal(res.status, 200)
        assert.equal(res.body.version, 2)
        assert.equal(res.body.state, 'accepted')
        assert.equal(res.body.changed, true)
      }
      // One move, one read, whatever the number of waiters.
      assert.equal(hub.ctx.waits.reads - readsBefore, 1)
      const h200 = await health
      assert.equal(h200.status, 200)
      assert.ok(h200.answeredBefore < WAITERS, 'healthz answered only after every waiter')
      assert.equal(hub.ctx.waits.waiting, 0)
      assert.deepEqual(hub.ctx.waits.held, { waiters: 0, keys: 0 })
      agent.destroy()
    })

    test('waiters whose clients go away are removed, and their key with them', {
      timeout: 60_000,
    }, async () => {
      const h = await create(hub)
      const url = new URL(hub.url)
      const n = 300
      const listeners = hub.ctx.bus.listenerCount?.()
      const sockets: net.Socket[] = []
      for (let i = 0; i < n; i++) {
        const socket = net.connect({ host: url.hostname, port: Number(url.port) })
        socket.on('error', () => {})
        socket.write(
          `GET ${H}/${h.handoff_id}/wait/3600?version=1 HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${h.owner_token}\r\n\r\n`,
        )
        sockets.push(socket)
      }
      await until(() => hub.ctx.waits.waiting === n)
      assert.deepEqual(hub.ctx.waits.held, { waiters: n, keys: 1 })
      for (const socket of sockets) socket.destroy()
      await until(() => hub.ctx.waits.held.waiters === 0)
      assert.deepEqual(hub.ctx.waits.held, { waiters: 0, keys: 0 })
      assert.equal(hub.ctx.waits.waiting, 0)
      assert.equal(hub.ctx.bus.listenerCount?.(), listeners)
    })
  })

  describe(`caps on concurrent waits (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, {
        BATON_WAIT_MAX_PER_TOPIC: '2',
        BATON_WAIT_MAX_PER_ADDRESS: '3',
      })
    })
    after(() => hub.close())

    test('over the per-handoff cap and the per-address cap a wait answers 429 with Retry-After', async () => {
      const a = await create(hub)
      const b = await create(hub)
      const waitOn = (h: { handoff_id: string }, token: string) =>
        call(hub, 'GET', `${H}/${h.handoff_id}/wait/25?version=1`, { token })
      const first = [waitOn(a, a.owner_token), waitOn(a, a.receiver_token)]
      await until(() => hub.ctx.waits.waiting === 2)

      const third = await waitOn(a, a.owner_token)
      assert.equal(third.status, 429)
      assert.equal(third.body.code, 'rate_limited')
      assert.ok(Number(third.headers.get('retry-after')) >= 1)
      // A caller without the handoff's token takes no slot: it is answered as a missing handoff.
      const stranger = await waitOn(a, 'hot_o_not-a-token')
      assert.equal(stranger.status, 404)
      assert.equal(stranger.body.code, 'handoff_not_found')

      const onB = waitOn(b, b.owner_token)
      await until(() => hub.ctx.waits.waiting === 3)
      const overAddress = await waitOn(b, b.receiver_token)
      assert.equal(overAddress.status, 429)
      assert.equal(overAddress.body.code, 'rate_limited')
      assert.ok(Number(overAddress.headers.get('retry-after')) >= 1)

      // Answered waits give their slots back.
      for (const h of [a, b]) {
        const moved = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
          token: h.receiver_token,
          body: { from: 'offered' },
        })
        assert.equal(moved.status, 200)
      }
      for (const res of await Promise.all([...first, onB])) {
        assert.equal(res.status, 200)
        assert.equal(res.body.version, 2)
      }
      assert.equal(hub.ctx.waits.waiting, 0)
      const again = call(hub, 'GET', `${H}/${a.handoff_id}/wait/25?version=2`, {
        token: a.owner_token,
      })
      await until(() => hub.ctx.waits.waiting === 1)
      const working = await call(hub, 'POST', `${H}/${a.handoff_id}/working`, {
        token: a.receiver_token,
        body: { from: 'accepted' },
      })
      assert.equal(working.status, 200, JSON.stringify(working.body))
      const last = await again
      assert.equal(last.status, 200)
      assert.equal(last.body.state, 'working')
    })
  })
}
