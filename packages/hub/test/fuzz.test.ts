import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import { call, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

for (const store of testStores) {
  describe(`fuzzing the handoff routes (${store.name})`, () => {
    let hub: TestHub
    let h: Record<string, string>
    before(async () => {
      hub = await startTestHub(store, { BATON_HANDOFF_DAILY_QUOTA: '1000000' })
      h = (await call(hub, 'POST', H, { body: { payload: { seed: true } } })).body as Record<
        string,
        string
      >
    })
    after(() => hub.close())

    const anyJson = fc.oneof(
      fc.jsonValue(),
      fc.record({ payload: fc.jsonValue() }, { requiredKeys: [] }),
      fc.record(
        {
          payload: fc.jsonValue(),
          note: fc.oneof(fc.string(), fc.integer()),
          notify_url: fc.oneof(fc.webUrl(), fc.string()),
          states: fc.array(fc.oneof(fc.string(), fc.constantFrom('a', 'b', 'c'))),
          final: fc.array(fc.string()),
          transitions: fc.dictionary(fc.string(), fc.array(fc.string())),
          from: fc.oneof(fc.string(), fc.constantFrom('offered', 'accepted')),
          nonce: fc.string(),
        },
        { requiredKeys: [] },
      ),
    )

    test('no body, path or header makes a 5xx; every refusal has a registered code', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
          fc.oneof(
            fc.constant(H),
            fc.constant(`${H}/${h.handoff_id}`),
            fc.string().map((s) => `${H}/${h.handoff_id}/${encodeURIComponent(s)}`),
            fc.string().map((s) => `${H}/${encodeURIComponent(s)}/accepted`),
            fc.string().map((s) => `${H}/${h.handoff_id}/wait/${encodeURIComponent(s)}`),
          ),
          fc.oneof(
            anyJson.map((v) => ({ raw: JSON.stringify(v) })),
            fc.string().map((raw) => ({ raw })),
            fc.constant({}),
          ),
          fc.option(
            fc.constantFrom(h.owner_token, h.receiver_token, 'x', '', `hot_o_${'a'.repeat(43)}`),
          ),
          fc.option(
            fc.constantFrom(
              'application/json',
              'text/plain',
              'application/x-www-form-urlencoded',
              'application/json; charset=utf-8',
            ),
          ),
          async (method, path, body, token, contentType) => {
            const headers: Record<string, string> = {}
            if (contentType) headers['content-type'] = contentType
            const res = await call(hub, method, path, {
              ...body,
              ...(method === 'GET' ? { raw: undefined } : {}),
              ...(token ? { token } : {}),
              headers,
            })
            assert.ok(
              res.status < 500,
              `${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`,
            )
            if (res.status >= 400) {
              assert.ok(Object.hasOwn(ERRORS, String(res.body.code)), JSON.stringify(res.body))
            }
          },
        ),
        { numRuns: 150 },
      )
      // The seed handoff may have moved forward under fuzzing, but it is intact and readable.
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token! })
      assert.equal(read.status, 200)
      assert.deepEqual(read.body.payload, { seed: true })
    })
  })
}
