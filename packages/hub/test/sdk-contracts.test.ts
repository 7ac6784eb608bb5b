// The SDK from the contracts: every operation the hub serves has a typed SDK call (its contract,
// through `call`), and the request the SDK makes for a contract is the one the hub's published
// OpenAPI document describes for that operation: method, path, query parameters, body and the
// credential its security scheme names. Then the SDK's calls reach a real hub and answer what it
// answers, for every kind of auth.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  BatonClient,
  CONTRACTS,
  type Contract,
  contracts,
  requestContract,
  type SendRequest,
  type SignedClient,
} from '@baton/client'
import fc from 'fast-check'
import { OPERATIONS } from '../src/ops/registry.js'
import { type JsonSchema, valid } from './schema-arbitrary.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN = 'sdk-operator-token-0123456789abcdef0123'

interface OperationDoc {
  operationId: string
  security?: Record<string, unknown>[]
  parameters?: { name: string; in: string; schema: JsonSchema }[]
  requestBody?: { content?: { 'application/json'?: { schema: JsonSchema } } }
}

test('every operation the hub serves is a contract the SDK calls, and nothing else is', () => {
  const byName = new Map(CONTRACTS.map((c) => [c.name, c]))
  const missing = OPERATIONS.filter((op) => byName.get(op.name) !== op.contract).map((o) => o.name)
  assert.deepEqual(missing, [], 'operations whose contract the SDK does not have')
  const served = new Set(OPERATIONS.map((op) => op.name))
  assert.deepEqual(
    CONTRACTS.filter((c) => !served.has(c.name)).map((c) => c.name),
    [],
    'contracts no operation serves',
  )
  assert.equal(new Set(CONTRACTS.map((c) => c.name)).size, CONTRACTS.length, 'one contract a name')
  for (const c of CONTRACTS) {
    assert.equal((contracts as Record<string, unknown>)[c.name], c, `contracts.${c.name}`)
  }
})

const store = testStores[0]!
describe(`the SDK's request for each contract is the published operation (${store.name})`, () => {
  let hub: TestHub
  let doc: { paths: Record<string, Record<string, OperationDoc>> }
  before(async () => {
    hub = await startTestHub(store)
    doc = (await call(hub, 'GET', '/openapi.json')).body as typeof doc
  })
  after(() => hub.close())

  test('method, path, query, body and credential, for inputs made from the schemas', async () => {
    const routes = new Map<string, { method: string; path: string; doc: OperationDoc }>()
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, d] of Object.entries(methods)) {
        routes.set(d.operationId, { method: method.toUpperCase(), path, doc: d })
      }
    }
    for (const contract of CONTRACTS) {
      const route = routes.get(contract.name)
      assert.ok(route, `${contract.name} is in the OpenAPI document`)
      const template = new RegExp(
        `^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[A-Za-z_]+\}/g, '[^/?]+')}$`,
      )
      const queryNames = new Set(
        (route.doc.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      )
      const bodySchema = route.doc.requestBody?.content?.['application/json']?.schema
      const scheme = Object.keys(route.doc.security?.[0] ?? {})[0]
      const params: Record<string, fc.Arbitrary<string>> = {}
      const query: Record<string, fc.Arbitrary<unknown>> = {}
      for (const p of route.doc.parameters ?? []) {
        if (p.in === 'path')
          params[p.name] = valid(p.schema)
            .map(String)
            .filter((s) => s !== '')
        if (p.in === 'query') query[p.name] = valid(p.schema)
      }
      const inputs = fc.sample(
        fc.record({
          params: fc.record(params),
          query: fc.record(query, { requiredKeys: [] }),
          body: bodySchema ? valid(bodySchema) : fc.constant(undefined),
        }),
        { numRuns: 5, seed: 42 },
      )
      for (const input of inputs) {
        let sent: Parameters<SendRequest>[0] | undefined
        await requestContract(
          async (request) => {
            sent = request
            return { status: 200, headers: new Headers(), body: {} }
          },
          contract as Contract,
          input as never,
          { token: 'a-handoff-token', adminToken: ADMIN },
        )
        const at = `${contract.name} ${JSON.stringify(input).slice(0, 200)}`
        assert.ok(sent, at)
        assert.equal(sent.method, route.method, at)
        const url = new URL(sent.path, 'http://hub.invalid')
        assert.match(url.pathname, template, at)
        for (const name of url.searchParams.keys())
          assert.ok(queryNames.has(name), `${at}: ${name}`)
        assert.equal(sent.body === undefined, bodySchema === undefined || input.body === undefined)
        assert.equal(sent.signed, scheme === 'httpSignature', at)
        const bearer = sent.headers.authorization
        if (scheme === 'handoffToken') assert.equal(bearer, 'Bearer a-handoff-token', at)
        else if (scheme === 'operatorToken') assert.equal(bearer, `Bearer ${ADMIN}`, at)
        else assert.equal(bearer, undefined, at)
      }
    }
  })
})

