// /metrics as a Prometheus server scrapes it: names with one prefix, the conventional types, and
// the domain metrics counting what happened.
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
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
    })
    after(() => hub?.close())

    test('every name starts with baton_ once, with Prometheus types and suffixes', async () => {
      const s = await scrape(hub)
      for (const name of s.types.keys()) {
        assert.match(name, /^baton_[a-z0-9_]+$/)
        assert.doesNotMatch(name, /baton_process_process_|baton_baton_/)
      }
      const expected: Record<string, string> = {
        baton_process_cpu_seconds_total: 'counter',
        baton_process_resident_memory_bytes: 'gauge',
        baton_nodejs_eventloop_lag_seconds: 'gauge',
        baton_http_requests_total: 'counter',
        baton_http_request_duration_seconds: 'histogram',
        baton_write_batch_size: 'histogram',
        baton_write_commit_duration_seconds: 'histogram',
        baton_handoff_moves_total: 'counter',
        baton_notify_deliveries_total: 'counter',
        baton_notify_outbox_signals: 'gauge',
        baton_event_listener_up: 'gauge',
        baton_connections_refused_total: 'counter',
        baton_signature_failures_total: 'counter',
        baton_open_waits: 'gauge',
        baton_sse_clients: 'gauge',
        baton_transfers: 'gauge',
      }
      for (const [name, type] of Object.entries(expected)) {
        assert.equal(s.types.get(name), type, name)
      }
      // prom-client's own defaults name a few gauges *_total; the hub's names follow the rule.
      for (const [name, type] of s.types) {
        if (/^baton_(nodejs|process)_/.test(name)) continue
        if (type === 'counter') assert.match(name, /_total$/, name)
        else assert.doesNotMatch(name, /_total$/, name)
      }
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
