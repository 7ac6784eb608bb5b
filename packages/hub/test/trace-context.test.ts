// W3C Trace Context from the agent that starts work to the agent that receives it: the reader of
// a message gets the sender's traceparent; with an OTLP receiver configured, the hub's spans of
// both agents' requests land in one trace.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { hopSigner } from '@baton/client'
import { signOffer, toHandoff } from '@baton/context'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  batonBin,
  call,
  repoRoot,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
  toolAnswer,
} from './support.js'

const T = '4bf92f3577b34da6a3ce929d0e0e4736'
const P = '00f067aa0ba902b7'
const T2 = '0af7651916cd43dd8448eb211c80319c'
const STATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'
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
function relayOf(of: { metadata?: Record<string, unknown> }): {
  traceparent?: string
  tracestate?: string
} {
  return (of.metadata?.[RELAY] ?? {}) as { traceparent?: string; tracestate?: string }
}

interface Message {
  id: string
  traceparent?: string
}

/** The traceresponse of an answer: the trace the hub put the request in. */
function started(res: { headers: Headers }): string {
  const header = res.headers.get('traceresponse')
  assert.ok(header, 'every answer names its trace')
  return header
}

/** What a view hands on, as a receiver reads it. */
function handed(view: unknown): { traceparent?: string; tracestate?: string } {
  const { traceparent, tracestate } = (view ?? {}) as { traceparent?: string; tracestate?: string }
  return { ...(traceparent ? { traceparent } : {}), ...(tracestate ? { tracestate } : {}) }
}

