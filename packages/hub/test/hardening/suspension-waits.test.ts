import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, type Identity, SignedClient } from '@baton/client'
import type { RunningHub } from '../../src/hub.js'
import {
  call,
  onPostgres,
  restartableHub,
  startTestHub,
  type TestHub,
  testStores,
} from '../support.js'

const ADMIN = 'suspension-waits-operator-token-0123456789'
const admin = { authorization: `Bearer ${ADMIN}` }
const env = {
  BATON_ADMISSION: 'open',
  BATON_ADMIN_TOKEN: ADMIN,
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
}
const params = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }
const snapshot = { systemPrompt: 'You are a careful agent.', messages: [] }

type Body = Record<string, unknown> & { code?: string }

async function agent(hub: { url: string }, identity: Identity = createIdentity('t')) {
  const client = await SignedClient.connect(`${hub.url}/.well-known/agent-net`, identity, {
    maxRetryWaitMs: 0,
  })
  assert.equal((await client.request('GET', '/v1/me')).status, 200)
  return client
}

async function ask(client: SignedClient, method: string, path: string, body?: unknown) {
  const res = await client.request<Body>(method, path, body as object)
  return { status: res.status, body: res.body ?? {} }
}

async function decide(hub: { url: string }, principal: string, decision: string) {
  const res = await call(
    hub,
    'POST',
    `/admin/v1/principals/${encodeURIComponent(principal)}/${decision}`,
    {
      headers: admin,
    },
  )
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

/** Resolves once `check` holds, looking again every few milliseconds. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10))
}

/** A provisioned transfer of `owner`, and its version. */
async function provisioned(hub: { url: string }, owner: SignedClient) {
  const staged = await ask(owner, 'POST', '/v1/transfers', { snapshot })
  assert.equal(staged.status, 201, JSON.stringify(staged.body))
  const id = staged.body.transferId as string
  const minted = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
    body: { scope: 'provision', ...params },
    headers: admin,
  })
  assert.equal(minted.status, 201, JSON.stringify(minted.body))
  const prov = await ask(owner, 'POST', `/v1/transfers/${id}/provision`, {
    ...params,
    token: minted.body.token,
  })
  assert.equal(prov.status, 200, JSON.stringify(prov.body))
  return { id, version: prov.body.version as number }
}

/** The refusal answers like a fresh request of the principal would, and carries no data. */
function assertRefusedWithoutData(
  res: { status: number; body: Body },
  fresh: { status: number; body: Body },
  code: string,
) {
  assert.equal(res.status, 403, JSON.stringify(res.body))
  assert.equal(res.body.code, code)
  assert.equal(fresh.status, res.status)
  assert.deepEqual(res.body, fresh.body)
  for (const field of ['messages', 'transferId', 'version', 'events', 'checksum']) {
    assert.equal(field in res.body, false, `the refusal carries ${field}`)
  }
}

for (const store of testStores) {
  describe(`suspension ends in-flight waits (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, env)
    })
    after(() => hub.close())

    test('an open inbox wait of a principal that is suspended answers principal_suspended', async () => {
      const alice = await agent(hub)
      const waiting = ask(alice, 'GET', '/v1/messages?wait=5')
      await until(() => hub.ctx.waits.waiting === 1)
      await decide(hub, alice.principal, 'suspend')
      const res = await waiting
      assertRefusedWithoutData(res, await ask(alice, 'GET', '/v1/messages'), 'principal_suspended')
      assert.equal(hub.ctx.waits.waiting, 0)
    })

    test('an open transfer wait of a suspended owner is not answered with the transfer', async () => {
      const owner = await agent(hub)
      const runtime = await agent(hub)
      const t = await provisioned(hub, owner)
      const waiting = ask(owner, 'GET', `/v1/transfers/${t.id}/wait?seconds=5&version=${t.version}`)
      await until(() => hub.ctx.waits.waiting === 1)
      await decide(hub, owner.principal, 'suspend')
      // A move after the suspension must not reach the suspended owner's open wait.
      assert.equal((await ask(runtime, 'POST', `/v1/transfers/${t.id}/claim`)).status, 200)
      const res = await waiting
      assertRefusedWithoutData(
        res,
        await ask(owner, 'GET', `/v1/transfers/${t.id}`),
        'principal_suspended',
      )
    })

    test('a rejection ends a transfer wait with admission_rejected', async () => {
      const owner = await agent(hub)
      const runtime = await agent(hub)
      const t = await provisioned(hub, owner)
      const waiting = ask(owner, 'GET', `/v1/transfers/${t.id}/wait?seconds=5&version=${t.version}`)
      await until(() => hub.ctx.waits.waiting === 1)
      await decide(hub, owner.principal, 'reject')
      assert.equal((await ask(runtime, 'POST', `/v1/transfers/${t.id}/claim`)).status, 200)
      const res = await waiting
      assertRefusedWithoutData(
        res,
        await ask(owner, 'GET', `/v1/transfers/${t.id}`),
        'admission_rejected',
      )
    })

    test('waits of other principals on the same transfer go on', async () => {
      const owner = await agent(hub)
      const runtime = await agent(hub)
      const t = await provisioned(hub, owner)
      assert.equal((await ask(runtime, 'POST', `/v1/transfers/${t.id}/claim`)).status, 200)
      const ownerWait = ask(
        owner,
        'GET',
        `/v1/transfers/${t.id}/wait?seconds=5&version=${t.version + 1}`,
      )
      const runtimeWait = ask(
        runtime,
        'GET',
        `/v1/transfers/${t.id}/wait?seconds=5&version=${t.version + 1}`,
      )
      await until(() => hub.ctx.waits.waiting === 2)
      await decide(hub, runtime.principal, 'suspend')
      const refused = await runtimeWait
      assert.equal(refused.status, 403)
      assert.equal(refused.body.code, 'principal_suspended')
      assert.equal(hub.ctx.waits.waiting, 1)
      await decide(hub, runtime.principal, 'approve')
      const terminated = await call(hub, 'POST', `/admin/v1/transfers/${t.id}/terminate`, {
        body: { reason: 'operator' },
        headers: admin,
      })
      assert.equal(terminated.status, 200, JSON.stringify(terminated.body))
      const res = await ownerWait
      assert.equal(res.status, 200)
      assert.equal(res.body.state, 'terminated')
    })
  })
}

const postgres = onPostgres.store!
describe('a suspension on one instance ends waits on another (postgres)', {
  skip: onPostgres.skip,
}, () => {
  let a: RunningHub
  let b: RunningHub
  let drop: () => Promise<void>
  before(async () => {
    const db = await restartableHub(postgres, env)
    drop = db.drop
    a = await db.start()
    b = await db.start()
  })
  after(async () => {
    await a.stop()
    await b.stop()
    await drop()
  })

  test('a transfer wait on one instance, the suspension and the move on the other', async () => {
    const identity = createIdentity('t')
    const ownerOnA = await agent(a, identity)
    const ownerOnB = await agent(b, identity)
    const runtimeOnB = await agent(b)
    const t = await provisioned(b, ownerOnB)
    const waiting = ask(
      ownerOnA,
      'GET',
      `/v1/transfers/${t.id}/wait?seconds=5&version=${t.version}`,
    )
    await until(() => a.ctx.waits.waiting === 1)
    await decide(b, identity.principal, 'suspend')
    assert.equal((await ask(runtimeOnB, 'POST', `/v1/transfers/${t.id}/claim`)).status, 200)
    const res = await waiting
    assertRefusedWithoutData(
      res,
      await ask(ownerOnA, 'GET', `/v1/transfers/${t.id}`),
      'principal_suspended',
    )
  })
})
