// Request ids and request log lines: one line per request at info, by route pattern, with the
// principal of a signed request, and an X-Request-Id echoed on every answer.
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { createLogger } from '../src/log.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

interface Line {
  level: number
  msg: string
  [key: string]: unknown
}

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

for (const store of testStores) {
  describe(`request ids and logs (${store.name})`, () => {
    let hub: TestHub
    const lines: Line[] = []
    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Line)
          done()
        },
      })
      hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open' },
        { log: createLogger('info', sink) },
      )
    })
    after(() => hub?.close())

    const requestLines = (reqId: string) =>
      lines.filter((l) => l.msg === 'request' && l.reqId === reqId)

    test('a safe X-Request-Id is echoed and logged once at info, by route pattern', async () => {
      const res = await fetch(`${hub.url}/healthz`, { headers: { 'x-request-id': 'job-7.a:b_c' } })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('x-request-id'), 'job-7.a:b_c')
      const [line, ...more] = requestLines('job-7.a:b_c')
      assert.equal(more.length, 0)
      assert.equal(line?.level, 30)
      assert.equal(line?.method, 'GET')
      assert.equal(line?.route, '/healthz')
      assert.equal(line?.status, 200)
      assert.equal(typeof line?.ms, 'number')
    })

    test('an unsafe or over-long X-Request-Id is replaced by a fresh one', async () => {
      for (const sent of ['has space', 'a'.repeat(129), 'quote"', '']) {
        const res = await fetch(`${hub.url}/healthz`, { headers: { 'x-request-id': sent } })
        const id = res.headers.get('x-request-id')
        assert.ok(id && id !== sent && /^[A-Za-z0-9._:-]{1,128}$/.test(id), String(id))
        assert.equal(requestLines(id).length, 1)
      }
      const a = (await fetch(`${hub.url}/healthz`)).headers.get('x-request-id')
      const b = (await fetch(`${hub.url}/healthz`)).headers.get('x-request-id')
      assert.ok(a && b && a !== b)
    })

    test('errors carry the request id, also those refused before the body is read', async () => {
      const unsigned = await call(hub, 'POST', '/v1/messages', {
        body: { recipient: 'x' },
        headers: { 'x-request-id': 'refused-1' },
      })
      assert.equal(unsigned.status, 401)
      assert.equal(unsigned.headers.get('x-request-id'), 'refused-1')
      const [line] = requestLines('refused-1')
      assert.equal(line?.level, 40)
      assert.equal(line?.route, '/v1/messages')
      const missing = await fetch(`${hub.url}/no/such/route`, {
        headers: { 'x-request-id': 'nf-1' },
      })
      assert.equal(missing.status, 404)
      assert.equal(missing.headers.get('x-request-id'), 'nf-1')
      const badUrl = await fetch(`${hub.url}/v1/messages/%E0%A4%A`, {
        headers: { 'x-request-id': 'bad-1' },
      })
      assert.equal(badUrl.status, 400)
      assert.equal(badUrl.headers.get('x-request-id'), 'bad-1')
    })

    test('a signed request logs its principal, its route pattern and its trace id, no ids', async () => {
      const agent = await signedAgent(hub)
      const sent = await agent.request(
        'POST',
        '/v1/messages',
        { recipient: agent.principal, body: { n: 1 }, idempotencyKey: 'k1' },
        { 'x-request-id': 'signed-1', traceparent: TRACEPARENT },
      )
      assert.equal(sent.status, 201)
      const id = (sent.body as { id: string }).id
      const ack = await agent.request('POST', `/v1/messages/${id}/ack`, undefined, {
        'x-request-id': 'signed-2',
      })
      assert.equal(ack.status, 200)
      const [line] = requestLines('signed-1')
      assert.equal(line?.principal, agent.principal)
      assert.equal(line?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
      const [ackLine] = requestLines('signed-2')
      assert.equal(ackLine?.route, '/v1/messages/:id/ack')
      assert.ok(!JSON.stringify(ackLine).includes(id))
    })
  })
}
