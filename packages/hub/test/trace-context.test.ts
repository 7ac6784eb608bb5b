// W3C Trace Context from the agent that starts work to the agent that receives it: the reader of
// a message gets the sender's traceparent; with an OTLP receiver configured, the hub's spans of
// both agents' requests land in one trace.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const T = '4bf92f3577b34da6a3ce929d0e0e4736'
const P = '00f067aa0ba902b7'

interface Message {
  id: string
  traceparent?: string
}

for (const store of testStores) {
  describe(`trace context handed on (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
    })
    after(() => hub?.close())

    test("a message's reader gets the sender's traceparent; none when none (or a bad one) was sent", async () => {
      const a = await signedAgent(hub)
      const b = await signedAgent(hub)
      const send = (key: string, headers: Record<string, string>) =>
        a.request(
          'POST',
          '/v1/messages',
          { recipient: b.principal, body: { key }, idempotencyKey: key },
          headers,
        )
      assert.equal((await send('traced-1', { traceparent: `00-${T}-${P}-01` })).status, 201)
      assert.equal((await send('untraced-1', {})).status, 201)
      assert.equal(
        (await send('badtrace-1', { traceparent: `00-${'0'.repeat(32)}-${P}-01` })).status,
        201,
      )
      const inbox = await b.request<{ messages: Message[] }>('GET', '/v1/messages')
      assert.equal(inbox.status, 200)
      const [traced, untraced, bad] = inbox.body.messages
      assert.equal(traced?.traceparent, `00-${T}-${P}-01`)
      assert.equal(untraced?.traceparent, undefined)
      assert.equal(bad?.traceparent, undefined)
    })
  })
}

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
}

describe('OpenTelemetry spans over OTLP/HTTP', {
  skip: testStores[0] ? false : 'no store chosen',
}, () => {
  const spans: OtlpSpan[] = []
  const contentTypes: string[] = []
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']))
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[]
      }
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  let hub: TestHub
  before(async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    const { port } = receiver.address() as AddressInfo
    hub = await startTestHub(testStores[0]!, {
      BATON_ADMISSION: 'open',
      BATON_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    })
  })
  after(() => {
    receiver.close()
  })

  test("agent B continues agent A's trace with the traceparent the hub handed it", async () => {
    const a = await signedAgent(hub)
    const b = await signedAgent(hub)
    const sent = await a.request(
      'POST',
      '/v1/messages',
      { recipient: b.principal, body: { n: 1 }, idempotencyKey: 'otel-1' },
      { traceparent: `00-${T}-${P}-01` },
    )
    assert.equal(sent.status, 201)
    const inbox = await b.request<{ messages: Message[] }>('GET', '/v1/messages')
    const [message] = inbox.body.messages
    const handed = message?.traceparent
    assert.ok(handed, 'the message view carries a traceparent')
    const [, traceId, hubSpan] = handed.split('-')
    assert.equal(traceId, T)
    const ack = await b.request('POST', `/v1/messages/${message.id}/ack`, undefined, {
      traceparent: handed,
    })
    assert.equal(ack.status, 200)
    // Stopping the hub exports every span it still holds.
    await hub.close()
    assert.ok(
      contentTypes.every((t) => t.startsWith('application/json')),
      contentTypes.join(),
    )
    const inTrace = spans.filter((s) => s.traceId === T)
    const send = inTrace.find((s) => s.name === 'POST /v1/messages')
    const acked = inTrace.find((s) => s.name === 'POST /v1/messages/:id/ack')
    assert.equal(send?.parentSpanId, P)
    assert.equal(send?.spanId, hubSpan)
    assert.equal(acked?.parentSpanId, hubSpan)
    // The store transactions of both requests are in the trace too.
    assert.ok(inTrace.some((s) => s.name === 'baton.transaction' && s.parentSpanId !== P))
  })
})
