import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { ERRORS } from '@baton/protocol'
import fc from 'fast-check'
import { assertAnswered, FUZZ_LIMITS, hostileBody, hostileParam, storedState } from './hostile.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// Every signed route, with correctly signed requests carrying random bodies, ids and queries:
// whatever the input, the answer is never a 5xx, and every refusal carries a registered code.
const ROUTES: [string, string][] = [
  ['GET', '/v1/me'],
  ['POST', '/v1/resources'],
  ['GET', '/v1/resources?namespace=%s&kind=%s&limit=%s&after=%s'],
  ['GET', '/v1/resources/%s'],
  ['PATCH', '/v1/resources/%s'],
  ['GET', '/v1/resources/%s/history'],
  ['GET', '/v1/capabilities'],
  ['POST', '/v1/capabilities'],
  ['DELETE', '/v1/capabilities/%s'],
  ['POST', '/v1/messages'],
  ['GET', '/v1/messages?after=%s&limit=%s&unacked=%s&wait=0'],
  ['POST', '/v1/messages/%s/ack'],
  ['PUT', '/v1/home/file'],
  ['GET', '/v1/home/file?path=%s'],
  ['GET', '/v1/home/files?prefix=%s&limit=%s'],
  ['DELETE', '/v1/home/file?path=%s&expectedRevision=%s'],
  ['POST', '/v1/transfers'],
  ['GET', '/v1/transfers?role=%s&state=%s'],
  ['POST', '/v1/transfers/claim'],
  ['GET', '/v1/transfers/%s'],
  ['GET', '/v1/transfers/%s/wait?seconds=%s&version=%s'],
  ['GET', '/v1/transfers/%s/snapshot'],
  ['POST', '/v1/transfers/%s/provision'],
  ['POST', '/v1/transfers/%s/claim'],
  ['POST', '/v1/transfers/%s/push'],
  ['POST', '/v1/transfers/%s/activate'],
  ['POST', '/v1/transfers/%s/lease'],
  ['POST', '/v1/transfers/%s/usage'],
]

const value = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('0', '1', '-1', '100', '1e3', 'true', '..', 'a/b', 'rs_x', '%00', ''),
)
const field = fc.constantFrom(
  'namespace',
  'kind',
  'data',
  'expectedVersion',
  'resourceId',
  'subject',
  'actions',
  'delegable',
  'expiresAt',
  'recipient',
  'body',
  'idempotencyKey',
  'path',
  'expectedRevision',
  'content',
  'snapshot',
  'tier',
  'token',
  'checksum',
  'amountMicros',
  'seconds',
  'extra',
)
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(field, fc.oneof(fc.jsonValue({ maxDepth: 2 }), value), { maxKeys: 6 }),
)

for (const store of testStores) {
  describe(`fuzzing the signed routes (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
        BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
        ...FUZZ_LIMITS,
      })
      agent = await signedAgent(hub)
    })
    after(() => hub.close())

    test('no signed request makes a 5xx; every refusal has a registered code', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ROUTES),
          fc.array(value, { minLength: 4, maxLength: 4 }),
          fc.option(body),
          async ([method, template], params, payload) => {
            let i = 0
            const path = template.replace(/%s/g, () => encodeURIComponent(params[i++] ?? ''))
            const res = await agent.request(
              method,
              path,
              payload === null || method === 'GET' || method === 'DELETE'
                ? undefined
                : (payload as object),
            )
            assert.ok(
              res.status < 500,
              `${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`,
            )
            if (res.status >= 400) {
              const code = (res.body as { code?: string })?.code
              assert.ok(
                Object.hasOwn(ERRORS, String(code)),
                `${method} ${path}: ${JSON.stringify(res.body)}`,
              )
            }
          },
        ),
        { numRuns: 300 },
      )
    })

    const fill = (template: string, param: string) => template.replace(/%s/g, () => param)
    const withBody = ROUTES.filter(([method]) => method !== 'GET' && method !== 'DELETE')

    test('hostile bodies on every signed route are refused and change nothing', async () => {
      // Something of each kind to change, so a wrongly accepted body would show in the state.
      const resource = await agent.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'fuzz',
        kind: 'k',
        data: { v: 1 },
      })
      assert.equal(resource.status, 201)
      const before = await storedState(hub)
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...withBody),
          hostileBody,
          fc.constantFrom(resource.body.id, 'tr_x', 'm_1', 'x'),
          async ([method, template], body, param) => {
            const path = fill(template, encodeURIComponent(param))
            const res = await agent.request(method, path, body.bytes)
            const what = `${method} ${path} (${body.kind})`
            assertAnswered(what, res.status, res.body)
            assert.ok(res.status >= 400, `${what} was accepted: ${JSON.stringify(res.body)}`)
          },
        ),
        { numRuns: 200 },
      )
      assert.deepEqual(await storedState(hub), before)
    })

    test('hostile path and query parameters on every signed route never make a 5xx', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ROUTES),
          hostileParam,
          async ([method, template], param) => {
            const path = fill(template, param)
            const body = method === 'GET' || method === 'DELETE' ? undefined : {}
            const res = await agent.request(method, path, body)
            assertAnswered(`${method} ${path}`, res.status, res.body)
            if (template.includes('%s') && param.includes('%00')) {
              assert.ok(res.status >= 400, `${method} ${path} accepted a NUL`)
            }
          },
        ),
        { numRuns: 200 },
      )
    })
  })
}
