import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  GrantClient,
  type Identity,
  ResourceClient,
  SignedClient,
} from '@baton/client'
import type { BatonError } from '@baton/protocol'
import { restartableHub, testStores } from './support.js'

// Issue 27: nothing a signed request reads about its signer or its grant is kept between requests
// where another instance could change it unseen. Two hub instances share one database; a
// suspension, an approval and a revocation made through one take effect on the very next request
// the other answers, after each instance has already answered that signer.

/** The same identity signing to one instance. */
function clientOf(hub: { url: string }, identity: Identity): Promise<SignedClient> {
  return SignedClient.connect(`${hub.url}/.well-known/agent-net`, identity, { maxRetryWaitMs: 0 })
}

/** The code a refused call threw. */
async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (error) {
    return (error as BatonError).code
  }
  assert.fail('the call was not refused')
}

for (const store of testStores) {
  describe(`two instances on one database (${store.name})`, () => {
    let hubs: Awaited<ReturnType<typeof restartableHub>>
    let a: Awaited<ReturnType<typeof hubs.start>>
    let b: Awaited<ReturnType<typeof hubs.start>>

    before(async () => {
      hubs = await restartableHub(store, { BATON_ADMISSION: 'open' })
      a = await hubs.start()
      b = await hubs.start()
    })
    after(async () => {
      await Promise.all([a?.stop(), b?.stop()])
      await hubs?.drop()
    })

    test('a suspension through one instance refuses the next request the other answers', async () => {
      const identity = createIdentity('instances')
      const [onA, onB] = [await clientOf(a, identity), await clientOf(b, identity)]
      // Both instances have answered this signer before anything changes.
      assert.equal((await onA.request('GET', '/v1/me')).status, 200)
      assert.equal((await onB.request('GET', '/v1/me')).status, 200)
      const resources = new ResourceClient(onB)
      const doc = await resources.create({ namespace: 'inst', kind: 'doc/v1', data: { n: 1 } })

      await a.ctx.identity.decide(identity.principal, 'suspend')
      // GET /v1/me answers its signer in every state, and tells it which.
      assert.equal((await onB.call<{ state: string }>('GET', '/v1/me')).state, 'suspended')
      assert.equal(await codeOf(resources.get(doc.id)), 'principal_suspended')

      await a.ctx.identity.decide(identity.principal, 'approve')
      assert.equal((await onB.call<{ state: string }>('GET', '/v1/me')).state, 'approved')
      assert.equal((await resources.get(doc.id)).version, 1)
    })

    test('a grant revoked through one instance no longer opens the resource on the other', async () => {
      const [owner, grantee] = [createIdentity('owner'), createIdentity('grantee')]
      const ownerOnA = await clientOf(a, owner)
      const granteeOnB = await clientOf(b, grantee)
      await granteeOnB.request('GET', '/v1/me')
      const doc = await new ResourceClient(ownerOnA).create({
        namespace: 'inst',
        kind: 'doc/v1',
        data: { shared: true },
      })
      const grant = await new GrantClient(ownerOnA).create({
        resourceId: doc.id,
        subject: grantee.principal,
        actions: ['resource:read'],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      })
      const read = new ResourceClient(granteeOnB)
      assert.deepEqual((await read.get(doc.id)).data, { shared: true })

      await new GrantClient(ownerOnA).revoke(grant.id)
      // Revoked, the resource answers the grantee on the other instance as a missing one does.
      assert.equal(await codeOf(read.get(doc.id)), 'resource_forbidden')
    })
  })
}
