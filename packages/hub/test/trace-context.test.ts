// W3C Trace Context from the agent that starts work to the agent that receives it: the reader of
// a message gets the sender's traceparent; with an OTLP receiver configured, the hub's spans of
// both agents' requests land in one trace.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const T = '4bf92f3577b34da6a3ce929d0e0e4736'
const P = '00f067aa0ba902b7'
/** A valid traceparent of trace T whose parent id ends in `n`, one per request sent. */
const parent = (n: number) => `00-${T}-${P.slice(0, 12)}${String(n).padStart(4, '0')}-01`
const ADMIN = 'trace-context-test-operator-token-0123456789'
const PROVISION = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }
const RELAY = A2A_RELAY_EXTENSION_URI

interface Task {
  id: string
  metadata?: Record<string, unknown>
}

/** The relay extension's metadata of an A2A task or stream event. */
function relayOf(of: { metadata?: Record<string, unknown> }): { traceparent?: string } {
  return (of.metadata?.[RELAY] ?? {}) as { traceparent?: string }
}

interface Message {
  id: string
  traceparent?: string
}

for (const store of testStores) {
  describe(`trace context handed on (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: ADMIN,
        BATON_COMPUTE_RUNTIMES: '*',
      })
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

    test("a handoff's readers and waiters get the traceparent of its last move, by either path", async () => {
      const H = '/services/v1/handoff'
      const created = await call(hub, 'POST', H, { body: { payload: { n: 1 } } })
      assert.equal(created.status, 201)
      const h = created.body as { handoff_id: string; owner_token: string; receiver_token: string }
      const move = (to: string, from: string, headers: Record<string, string> = {}) =>
        call(hub, 'POST', `${H}/${h.handoff_id}/${to}`, {
          token: h.receiver_token,
          body: { from },
          headers,
        })
      // The first move is predicted (one trip to the database); once forgotten, the next one is
      // decided on a locked read and written by the batch.
      assert.ok(hub.ctx.handoffs.known.get(h.handoff_id), 'a move the hub predicts')
      assert.equal((await move('accepted', 'offered', { traceparent: parent(1) })).status, 200)
      let read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.traceparent, parent(1))
      hub.ctx.handoffs.known.forget(h.handoff_id)
      assert.equal((await move('working', 'accepted', { traceparent: parent(2) })).status, 200)
      read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.traceparent, parent(2))
      const waited = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1?version=1`, {
        token: h.owner_token,
      })
      assert.equal(waited.body.changed, true)
      assert.equal(waited.body.traceparent, parent(2))
      assert.equal((await move('done', 'working')).status, 200)
      read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.version, 4)
      assert.equal(read.body.traceparent, undefined)
      const history = read.body.history as unknown[]
      assert.equal(history.length, 3)
    })

    test("an A2A task's agent reads and streams the traceparent of the send that changed it", async () => {
      const owner = await signedAgent(hub)
      const agent = await signedAgent(hub)
      const rpc = (as: typeof owner, params: object, headers: Record<string, string> = {}) =>
        as.request<{ result?: { task: Task } }>(
          'POST',
          '/v1/a2a',
          { jsonrpc: '2.0', id: 1, method: 'SendMessage', params },
          { 'a2a-version': '1.0', ...headers },
        )
      const created = await rpc(
        owner,
        {
          tenant: agent.principal,
          message: { messageId: 'tc-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
          configuration: { returnImmediately: true },
        },
        { traceparent: parent(3) },
      )
      const id = created.body.result!.task.id
      const read = (as: typeof owner, q = '') =>
        as.request<Task>('GET', `/v1/a2a/tasks/${id}${q}`).then((r) => relayOf(r.body))
      assert.equal((await read(agent)).traceparent, parent(3))
      const replied = await rpc(agent, {
        message: { messageId: 'tc-2', role: 'ROLE_AGENT', parts: [{ text: 'on it' }], taskId: id },
        metadata: { [RELAY]: { state: 'TASK_STATE_WORKING' } },
      })
      assert.equal(replied.status, 200)
      assert.equal((await read(owner)).traceparent, undefined)
      await rpc(
        owner,
        {
          message: { messageId: 'tc-3', role: 'ROLE_USER', parts: [{ text: 'more' }], taskId: id },
          configuration: { returnImmediately: true },
        },
        { traceparent: parent(4) },
      )
      // Without history the latest event is read for its trace alone.
      assert.equal((await read(agent, '?historyLength=0')).traceparent, parent(4))
      assert.equal((await read(agent)).traceparent, parent(4))
      const stream = await hub.ctx.a2a.eventsAfter(agent.principal, id, 0)
      assert.deepEqual(
        stream.events.map(
          (e) => relayOf('statusUpdate' in e.event ? e.event.statusUpdate : {}).traceparent,
        ),
        [parent(3), undefined, parent(4)],
      )
    })

    test('the runtime reading or claiming a transfer gets the traceparent of its staging, then its provisioning', async () => {
      const owner = await signedAgent(hub)
      const runtime = await signedAgent(hub)
      const stage = (headers: Record<string, string>) =>
        owner.request<{ transferId: string; traceparent?: string }>(
          'POST',
          '/v1/transfers',
          {
            snapshot: {
              systemPrompt: 'You hand work on.',
              messages: [{ role: 'user', content: String(Math.random()) }],
            },
          },
          headers,
        )
      const provision = async (id: string, headers: Record<string, string> = {}) => {
        const minted = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
          body: { scope: 'provision', ...PROVISION },
          headers: { authorization: `Bearer ${ADMIN}` },
        })
        assert.equal(minted.status, 201, JSON.stringify(minted.body))
        const res = await owner.request<{ traceparent?: string }>(
          'POST',
          `/v1/transfers/${id}/provision`,
          { ...PROVISION, token: minted.body.token },
          headers,
        )
        assert.equal(res.status, 200, JSON.stringify(res.body))
        return res.body
      }
      const claim = (id: string) =>
        runtime.request<{ traceparent?: string }>('POST', `/v1/transfers/${id}/claim`)

      const staged = await stage({ traceparent: parent(5) })
      assert.equal(staged.status, 201)
      const id = staged.body.transferId
      assert.equal(staged.body.traceparent, parent(5))
      assert.equal((await provision(id, { traceparent: parent(6) })).traceparent, parent(6))
      const claimed = await claim(id)
      assert.equal(claimed.status, 200)
      assert.equal(claimed.body.traceparent, parent(6))
      const read = await runtime.request<{ traceparent?: string }>('GET', `/v1/transfers/${id}`)
      assert.equal(read.body.traceparent, parent(6))

      // Provisioned without trace context: the staging's is what was handed on.
      const second = (await stage({ traceparent: parent(7) })).body.transferId
      await provision(second)
      assert.equal((await claim(second)).body.traceparent, parent(7))
      const untraced = (await stage({})).body.transferId
      await provision(untraced)
      assert.equal((await claim(untraced)).body.traceparent, undefined)
    })

    test('the runtime that claims a compute job gets the traceparent of its submit', async () => {
      const owner = await signedAgent(hub)
      const runtime = await signedAgent(hub)
      const runtimeId = `trace-rt-${store.name}`
      const submit = async (key: string, headers: Record<string, string>) => {
        const res = await owner.request<{ jobId: string }>(
          'POST',
          '/v1/compute/jobs',
          { language: 'json-expr-v1', program: { var: 'a' }, input: { a: 1 }, idempotencyKey: key },
          headers,
        )
        assert.equal(res.status, 201, JSON.stringify(res.body))
        return res.body.jobId
      }
      const claim = async () => {
        const res = await runtime.request<{ job: { jobId: string; traceparent?: string } | null }>(
          'POST',
          `/v1/compute/runtimes/${runtimeId}/claim`,
        )
        assert.equal(res.status, 200, JSON.stringify(res.body))
        return res.body.job
      }
      const beat = await runtime.request('POST', '/v1/compute/runtimes', {
        runtimeId,
        languages: ['json-expr-v1'],
      })
      assert.equal(beat.status, 200, JSON.stringify(beat.body))
      const traced = await submit('trace-job-1', { traceparent: parent(8) })
      const first = await claim()
      assert.equal(first?.jobId, traced)
      assert.equal(first?.traceparent, parent(8))
      const untraced = await submit('trace-job-2', {})
      const second = await claim()
      assert.equal(second?.jobId, untraced)
      assert.equal(second?.traceparent, undefined)
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
