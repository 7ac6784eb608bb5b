import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ManualClock } from '../src/clock.js'
import { call, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

for (const store of testStores) {
  describe(`operations (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store)
    })
    after(() => hub.close())

    test('/healthz and /readyz', async () => {
      assert.deepEqual((await call(hub, 'GET', '/healthz')).body, { ok: true })
      const ready = await call(hub, 'GET', '/readyz')
      assert.equal(ready.status, 200)
      assert.equal(ready.body.store, store.name)
    })

    test('/metrics speaks Prometheus and counts moves and batches', async () => {
      const h = (await call(hub, 'POST', H, { body: { payload: 1 } })).body as Record<
        string,
        string
      >
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token!,
        body: { from: 'offered' },
      })
      await call(hub, 'POST', `${H}/${h.handoff_id}/accepted`, {
        token: h.owner_token!,
        body: { from: 'offered' },
      })
      const res = await fetch(`${hub.url}/metrics`)
      assert.match(res.headers.get('content-type') ?? '', /text\/plain/)
      const text = await res.text()
      assert.match(text, /baton_handoff_moves_total\{outcome="moved"\} 1/)
      assert.match(text, /baton_handoff_moves_total\{outcome="conflict"\} 1/)
      assert.match(text, /baton_write_batch_size_count \d+/)
      assert.match(
        text,
        /baton_http_requests_total\{method="POST",route="\/services\/v1\/handoff\/:handoff_id\/:state",status="409"\} 1/,
      )
    })

    test('/openapi.json is OpenAPI 3.1 and documents every handoff path', async () => {
      const doc = (await call(hub, 'GET', '/openapi.json')).body as {
        openapi: string
        paths: Record<string, Record<string, { requestBody?: unknown; operationId: string }>>
      }
      assert.equal(doc.openapi, '3.1.0')
      assert.ok(doc.paths['/services/v1/handoff']?.post?.requestBody)
      assert.ok(doc.paths['/services/v1/handoff/{handoff_id}']?.get)
      assert.ok(doc.paths['/services/v1/handoff/{handoff_id}/{state}']?.post?.requestBody)
      assert.ok(doc.paths['/services/v1/handoff/{handoff_id}/wait/{seconds}']?.get)
      assert.ok(doc.paths['/mcp']?.post)
      const text = JSON.stringify(doc)
      for (const m of text.matchAll(/"\$ref":"([^"]+)"/g)) {
        assert.equal(m[1], '#/components/schemas/Error', 'every $ref resolves inside the document')
      }
      const read = doc.paths['/services/v1/handoff/{handoff_id}']?.get as unknown as {
        responses: Record<
          string,
          { content?: { 'application/json': { schema: { required: string[] } } } }
        >
      }
      assert.ok(
        read.responses['200']?.content?.['application/json'].schema.required.includes('history'),
      )
      const ids = Object.values(doc.paths).flatMap((p) =>
        Object.values(p).map((o) => o.operationId),
      )
      assert.equal(new Set(ids).size, ids.length, 'operation ids are unique')
    })
  })

  describe(`per-IP creation quota (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 23, 0, 0))
    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_HANDOFF_DAILY_QUOTA: '3', BATON_TRUST_PROXY: '127.0.0.1' },
        { clock },
      )
    })
    after(() => hub.close())

    const from = (ip: string) => ({ body: { payload: 1 }, headers: { 'x-forwarded-for': ip } })

    test('the quota counts creations per client IP per UTC day, 429 with Retry-After', async () => {
      for (let i = 0; i < 3; i++)
        assert.equal((await call(hub, 'POST', H, from('203.0.113.7'))).status, 201)
      const refused = await call(hub, 'POST', H, from('203.0.113.7'))
      assert.equal(refused.status, 429)
      assert.equal(refused.body.code, 'rate_limited')
      assert.equal(refused.headers.get('retry-after'), '3600', 'until the next UTC midnight')
      assert.equal((await call(hub, 'POST', H, from('198.51.100.9'))).status, 201, 'another IP')
      clock.advance(3600 * 1000)
      assert.equal((await call(hub, 'POST', H, from('203.0.113.7'))).status, 201, 'a new UTC day')
    })

    test('refused and failed creations are not counted', async () => {
      for (let i = 0; i < 5; i++) {
        const bad = await call(hub, 'POST', H, {
          body: { payload: 1, states: ['a', 'a'] },
          headers: { 'x-forwarded-for': '192.0.2.50' },
        })
        assert.equal(bad.status, 400)
      }
      for (let i = 0; i < 3; i++)
        assert.equal((await call(hub, 'POST', H, from('192.0.2.50'))).status, 201)
    })
  })

  describe(`trust proxy off (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_HANDOFF_DAILY_QUOTA: '2' })
    })
    after(() => hub.close())

    test('without a trusted proxy, X-Forwarded-For cannot dodge the quota', async () => {
      for (let i = 0; i < 2; i++) {
        const res = await call(hub, 'POST', H, {
          body: { payload: 1 },
          headers: { 'x-forwarded-for': `203.0.113.${i}` },
        })
        assert.equal(res.status, 201)
      }
      const res = await call(hub, 'POST', H, {
        body: { payload: 1 },
        headers: { 'x-forwarded-for': '203.0.113.99' },
      })
      assert.equal(res.status, 429)
    })
  })
}
