import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { call, startTestHub, type TestHub, testStores, until } from '../support.js'
import { closedWithin, connect } from './wire.js'

const H = '/services/v1/handoff'
// Timeouts are short here so that a closed connection shows within a generous bound; nothing
// asserts how soon within it.
const HEADERS_TIMEOUT_MS = 300
const REQUEST_TIMEOUT_MS = 600
const BOUND_MS = 10_000

/** Writes `text` a byte at a time, every `everyMs`, until the socket closes. */
function drip(socket: import('node:net').Socket, text: string, everyMs: number): void {
  let i = 0
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer)
    socket.write(text[i++]!)
  }, everyMs)
  socket.once('close', () => clearInterval(timer))
}

/**
 * Resolves once the hub's request timeout has cut a request begun now (a header section and part
 * of a body, never finished): Node checks every open request on one interval, so a request
 * begun before it and still subject to that timeout has been cut by then too.
 */
async function requestTimeoutPassed(hub: TestHub): Promise<void> {
  const socket = await connect(hub.url)
  // Read (and drop) the 408 the hub answers, or the close is never seen.
  socket.resume()
  socket.write(
    `POST ${H} HTTP/1.1\r\nhost: ${new URL(hub.url).host}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`,
  )
  assert.equal(await closedWithin(socket, BOUND_MS), true, 'an unfinished request was not cut')
}

/** A new connection if the hub serves it (answers a request on it), or none if it closes it. */
async function served(url: string): Promise<import('node:net').Socket | undefined> {
  const socket = await connect(url)
  socket.on('error', () => {})
  const answered = new Promise<boolean>((resolve) => {
    socket.once('data', () => resolve(true))
    socket.once('close', () => resolve(false))
  })
  socket.write(`GET /healthz HTTP/1.1\r\nhost: ${new URL(url).host}\r\n\r\n`)
  return (await answered) ? socket : undefined
}

const sqlite = testStores[0]!

describe('slow and piled-up connections are closed', () => {
  let hub: TestHub
  before(async () => {
    hub = await startTestHub(sqlite, {
      BATON_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      BATON_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      BATON_ADMIN_TOKEN: 'a'.repeat(40),
    })
  })
  after(() => hub.close())

  test('a header section dripped a byte at a time is cut at the header timeout', async () => {
    const socket = await connect(hub.url)
    const host = new URL(hub.url).host
    drip(socket, `GET /healthz HTTP/1.1\r\nhost: ${host}\r\nx-slow: ${'a'.repeat(500)}\r\n\r\n`, 50)
    assert.equal(await closedWithin(socket, BOUND_MS), true, 'the dripping connection stayed open')
  })

  test('a body dripped a byte at a time is cut at the request timeout', async () => {
    const socket = await connect(hub.url)
    const host = new URL(hub.url).host
    const body = JSON.stringify({ payload: { pad: 'a'.repeat(1000) } })
    socket.write(
      `POST ${H} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    )
    drip(socket, body, 50)
    assert.equal(await closedWithin(socket, BOUND_MS), true, 'the dripping connection stayed open')
  })

  test('a long-poll wait outlives the request timeout and answers the move', async () => {
    const created = await call(hub, 'POST', H, { body: { payload: { n: 1 } } })
    const h = created.body as { handoff_id: string; owner_token: string; receiver_token: string }
    const held = hub.ctx.waits.waiting
    const waiting = call(hub, 'GET', `${H}/${h.handoff_id}/wait/25`, { token: h.owner_token })
    await Promise.race([
      hub.ctx.waits.untilWaiting(held + 1),
      waiting.then((res) =>
        assert.fail(`the wait answered before it was held: ${JSON.stringify(res)}`),
      ),
    ])
    await requestTimeoutPassed(hub)
    const moved = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
      token: h.receiver_token,
      body: { from: 'offered' },
    })
    assert.equal(moved.status, 200)
    const res = await waiting
    assert.equal(res.status, 200)
    assert.equal(res.body.changed, true)
    assert.equal(res.body.state, 'accepted')
  })

  test('a dashboard event stream outlives the request timeout', async () => {
    const signIn = await call(hub, 'POST', '/dashboard/session', {
      body: { token: 'a'.repeat(40) },
    })
    assert.equal(signIn.status, 200)
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
    const res = await fetch(`${hub.url}/dashboard/events`, { headers: { cookie } })
    assert.equal(res.status, 200)
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let seen = decoder.decode((await reader.read()).value)
    await requestTimeoutPassed(hub)
    await call(hub, 'POST', H, { body: { payload: { n: 2 } } })
    while (!seen.includes('handoff.created')) {
      const { value, done } = await reader.read()
      assert.equal(done, false, 'the stream ended')
      seen += decoder.decode(value)
    }
    await reader.cancel()
  })
})

describe('connections per client address are capped', () => {
  let hub: TestHub
  const cap = 4
  before(async () => {
    hub = await startTestHub(sqlite, { BATON_MAX_CONNECTIONS_PER_ADDRESS: String(cap) })
  })
  after(() => hub.close())

  test('the connection over the cap is closed at once, and the others still serve', async () => {
    const open = await Promise.all(Array.from({ length: cap }, () => connect(hub.url)))
    const extra = await connect(hub.url)
    assert.equal(await closedWithin(extra, BOUND_MS), true, 'the connection over the cap stayed')
    const host = new URL(hub.url).host
    const first = open[0]!
    const answer = new Promise<string>((resolve) => first.once('data', (d) => resolve(String(d))))
    first.write(`GET /healthz HTTP/1.1\r\nhost: ${host}\r\n\r\n`)
    assert.match(await answer, /^HTTP\/1\.1 200 /)
    // A connection that closes frees its place, once the hub has seen it close: a new one is
    // then served (answered), where until then it is closed at once.
    first.destroy()
    let again: import('node:net').Socket | undefined
    await until('a freed place is given again', async () => {
      again = await served(hub.url)
      return again !== undefined
    })
    for (const s of [...open, again!]) s.destroy()
    const metrics = await hub.ctx.metrics.registry.metrics()
    const refused = /^baton_connections_refused_total (\d+)/m.exec(metrics)
    assert.ok(Number(refused?.[1]) >= 1, 'the refusal is not counted')
  })
})
