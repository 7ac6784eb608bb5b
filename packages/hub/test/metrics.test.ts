// /metrics as a Prometheus server scrapes it: the hub's names with one prefix, the process's and
// Node's unprefixed, the conventional types and suffixes, a health gauge that means something on
// each store, and the domain metrics counting what happened.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hopSigner } from '@baton/client'
import { signOffer, toHandoff } from '@baton/context'
import pino from 'pino'
import { startPostgres } from '../../../scripts/postgres.js'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import {
  call,
  onPostgres,
  PG_KEY_SECRET,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
} from './support.js'

const H = '/services/v1/handoff'
const ADMIN = 'metrics-test-operator-token-0123456789abcdef'

interface Scrape {
  types: Map<string, string>
  samples: string[]
}

async function scrape(hub: { url: string }): Promise<Scrape> {
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
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'true',
        BATON_ADMIN_TOKEN: ADMIN,
      })
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
        baton_budget_changes_total: 'counter',
        baton_admissions_total: 'counter',
        baton_resource_versions_total: 'counter',
        baton_grant_changes_total: 'counter',
        baton_home_file_changes_total: 'counter',
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

    test('each feature counts its committed work: every domain counter moves by what was done', async () => {
      const before = await scrape(hub)
      const admin = { authorization: `Bearer ${ADMIN}` }
      // Admissions: open admission approves each new key as it enrols; an operator decides one.
      const a = await signedAgent(hub)
      const b = await signedAgent(hub)
      const decided = await call(hub, 'POST', `/admin/v1/principals/${b.principal}/suspend`, {
        headers: admin,
      })
      assert.equal(decided.status, 200, JSON.stringify(decided.body))
      assert.equal(
        (await call(hub, 'POST', `/admin/v1/principals/${b.principal}/approve`, { headers: admin }))
          .status,
        200,
      )
      // Token handoffs: one created, one move.
      const h = (await call(hub, 'POST', H, { body: { payload: 1 } })).body as Record<
        string,
        string
      >
      const moved = await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.receiver_token!,
        body: { from: 'offered' },
      })
      assert.equal(moved.status, 200)
      // Messages: one sent, one acknowledged.
      const sent = await a.request<{ id: string }>('POST', '/v1/messages', {
        recipient: b.principal,
        body: { n: 1 },
        idempotencyKey: 'metrics-1',
      })
      assert.equal(sent.status, 201, JSON.stringify(sent.body))
      assert.equal((await b.request('POST', `/v1/messages/${sent.body.id}/ack`)).status, 200)
      // Resources: one created, one updated; grants: one issued, then revoked with its child.
      const resource = await a.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'metrics',
        kind: 'note',
        data: { v: 1 },
      })
      assert.equal(resource.status, 201, JSON.stringify(resource.body))
      const rid = resource.body.id
      const updated = await a.request('PATCH', `/v1/resources/${rid}`, {
        data: { v: 2 },
        expectedVersion: 1,
      })
      assert.equal(updated.status, 200, JSON.stringify(updated.body))
      const expiresAt = new Date(Date.now() + 3_600_000).toISOString()
      const grant = await a.request<{ id: string }>('POST', '/v1/capabilities', {
        resourceId: rid,
        subject: b.principal,
        actions: ['resource:read'],
        delegable: true,
        expiresAt,
      })
      assert.equal(grant.status, 201, JSON.stringify(grant.body))
      const c = await signedAgent(hub)
      const passed = await b.request('POST', '/v1/capabilities', {
        resourceId: rid,
        subject: c.principal,
        actions: ['resource:read'],
        expiresAt,
      })
      assert.equal(passed.status, 201, JSON.stringify(passed.body))
      assert.equal((await a.request('DELETE', `/v1/capabilities/${grant.body.id}`)).status, 200)
      // Home: one revision written, one file deleted.
      const home = await a.request('PUT', '/v1/home/file', {
        path: 'm/1.md',
        content: 'x',
        expectedRevision: 0,
      })
      assert.equal(home.status, 200, JSON.stringify(home.body))
      const removed = await a.request('DELETE', '/v1/home/file?path=m%2F1.md&expectedRevision=1')
      assert.equal(removed.status, 200, JSON.stringify(removed.body))
      // Hops: an offer delivered to its delegate, carrying a budget.
      const signed = signOffer({
        signer: await hopSigner(a.identity),
        aud: b.principal,
        dialog: 'm',
        extensions: { budget: { unit: 'usd', amountMicros: 1000 } },
      })
      const offered = await a.request('POST', '/v1/hops', {
        to: b.principal,
        handoff: toHandoff(signed),
      })
      assert.equal(offered.status, 200, JSON.stringify(offered.body))
      // Budgets: a spend, a hold settled, and a spend that would cross (a crossing delivered).
      const budget = `/v1/budgets/${signed.digest}`
      const spend = (idempotencyKey: string, amountMicros: number) =>
        b.request('POST', `${budget}/spend`, { idempotencyKey, amountMicros })
      assert.equal((await spend('m-1', 100)).status, 200)
      const held = await b.request<{ holdId: string }>('POST', `${budget}/holds`, {
        idempotencyKey: 'm-hold',
        amountMicros: 200,
      })
      assert.equal(held.status, 200, JSON.stringify(held.body))
      const settled = await b.request('POST', `${budget}/holds/${held.body.holdId}/settle`, {
        amountMicros: 150,
      })
      assert.equal(settled.status, 200, JSON.stringify(settled.body))
      assert.equal((await spend('m-2', 5000)).status, 409)
      // A2A: a task created by a send.
      const task = await a.request(
        'POST',
        '/v1/a2a',
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: {
            tenant: b.principal,
            message: { messageId: 'metrics-a2a-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
            configuration: { returnImmediately: true },
          },
        },
        { 'a2a-version': '1.0' },
      )
      assert.equal(task.status, 200, JSON.stringify(task.body))
      // Transfers: one staged.
      const staged = await a.request('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'metrics' }] },
      })
      assert.equal(staged.status, 201, JSON.stringify(staged.body))
      // Compute: a job queued and run to its end by the embedded runtime.
      const job = await a.request<{ jobId: string }>('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { '+': [{ var: 'a' }, { var: 'b' }] },
        input: { a: 1, b: 2 },
        idempotencyKey: 'metrics-job-1',
      })
      assert.equal(job.status, 201, JSON.stringify(job.body))
      let state = ''
      while (!['succeeded', 'failed'].includes(state)) {
        const res = await a.request<{ state: string }>(
          'GET',
          `/v1/compute/jobs/${job.body.jobId}/wait/5`,
        )
        assert.equal(res.status, 200, JSON.stringify(res.body))
        state = res.body.state
      }

      const after = await scrape(hub)
      const moved_ = (series: string) => (value(after, series) ?? 0) - (value(before, series) ?? 0)
      const expected: Record<string, number> = {
        'baton_admissions_total{state="approved"}': 4, // a, b and c enrolled, b approved again
        'baton_admissions_total{state="suspended"}': 1,
        baton_handoffs_created_total: 1,
        'baton_handoff_moves_total{outcome="moved"}': 1,
        baton_messages_sent_total: 1,
        baton_messages_acked_total: 1,
        'baton_resource_versions_total{change="created"}': 1,
        'baton_resource_versions_total{change="updated"}': 1,
        'baton_grant_changes_total{change="issued"}': 2,
        'baton_grant_changes_total{change="revoked"}': 2,
        'baton_home_file_changes_total{change="written"}': 1,
        'baton_home_file_changes_total{change="deleted"}': 1,
        'baton_hop_deliveries_total{kind="offer"}': 1,
        'baton_hop_deliveries_total{kind="budget-crossing"}': 1,
        'baton_budget_changes_total{change="granted"}': 1,
        'baton_budget_changes_total{change="spent"}': 1,
        'baton_budget_changes_total{change="held"}': 1,
        'baton_budget_changes_total{change="settled"}': 1,
        'baton_budget_changes_total{change="refused"}': 1,
        'baton_a2a_task_updates_total{state="TASK_STATE_SUBMITTED"}': 1,
        'baton_transfer_transitions_total{state="staged"}': 1,
        'baton_compute_jobs_total{state="queued"}': 1,
        'baton_compute_jobs_total{state="succeeded"}': 1,
      }
      for (const [series, n] of Object.entries(expected)) assert.equal(moved_(series), n, series)
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
      const before = value(await scrape(hub), 'baton_transfers{state="staged"}') ?? 0
      const created = await agent.request('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const s = await scrape(hub)
      assert.equal(value(s, 'baton_transfers{state="staged"}'), before + 1)
    })
  })
}