for (const store of testStores) {
  describe(`the SDK's contract calls against a hub (${store.name})`, () => {
    let hub: TestHub
    let agent: SignedClient
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: ADMIN })
      agent = await signedAgent(hub)
    })
    after(() => hub.close())

    test('each kind of auth: none, a handoff token, a signature and the operator', async () => {
      const plain = new BatonClient(hub.url, { signer: agent, adminToken: ADMIN })
      assert.deepEqual(await plain.call(contracts.health), { ok: true })
      const created = await plain.call(
        contracts.createHandoff,
        { body: { payload: { task: 'translate' } } },
        { idempotencyKey: 'sdk-create-0001' },
      )
      const again = await plain.call(
        contracts.createHandoff,
        { body: { payload: { task: 'translate' } } },
        { idempotencyKey: 'sdk-create-0001' },
      )
      assert.equal(again.handoff_id, created.handoff_id)
      const moved = await plain.call(
        contracts.advanceHandoff,
        {
          params: { handoff_id: created.handoff_id, state: 'accepted' },
          body: { from: 'offered' },
        },
        { token: created.receiver_token },
      )
      assert.equal(moved.state, 'accepted')
      const waited = await plain.call(
        contracts.waitHandoff,
        { params: { handoff_id: created.handoff_id, seconds: 0 }, query: { version: 1 } },
        { token: created.owner_token },
      )
      assert.deepEqual([waited.state, waited.changed], ['accepted', true])

      const me = await plain.call(contracts.me)
      assert.equal(me.principal, agent.principal)
      assert.deepEqual(await agent.call(contracts.me), me)
      const resource = await agent.call(contracts.createResource, {
        body: { namespace: 'sdk', kind: 'task/v1', data: { n: 1 } },
      })
      const listed = await plain.call(contracts.listResources, {
        query: { namespace: 'sdk', limit: 5 },
      })
      assert.deepEqual(
        listed.resources.map((r) => r.id),
        [resource.id],
      )
      const principal = await plain.call(contracts.readPrincipal, {
        params: { principal: agent.principal },
      })
      assert.equal(principal.state, 'approved')

      // A refusal is the hub's, with its code and context, from every kind of call.
      await assert.rejects(
        plain.call(
          contracts.advanceHandoff,
          { params: { handoff_id: created.handoff_id, state: 'done' }, body: { from: 'offered' } },
          { token: created.receiver_token },
        ),
        (e: { code?: string; context?: { state?: string } }) =>
          e.code === 'state_conflict' && e.context?.state === 'accepted',
      )
      await assert.rejects(
        plain.call(
          contracts.readPrincipal,
          { params: { principal: agent.principal } },
          {
            adminToken: 'not-the-operator-token-0123456789abcdef',
          },
        ),
        (e: { code?: string }) => e.code === 'admin_token_invalid',
      )
      await assert.rejects(
        new BatonClient(hub.url).call(contracts.me),
        /signed: give the BatonClient a signer/,
      )
    })
  })
}
