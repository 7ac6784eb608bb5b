import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import {
  assertAnswered,
  FUZZ_LIMITS,
  hostileBody,
  hostileParam,
  isRegisteredRefusal,
  storedState,
} from './hostile.js'
import { call, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'
const ADMIN_TOKEN = 'fuzz-operator-0123456789abcdefghijklmnop'
const DID = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'

// Every route reachable without a signature that reads a body; `%s` is a path parameter.
const BODY_ROUTES: [string, string][] = [
  ['POST', H],
  ['POST', `${H}/%s/accepted`],
  ['POST', `${H}/%id/%s`],
  ['POST', '/mcp'],
  ['POST', `/admin/v1/principals/${DID}/%s`],
  ['POST', '/admin/v1/transfers/%s/tokens'],
  ['POST', '/admin/v1/transfers/%s/terminate'],
  ['POST', '/dashboard/session'],
  ['POST', '/dashboard/signout'],
  ['POST', `/dashboard/api/principals/${DID}/%s`],
]
// Every route reachable without a signature; `%s` is a path or query parameter.
const PARAM_ROUTES: [string, string][] = [
  ['GET', `${H}/%s`],
  ['GET', `${H}/%id/wait/%s`],
  ['POST', `${H}/%s/accepted`],
  ['POST', `${H}/%id/%s`],
  ['GET', '/admin/v1/principals?state=%s'],
  ['GET', '/admin/v1/principals/%s'],
  ['POST', '/admin/v1/principals/%s/approve'],
  ['GET', '/admin/v1/transfers/%s'],
  ['POST', '/admin/v1/transfers/%s/terminate'],
  ['GET', '/dashboard/assets/%s'],
  ['GET', '/dashboard/api/principals?state=%s'],
  ['GET', '/.well-known/agent-net?x=%s'],
  ['GET', '/healthz?x=%s'],
]

for (const store of testStores) {
  describe(`fuzzing the handoff routes (${store.name})`, () => {
    let hub: TestHub
    let h: Record<string, string>
    before(async () => {
      hub = await startTestHub(store, {
        BATON_HANDOFF_DAILY_QUOTA: '1000000',
        BATON_ADMIN_TOKEN: ADMIN_TOKEN,
        ...FUZZ_LIMITS,
      })
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
              assert.ok(isRegisteredRefusal(res.body), JSON.stringify(res.body))
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

    const fill = (template: string, param: string) =>
      template.replace('%id', h.handoff_id!).replace('%s', param)
    const tokens = fc.option(
      fc.constantFrom(
        () => h.owner_token!,
        () => h.receiver_token!,
        () => ADMIN_TOKEN,
      ),
    )

    test('oversized, deep, __proto__, NUL, surrogate and non-UTF-8 bodies are refused and change nothing', async () => {
      const before = await storedState(hub)
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...BODY_ROUTES),
          hostileBody,
          fc.constantFrom('accepted', 'approve', 'tr_x', 'working'),
          tokens,
          fc.constantFrom(
            'application/json',
            'application/json; charset=utf-8',
            'application/x+json',
          ),
          async ([method, template], body, param, token, contentType) => {
            const path = fill(template, param)
            const headers: Record<string, string> = { 'content-type': contentType }
            if (token) headers.authorization = `Bearer ${token()}`
            const res = await fetch(hub.url + path, { method, headers, body: body.bytes })
            const text = await res.text()
            const what = `${method} ${path} (${body.kind})`
            assertAnswered(what, res.status, text ? JSON.parse(text) : {})
            assert.ok(res.status >= 400, `${what} was accepted: ${text}`)
          },
        ),
        { numRuns: 120 },
      )
      assert.deepEqual(await storedState(hub), before)
    })

    test('NUL, surrogates and bad UTF-8 in path and query parameters never make a 5xx', async () => {
      const before = await storedState(hub)
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...PARAM_ROUTES),
          hostileParam,
          tokens,
          async ([method, template], param, token) => {
            const path = fill(template, param)
            const res = await call(hub, method, path, {
              ...(method === 'POST' ? { body: { from: 'offered' } } : {}),
              ...(token ? { token: token() } : {}),
            })
            assertAnswered(`${method} ${path}`, res.status, res.body)
          },
        ),
        { numRuns: 150 },
      )
      assert.deepEqual(await storedState(hub), before)
    })
  })
}
