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
  ['POST', '/v1/compute/jobs'],
  ['GET', '/v1/compute/jobs?state=%s&limit=%s'],
  ['GET', '/v1/compute/jobs/%s'],
  ['GET', '/v1/compute/jobs/%s/wait/%s?version=%s'],
  ['POST', '/v1/compute/jobs/%s/cancel'],
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
  'language',
  'program',
  'input',
  'inputResourceId',
  'output',
  'extra',
)
// json-expr-v1 programs: operator calls nested in each other, with wrong arities and types too.
const program = fc.letrec<{ expr: unknown }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 1 }),
    fc
      .tuple(
        fc.constantFrom(
          'var',
          '+',
          '==',
          'in',
          'cat',
          'merge',
          'if',
          'map',
          'reduce',
          'substr',
          'x',
        ),
        fc.array(tie('expr'), { maxLength: 3 }),
      )
      .map(([op, args]) => ({ [op]: args })),
  ),
})).expr
const body = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(field, fc.oneof(fc.jsonValue({ maxDepth: 2 }), value), { maxKeys: 6 }),
  fc.record(
    {
      language: fc.constantFrom('json-expr-v1', 'x', ''),
      program,
      input: fc.jsonValue({ maxDepth: 2 }),
      idempotencyKey: fc.string({ minLength: 0, maxLength: 20 }),
    },
    { requiredKeys: ['program'] },
  ),
)

// The A2A 1.0 JSON-RPC binding: every method the hub serves (but the streaming ones, which
// hold their answer open) and some it does not, with random params and versions.
const a2aMethod = fc.constantFrom(
  'SendMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'message/send',
  'NoSuchMethod',
)
const a2aField = fc.constantFrom(
  'id',
  'taskId',
  'contextId',
  'tenant',
  'message',
  'historyLength',
  'currentGeneration',
  'pageSize',
  'pageToken',
  'status',
  'url',
  'token',
  'metadata',
)
const a2aMessage = fc.record(
  {
    messageId: fc.string({ maxLength: 12 }),
    role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 'user', 'x'),
    parts: fc.array(
      fc.oneof(
        fc.record({ text: fc.string({ maxLength: 30 }) }),
        fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      { maxLength: 3 },
    ),
    taskId: value,
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 3,
    }),
  },
  { requiredKeys: [] },
)
const a2aParams = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.dictionary(a2aField, fc.oneof(value, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 5 }),
  fc.record({ message: a2aMessage, tenant: fc.oneof(value, fc.constant('did:key:z6Mkx')) }),
)
/** The JSON-RPC error codes of JSON-RPC 2.0 and of A2A 1.0's binding, but internal (-32603). */
const A2A_CODES = new Set([
  -32700, -32600, -32601, -32602, -32000, -32001, -32002, -32003, -32004, -32005, -32006, -32007,
  -32008, -32009, -32010,
])

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
            // A test hub runs no compute runtime, so a valid submit is the documented 503.
            const unserved = (res.body as { code?: string })?.code === 'compute_unavailable'
            assert.ok(
              res.status < 500 || unserved,
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

    test('no signed A2A JSON-RPC call makes a 5xx or an internal error; every error is registered', async () => {
      await fc.assert(
        fc.asyncProperty(
          a2aMethod,
          fc.option(a2aParams),
          fc.constantFrom('1.0', '1.0.3', '0.3', '', '2.0', 'x'),
          fc.oneof(fc.constant<unknown>(1), fc.string({ maxLength: 6 }), fc.constant(null)),
          async (method, params, version, id) => {
            const rpc = { jsonrpc: '2.0', id, method, ...(params === null ? {} : { params }) }
            const res = await agent.request<{
              error?: { code: unknown; data?: { code?: unknown } }
            }>('POST', '/v1/a2a', rpc, version === '' ? {} : { 'a2a-version': version })
            const what = `${method} ${JSON.stringify(params)} (A2A-Version ${version})`
            assert.ok(res.status < 500, `${what} -> ${res.status} ${JSON.stringify(res.body)}`)
            const error = res.body?.error
            if (error) {
              assert.ok(A2A_CODES.has(error.code as number), `${what}: ${JSON.stringify(error)}`)
              const code = error.data?.code
              if (code !== undefined) {
                assert.ok(Object.hasOwn(ERRORS, String(code)), `${what}: ${JSON.stringify(error)}`)
              }
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