// baton_up means the database answers: it drops to 0 when the database stops answering, and is
// 1 again once it does (PostgreSQL, a server of the test's own stopped and started again).
const sqliteStore = testStores.find((s) => s.name === 'sqlite')
describe('baton_up when the database stops answering (sqlite)', {
  skip: sqliteStore ? false : 'SQLite is not chosen',
}, () => {
  test('the hub whose database is closed under it scrapes baton_up 0', async () => {
    const hub = await startTestHub(sqliteStore!)
    try {
      assert.equal(value(await scrape(hub), 'baton_up'), 1)
      // The file is gone from under the hub's connections: nothing it asks is answered.
      await hub.ctx.database.close()
      assert.equal(value(await scrape(hub), 'baton_up'), 0)
    } finally {
      await hub.close().catch(() => {})
    }
  })
})

describe('baton_up when the database stops answering (postgres)', {
  skip: onPostgres.skip,
}, () => {
  let pg: Awaited<ReturnType<typeof startPostgres>>
  let hub: RunningHub
  before(async () => {
    pg = await startPostgres()
    hub = await startHub(
      loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        DATABASE_URL: pg.url,
        BATON_HUB_KEY_SECRET: PG_KEY_SECRET,
      }),
      { log: pino({ level: 'silent' }) },
    )
  })
  after(async () => {
    await hub?.stop()
    await pg?.stop()
  })

  test('a stopped server scrapes baton_up 0, and 1 again once it is back', async () => {
    assert.equal(value(await scrape(hub), 'baton_up'), 1)
    await pg.halt()
    assert.equal(value(await scrape(hub), 'baton_up'), 0)
    await pg.start()
    // The pool reconnects on the next query: a scrape after the server is back asks again.
    let up = value(await scrape(hub), 'baton_up')
    for (let i = 0; i < 50 && up !== 1; i++) up = value(await scrape(hub), 'baton_up')
    assert.equal(up, 1)
  })
})