/** The two MCP faces: the hub's own /mcp, and `baton mcp` over stdio, which reaches it by HTTP. */
const mcpFaces = {
  '/mcp': (hub: TestHub) => new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)),
  'baton mcp (stdio)': (hub: TestHub) =>
    new StdioClientTransport({
      command: process.execPath,
      args: [batonBin, 'mcp', '--hub', hub.url],
      cwd: repoRoot,
      stderr: 'pipe',
    }),
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

    test("a message's reader gets the sender's trace context; one the hub started when none (or a bad one) was sent", async () => {
      const a = await signedAgent(hub)
      const b = await signedAgent(hub)
      const send = (key: string, headers: Record<string, string>) =>
        a.request(
          'POST',
          '/v1/messages',
          { recipient: b.principal, body: { key }, idempotencyKey: key },
          headers,
        )
      const traced = await send('traced-1', { traceparent: `00-${T}-${P}-01`, tracestate: STATE })
      assert.equal(traced.status, 201)
      const untraced = await send('untraced-1', {})
      assert.equal(untraced.status, 201)
      const bad = await send('badtrace-1', { traceparent: `00-${'0'.repeat(32)}-${P}-01` })
      assert.equal(bad.status, 201)
      const inbox = await b.request<{ messages: Message[] }>('GET', '/v1/messages')
      assert.equal(inbox.status, 200)
      const [first, second, third] = inbox.body.messages
      assert.deepEqual(handed(first), { traceparent: `00-${T}-${P}-01`, tracestate: STATE })
      // Without trace context the send was put in a trace of the hub's own (flags 00: recorded
      // nowhere while tracing is off), the one its answer named.
      assert.deepEqual(handed(second), { traceparent: started(untraced) })
      assert.match(started(untraced), /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
      assert.deepEqual(handed(third), { traceparent: started(bad) })
      assert.notEqual(started(bad).split('-')[1], '0'.repeat(32))
    })

    test("a handoff's readers and waiters get its creation's trace context, then its last move's, by either path", async () => {
      const H = '/services/v1/handoff'
      const created = await call(hub, 'POST', H, {
        body: { payload: { n: 1 } },
        headers: { traceparent: parent(0), tracestate: STATE },
      })
      assert.equal(created.status, 201)
      const h = created.body as { handoff_id: string; owner_token: string; receiver_token: string }
      // Before any move, whoever reads or waits continues the trace that created the handoff.
      let read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.receiver_token })
      assert.deepEqual(handed(read.body), { traceparent: parent(0), tracestate: STATE })
      const early = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1?version=0`, {
        token: h.receiver_token,
      })
      assert.equal(early.body.changed, true)
      assert.deepEqual(handed(early.body), { traceparent: parent(0), tracestate: STATE })
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
      read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.deepEqual(handed(read.body), { traceparent: parent(1) })
      hub.ctx.handoffs.known.forget(h.handoff_id)
      const second = await move('working', 'accepted', {
        traceparent: parent(2),
        tracestate: STATE,
      })
      assert.equal(second.status, 200)
      read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.deepEqual(handed(read.body), { traceparent: parent(2), tracestate: STATE })
      const waited = await call(hub, 'GET', `${H}/${h.handoff_id}/wait/1?version=1`, {
        token: h.owner_token,
      })
      assert.equal(waited.body.changed, true)
      assert.deepEqual(handed(waited.body), { traceparent: parent(2), tracestate: STATE })
      const last = await move('done', 'working')
      assert.equal(last.status, 200)
      read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.equal(read.body.version, 4)
      assert.deepEqual(handed(read.body), { traceparent: started(last) })
      const history = read.body.history as unknown[]
      assert.equal(history.length, 3)
    })

    test("an A2A task's agent reads and streams the trace context of the send that changed it", async () => {
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
        { traceparent: parent(3), tracestate: STATE },
      )
      const id = created.body.result!.task.id
      const read = (as: typeof owner, q = '') =>
        as.request<Task>('GET', `/v1/a2a/tasks/${id}${q}`).then((r) => relayOf(r.body))
      assert.deepEqual(handed(await read(agent)), { traceparent: parent(3), tracestate: STATE })
      const replied = await rpc(agent, {
        message: { messageId: 'tc-2', role: 'ROLE_AGENT', parts: [{ text: 'on it' }], taskId: id },
        metadata: { [RELAY]: { state: 'TASK_STATE_WORKING' } },
      })
      assert.equal(replied.status, 200)
      assert.equal((await read(owner)).traceparent, started(replied))
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
        stream.events.map((e) =>
          handed(relayOf('statusUpdate' in e.event ? e.event.statusUpdate : {})),
        ),
        [
          { traceparent: parent(3), tracestate: STATE },
          { traceparent: started(replied) },
          { traceparent: parent(4) },
        ],
      )
    })

    test('the runtime reading or claiming a transfer gets the trace context of its staging, then its provisioning', async () => {
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
        return res
      }
      const claim = (id: string) =>
        runtime.request<{ traceparent?: string }>('POST', `/v1/transfers/${id}/claim`)

      const staged = await stage({ traceparent: parent(5), tracestate: STATE })
      assert.equal(staged.status, 201)
      const id = staged.body.transferId
      assert.deepEqual(handed(staged.body), { traceparent: parent(5), tracestate: STATE })
      assert.equal((await provision(id, { traceparent: parent(6) })).body.traceparent, parent(6))
      const claimed = await claim(id)
      assert.equal(claimed.status, 200)
      assert.deepEqual(handed(claimed.body), { traceparent: parent(6) })
      const read = await runtime.request<{ traceparent?: string }>('GET', `/v1/transfers/${id}`)
      assert.equal(read.body.traceparent, parent(6))

      // Provisioned without trace context: the trace the hub started for the provisioning.
      const second = (await stage({ traceparent: parent(7) })).body.transferId
      const provisioned = await provision(second)
      assert.equal((await claim(second)).body.traceparent, started(provisioned))
    })

    test('the runtime that claims a compute job gets the trace context of its submit', async () => {
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
        return res
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
      const traced = await submit('trace-job-1', { traceparent: parent(8), tracestate: STATE })
      const first = await claim()
      assert.equal(first?.jobId, traced.body.jobId)
      assert.deepEqual(handed(first), { traceparent: parent(8), tracestate: STATE })
      const untraced = await submit('trace-job-2', {})
      const second = await claim()
      assert.equal(second?.jobId, untraced.body.jobId)
      assert.equal(second?.traceparent, started(untraced))
    })

    test("a resource's readers get the trace context of the version they read, a grant's holder that of the grant", async () => {
      const owner = await signedAgent(hub)
      const reader = await signedAgent(hub)
      const created = await owner.request<{ id: string }>(
        'POST',
        '/v1/resources',
        { namespace: 'trace', kind: 'note', data: { v: 1 } },
        { traceparent: parent(10), tracestate: STATE },
      )
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const rid = created.body.id
      const granted = await owner.request<{ id: string }>(
        'POST',
        '/v1/capabilities',
        {
          resourceId: rid,
          subject: reader.principal,
          actions: ['resource:read'],
          expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        },
        { traceparent: parent(11) },
      )
      assert.equal(granted.status, 201, JSON.stringify(granted.body))
      const held = await reader.request<{ capabilities: { id: string }[] }>(
        'GET',
        '/v1/capabilities',
      )
      const grant = held.body.capabilities.find((g) => g.id === granted.body.id)
      assert.deepEqual(handed(grant), { traceparent: parent(11) })
      const first = await reader.request('GET', `/v1/resources/${rid}`)
      assert.deepEqual(handed(first.body), { traceparent: parent(10), tracestate: STATE })
      const updated = await owner.request(
        'PATCH',
        `/v1/resources/${rid}`,
        { data: { v: 2 }, expectedVersion: 1 },
        { traceparent: parent(12) },
      )
      assert.equal(updated.status, 200, JSON.stringify(updated.body))
      const second = await reader.request('GET', `/v1/resources/${rid}`)
      assert.deepEqual(handed(second.body), { traceparent: parent(12) })
      const history = await reader.request<{ versions: unknown[] }>(
        'GET',
        `/v1/resources/${rid}/history`,
      )
      assert.deepEqual(history.body.versions.map(handed), [
        { traceparent: parent(10), tracestate: STATE },
        { traceparent: parent(12) },
      ])
      const revoked = await owner.request(
        'DELETE',
        `/v1/capabilities/${granted.body.id}`,
        undefined,
        {
          traceparent: parent(13),
        },
      )
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body))
      const after = await reader.request<{ capabilities: { id: string }[] }>(
        'GET',
        '/v1/capabilities',
      )
      const gone = after.body.capabilities.find((g) => g.id === granted.body.id)
      assert.deepEqual(handed(gone), { traceparent: parent(13) })
    })

    test("a home file's reader, an agent's admission and a hop's delegate get the trace context that wrote them", async () => {
      const a = await signedAgent(hub)
      const b = await signedAgent(hub)
      const wrote = await a.request(
        'PUT',
        '/v1/home/file',
        { path: 'notes/trace.md', content: 'checkpoint', expectedRevision: 0 },
        { traceparent: parent(14), tracestate: STATE },
      )
      assert.equal(wrote.status, 200, JSON.stringify(wrote.body))
      const file = await a.request('GET', '/v1/home/file?path=notes%2Ftrace.md')
      assert.deepEqual(handed(file.body), { traceparent: parent(14), tracestate: STATE })

      const admin = { authorization: `Bearer ${ADMIN}` }
      const decided = await call(hub, 'POST', `/admin/v1/principals/${b.principal}/approve`, {
        headers: { ...admin, traceparent: parent(15) },
      })
      assert.equal(decided.status, 200, JSON.stringify(decided.body))
      const principal = await call(hub, 'GET', `/admin/v1/principals/${b.principal}`, {
        headers: admin,
      })
      assert.deepEqual(handed(principal.body), { traceparent: parent(15) })
      assert.deepEqual(handed((await b.request('GET', '/v1/me')).body), { traceparent: parent(15) })

      const signed = signOffer({
        signer: await hopSigner(a.identity),
        aud: b.principal,
        dialog: 'tc',
      })
      const offered = await a.request(
        'POST',
        '/v1/hops',
        { to: b.principal, handoff: toHandoff(signed) },
        { traceparent: parent(16), tracestate: STATE },
      )
      assert.equal(offered.status, 200, JSON.stringify(offered.body))
      const inbox = await b.request<{ deliveries: { offer: string; kind: string }[] }>(
        'GET',
        '/v1/hops/inbox',
      )
      const delivery = inbox.body.deliveries.find((d) => d.offer === signed.digest)
      assert.equal(delivery?.kind, 'offer')
      assert.deepEqual(handed(delivery), { traceparent: parent(16), tracestate: STATE })
      const hop = await b.request('GET', `/v1/hops/${encodeURIComponent(signed.digest)}`)
      assert.deepEqual(handed(hop.body), { traceparent: parent(16), tracestate: STATE })
    })

    for (const [face, connect] of Object.entries(mcpFaces)) {
      test(`a tool call's _meta.traceparent over ${face} is the trace the hub hands on`, async () => {
        const client = new Client({ name: 'trace-test', version: '1.0.0' })
        await client.connect(connect(hub))
        try {
          const res = await client.callTool({
            name: 'create_agent_handoff',
            arguments: { payload: { n: 1 } },
            _meta: { traceparent: parent(17), tracestate: STATE },
          })
          const created = toolAnswer(res).body as { handoff_id: string; owner_token: string }
          assert.ok(created.handoff_id, JSON.stringify(res))
          const read = await call(hub, 'GET', `/services/v1/handoff/${created.handoff_id}`, {
            token: created.owner_token,
          })
          assert.deepEqual(handed(read.body), { traceparent: parent(17), tracestate: STATE })
        } finally {
          await client.close()
        }
      })
    }
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
    // A tool call over /mcp whose _meta carries trace context runs in a span of the hub's own,
    // a child of the caller's; the handoff it creates hands on that span, not the caller's.
    const client = new Client({ name: 'trace-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
    const tool = await client.callTool({
      name: 'create_agent_handoff',
      arguments: { payload: { n: 1 } },
      _meta: { traceparent: `00-${T2}-${P}-01`, tracestate: STATE },
    })
    await client.close()
    const created = toolAnswer(tool).body as { handoff_id: string; owner_token: string }
    const read = await call(hub, 'GET', `/services/v1/handoff/${created.handoff_id}`, {
      token: created.owner_token,
    })
    const [, toolTrace, toolSpan] = String(read.body.traceparent).split('-')
    assert.equal(toolTrace, T2)
    assert.notEqual(toolSpan, P)
    assert.equal(read.body.tracestate, STATE)
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
    const toolCall = spans.find((s) => s.traceId === T2 && s.spanId === toolSpan)
    assert.equal(toolCall?.name, 'tools/call create_agent_handoff')
    assert.equal(toolCall?.parentSpanId, P)
    assert.ok(
      spans.some((s) => s.name === 'baton.transaction' && s.parentSpanId === toolSpan),
      "the tool's write is in its span",
    )
  })
})
