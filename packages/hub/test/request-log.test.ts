// Request ids and request log lines: one line per request at info, by route pattern, with the
// principal of a signed request, and an X-Request-Id echoed on every answer.
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { signedFetch } from '@baton/client'
import { createLogger } from '../src/log.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

interface Line {
  level: number
  msg: string
  [key: string]: unknown
}

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
/** A traceresponse (W3C Trace Context Level 2) of a request the hub recorded nothing of. */
const UNRECORDED = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/

/** The trace id an answer's traceresponse names. */
function traceIdOf(headers: Headers): string {
  const m = UNRECORDED.exec(headers.get('traceresponse') ?? '')
  assert.ok(m, `traceresponse ${headers.get('traceresponse')}`)
  return m[1]!
}

for (const store of testStores) {
  describe(`request ids and logs (${store.name})`, () => {
    let hub: TestHub
    const lines: Line[] = []
    const waiters: ((line: Line) => boolean)[] = []
    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n')) {
            if (!l) continue
            const line = JSON.parse(l) as Line
            lines.push(line)
            for (const [i, w] of waiters.entries()) if (w(line)) waiters.splice(i, 1)
          }
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
    /** The request line of `reqId` once it is written (a stream's, when the stream ends). */
    const lineFor = (reqId: string) =>
      new Promise<Line>((resolve) => {
        const found = requestLines(reqId)[0]
        if (found) resolve(found)
        else
          waiters.push((l) => {
            if (l.msg !== 'request' || l.reqId !== reqId) return false
            resolve(l)
            return true
          })
      })

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

    test('every answer names its trace, and its log line the same trace id, with or without a traceparent', async () => {
      const plain = await fetch(`${hub.url}/healthz`, { headers: { 'x-request-id': 'tr-1' } })
      const started = traceIdOf(plain.headers)
      assert.equal(requestLines('tr-1')[0]?.traceId, started)
      const again = await fetch(`${hub.url}/healthz`)
      assert.notEqual(traceIdOf(again.headers), started, 'each request starts a trace of its own')
      // A caller's trace is continued: its trace id, a part of the hub's own (not the caller's
      // parent id), unrecorded while tracing is off.
      const continued = await fetch(`${hub.url}/healthz`, {
        headers: { 'x-request-id': 'tr-2', traceparent: TRACEPARENT },
      })
      assert.equal(traceIdOf(continued.headers), '4bf92f3577b34da6a3ce929d0e0e4736')
      assert.notEqual(
        UNRECORDED.exec(continued.headers.get('traceresponse')!)?.[2],
        '00f067aa0ba902b7',
      )
      assert.equal(requestLines('tr-2')[0]?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
      // Refusals too: before the body (401), unmatched (404), and an unreadable URL (400).
      const cases: [string, RequestInit, number][] = [
        [
          '/v1/messages',
          { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } },
          401,
        ],
        ['/no/such/route', {}, 404],
        ['/v1/messages/%E0%A4%A', {}, 400],
      ]
      for (const [i, [path, init, status]] of cases.entries()) {
        const reqId = `tr-refused-${i}`
        const res = await fetch(`${hub.url}${path}`, {
          ...init,
          headers: { ...(init.headers as Record<string, string>), 'x-request-id': reqId },
        })
        assert.equal(res.status, status, path)
        assert.equal((await lineFor(reqId)).traceId, traceIdOf(res.headers), path)
      }
    })

    test('answers a route writes itself carry the request id and trace: /mcp, an event stream', async () => {
      const mcp = await fetch(`${hub.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'x-request-id': 'mcp-1',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'request-log-test', version: '1.0.0' },
          },
        }),
      })
      assert.equal(mcp.status, 200)
      assert.equal(mcp.headers.get('x-request-id'), 'mcp-1')
      assert.equal(traceIdOf(mcp.headers), requestLines('mcp-1')[0]?.traceId)
      await mcp.body?.cancel()

      const owner = await signedAgent(hub)
      const agent = await signedAgent(hub)
      const stream = await signedFetch(owner.identity)(`${hub.url}/v1/a2a`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          'a2a-version': '1.0',
          'x-request-id': 'sse-1',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendStreamingMessage',
          params: {
            tenant: agent.principal,
            message: { messageId: 'sse-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
          },
        }),
      })
      assert.equal(stream.status, 200)
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/)
      assert.equal(stream.headers.get('x-request-id'), 'sse-1')
      const streamTrace = traceIdOf(stream.headers)
      // The stream ends when its task does: the first event names it, and the owner cancels it.
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader()
      let text = ''
      while (!text.includes('\n\n')) text += (await reader.read()).value ?? ''
      const taskId = /"taskId":"([^"]+)"/.exec(text)?.[1]
      assert.ok(taskId, text)
      const logged = lineFor('sse-1')
      const canceled = await owner.request('POST', `/v1/a2a/tasks/${taskId}/cancel`, undefined, {
        'a2a-version': '1.0',
      })
      assert.equal(canceled.status, 200, JSON.stringify(canceled.body))
      while (!(await reader.read()).done);
      assert.equal((await logged).traceId, streamTrace)
    })
  })
}
