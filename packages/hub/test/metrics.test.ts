// /metrics as a Prometheus server scrapes it: the hub's names with one prefix, the process's and
// Node's unprefixed, the conventional types and suffixes, a health gauge that means something on
// each store, and the domain metrics counting what happened.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

interface Scrape {
  types: Map<string, string>
  samples: string[]
}

async function scrape(hub: TestHub): Promise<Scrape> {
  const res = await fetch(`${hub.url}/metrics`)
  assert.equal(res.status, 200)
  const text = await res.text()
  const types = new Map<string, string>()
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1]!, m[2]!)
  return { types, samples: text.split('\n').filter((l) => l && !l.startsWith('#')) }
}

/** The value of one sample line, `name{labels} value`, or undefined when it is absent. */
function value(s: Scrape, series: string): number | undefined {
  const line = s.samples.find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

for (const store of testStores) {
  describe(`/metrics (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_COMPUTE_EMBEDDED: 'true' })
    })
    after(() => hub?.close())

    test('names follow the Prometheus conventions: baton_ for the hub, none for the process', async () => {
      const s = await scrape(hub)
      for (const [name, type] of s.types) {
        // The standard process and Node.js metrics, unprefixed; every other one is the hub's.
        if (/^(process|nodejs)_/.test(name)) assert.doesNotMatch(name, /baton/, name)
        else assert.match(name, /^baton_[a-z0-9_]+$/, name)
        assert.doesNotMatch(name, /baton_baton_|_process_process_/, name)
        // Counters, and only counters, end in _total.
        if (type === 'counter') assert.match(name, /_total$/, name)
        else assert.doesNotMatch(name, /_total$/, name)
      }
      const expected: Record<string, string> = {
        process_cpu_seconds_total: 'counter',
        process_resident_memory_bytes: 'gauge',
        nodejs_eventloop_lag_seconds: 'gauge',
        nodejs_active_handles: 'gauge',
        baton_up: 'gauge',
        baton_http_requests_total: 'counter',
        baton_http_request_duration_seconds: 'histogram',
        baton_write_batch_size: 'histogram',
        baton_write_commit_duration_seconds: 'histogram',
        baton_handoffs_created_total: 'counter',
        baton_handoff_moves_total: 'counter',
        baton_notify_deliveries_total: 'counter',
        baton_notify_outbox_signals: 'gauge',
        baton_connections_refused_total: 'counter',
        baton_signature_failures_total: 'counter',
        baton_open_waits: 'gauge',
        baton_sse_clients: 'gauge',
        baton_transfers: 'gauge',
        baton_transfer_transitions_total: 'counter',
        baton_messages_sent_total: 'counter',
        baton_messages_acked_total: 'counter',
        baton_compute_jobs_total: 'counter',
        baton_a2a_task_updates_total: 'counter',
        baton_hop_deliveries_total: 'counter',
        baton_admissions_total: 'counter',
      }
      for (const [name, type] of Object.entries(expected)) {
        assert.equal(s.types.get(name), type, name)
      }
    })

    test('baton_up is 1 while the hub serves; the LISTEN gauge exists only on PostgreSQL', async () => {
      const s = await scrape(hub)
      assert.equal(value(s, 'baton_up'), 1)
      if (store.name === 'postgres') assert.equal(value(s, 'baton_event_listener_up'), 1)
      else assert.equal(s.types.get('baton_event_listener_up'), undefined)
    })

    test('each feature counts its committed work', async () => {
      const a = await signedAgent(hub)
      const sent = await a.request('POST', '/v1/messages', {
        recipient: a.principal,
        body: { n: 1 },
        idempotencyKey: 'metrics-1',
      })
      assert.equal(sent.status, 201, JSON.stringify(sent.body))
      const id = (sent.body as { id: string }).id
      assert.equal((await a.request('POST', `/v1/messages/${id}/ack`)).status, 200)
      const job = await a.request('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { '+': [{ var: 'a' }, { var: 'b' }] },
        input: { a: 1, b: 2 },
        idempotencyKey: 'metrics-job-1',
      })
      assert.equal(job.status, 201, JSON.stringify(job.body))
      const jobId = (job.body as { jobId: string }).jobId
      let state = ''
      while (!['succeeded', 'failed'].includes(state)) {
        const res = await a.request('GET', `/v1/compute/jobs/${jobId}/wait/5`)
        assert.equal(res.status, 200, JSON.stringify(res.body))
        state = (res.body as { state: string }).state
      }
      const s = await scrape(hub)
      assert.equal(value(s, 'baton_messages_sent_total'), 1)
      assert.equal(value(s, 'baton_messages_acked_total'), 1)
      assert.equal(value(s, 'baton_compute_jobs_total{state="queued"}'), 1)
      assert.equal(value(s, 'baton_compute_jobs_total{state="succeeded"}'), 1)
      // Open admission approves each new key as it enrols.
      assert.ok((value(s, 'baton_admissions_total{state="approved"}') ?? 0) >= 1)
    })

    test('signature failures are counted by code', async () => {
      const bad = await call(hub, 'GET', '/v1/me', {
        headers: { 'signature-input': 'sig1=("@method")', signature: 'sig1=:AAAA:' },
      })
      assert.equal(bad.status, 401)
      const unsigned = await call(hub, 'GET', '/v1/me')
      assert.equal(unsigned.body.code, 'signature_missing')
      const s = await scrape(hub)
      assert.equal(value(s, `baton_signature_failures_total{code="${bad.body.code}"}`), 1)
      assert.equal(value(s, 'baton_signature_failures_total{code="signature_missing"}'), 1)
    })

    test('commits are measured, and an open wait is counted until it answers', async () => {
      const h = (await call(hub, 'POST', H, { body: { payload: 1 } })).body as Record<
        string,
        string
      >
      const waiting = call(hub, 'GET', `${H}/${h.handoff_id}/wait/30`, { token: h.owner_token! })
      let open: number | undefined
      for (let i = 0; i < 200 && open !== 1; i++) {
        open = value(await scrape(hub), 'baton_open_waits')
      }
      assert.equal(open, 1)
      const moved = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token!,
        body: { from: 'offered' },
      })
      assert.equal(moved.status, 200)
      assert.equal((await waiting).status, 200)
      const s = await scrape(hub)
      assert.equal(value(s, 'baton_open_waits'), 0)
      assert.ok((value(s, 'baton_write_commit_duration_seconds_count') ?? 0) >= 2)
      assert.ok((value(s, 'baton_write_batch_size_count') ?? 0) >= 2)
    })

    test('transfers are counted by state at each scrape', async () => {
      const agent = await signedAgent(hub)
      const created = await agent.request('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const s = await scrape(hub)
      assert.equal(value(s, 'baton_transfers{state="staged"}'), 1)
    })
  })
}
