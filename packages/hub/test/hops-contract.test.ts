import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { HOP_LIMITS } from '@baton/protocol'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

type Answer = { status: number; body: { code?: string; field?: string } }

// The contract is the rule: what the published schema of a hop operation accepts, the hub accepts,
// and what it refuses is a 400 with a stable code, never a rule of the service's own.
for (const store of testStores) {
  describe(`the hop operations' contract over HTTP (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient

    before(async () => {
      hub = await startTestHub(store, OPEN)
      agent = await signedAgent(hub)
    })
    after(() => hub?.close())

    const get = (path: string) => agent.request('GET', path) as Promise<Answer>

    test('the inbox takes after and limit by their published codecs', async () => {
      for (const q of ['', '?after=0', '?after=12&limit=1', `?limit=${HOP_LIMITS.maxPageSize}`]) {
        const res = await get(`/v1/hops/inbox${q}`)
        assert.equal(res.status, 200, q)
      }
      for (const [q, field] of [
        ['?after=', 'after'],
        ['?after=007', 'after'],
        ['?after=-1', 'after'],
        ['?limit=0', 'limit'],
        [`?limit=${HOP_LIMITS.maxPageSize + 1}`, 'limit'],
        ['?limit=1.5', 'limit'],
      ] as const) {
        const res = await get(`/v1/hops/inbox${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.code, 'invalid_request', q)
        assert.equal(res.body.field, field, q)
      }
      const unknown = await get('/v1/hops/inbox?cursor=1')
      assert.equal(unknown.status, 400)
      assert.equal(unknown.body.code, 'unknown_field')
    })

    test('the inbox limit the hub publishes is the one it enforces', async () => {
      const doc = await call(hub, 'GET', '/openapi.json')
      const op = (doc.body.paths as Record<string, Record<string, unknown>>)['/v1/hops/inbox']!
        .get as { parameters: { name: string; schema: unknown }[] }
      const limit = op.parameters.find((p) => p.name === 'limit')!
      const text = JSON.stringify(limit.schema)
      const pattern = /"pattern":"([^"]+)"/.exec(text)?.[1]
      assert.ok(pattern, text)
      const re = new RegExp(JSON.parse(`"${pattern}"`))
      assert.equal(re.test(String(HOP_LIMITS.maxPageSize)), true)
      assert.equal(re.test(String(HOP_LIMITS.maxPageSize + 1)), false)
      assert.equal(re.test('0'), false)
    })

    test('a hop is named by a handoff digest: any other text is a 400, a missing one a 404', async () => {
      const missing = await get(`/v1/hops/${'A'.repeat(43)}`)
      assert.equal(missing.status, 404)
      assert.equal(missing.body.code, 'hop_not_found')
      const chain = await get(`/v1/hops/${'A'.repeat(43)}/chain`)
      assert.equal(chain.body.code, 'hop_not_found')
      for (const digest of ['A'.repeat(42), 'A'.repeat(44), `${'A'.repeat(42)}=`, 'x'.repeat(60)]) {
        for (const suffix of ['', '/chain']) {
          const res = await get(`/v1/hops/${encodeURIComponent(digest)}${suffix}`)
          assert.equal(res.status, 400, digest + suffix)
          assert.equal(res.body.code, 'invalid_request', digest + suffix)
          assert.equal(res.body.field, 'digest', digest + suffix)
        }
      }
    })

    test('an offer without a Handoff object and a status of the wrong type are 400s', async () => {
      const other = await signedAgent(hub)
      const none = (await agent.request('POST', '/v1/hops', { to: other.principal })) as Answer
      assert.equal(none.status, 400)
      assert.equal(none.body.code, 'invalid_request')
      assert.equal(none.body.field, 'handoff')
      const status = (await agent.request('POST', '/v1/hops/statuses', { status: 7 })) as Answer
      assert.equal(status.status, 400)
      assert.equal(status.body.code, 'invalid_request')
      assert.equal(status.body.field, 'status')
    })
  })
}
