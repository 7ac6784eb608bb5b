import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { ManualClock } from '../../src/clock.js'
import { signedAgent, startTestHub, type TestHub, testStores } from '../support.js'

type Body = Record<string, unknown> & { code?: string }
type Listed = { id: string; data?: unknown }

// Every set of actions a grant can hold, and no grant at all.
const ACTION_SETS: string[][] = [
  [],
  ['resource:read'],
  ['resource:update'],
  ['resource:read', 'resource:update'],
]

for (const store of testStores) {
  describe(`listings apply the item route's read rule (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    let owner: SignedClient
    let middle: SignedClient
    const call = async (who: SignedClient, method: string, path: string, body?: unknown) => {
      const res = await who.request<Body>(method, path, body as object)
      return { status: res.status, body: res.body ?? {} }
    }
    const expiresAt = () => new Date(clock.now() + 3_600_000).toISOString()

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' }, { clock })
      owner = await signedAgent(hub, { clock })
      middle = await signedAgent(hub, { clock })
      for (const a of [owner, middle]) assert.equal((await call(a, 'GET', '/v1/me')).status, 200)
    })
    after(() => hub.close())

    async function newResource(namespace: string) {
      const res = await call(owner, 'POST', '/v1/resources', {
        namespace,
        kind: 'k/v1',
        data: { secret: namespace },
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body as { id: string }
    }

    /** Asserts the listing shows the resource, with its data, exactly when the item route does. */
    async function assertListingMatchesItem(who: SignedClient, id: string, namespace: string) {
      const item = await call(who, 'GET', `/v1/resources/${id}`)
      const listing = await call(who, 'GET', `/v1/resources?namespace=${namespace}`)
      assert.equal(listing.status, 200)
      const listed = (listing.body.resources as Listed[]).filter((r) => r.id === id)
      if (item.status === 200) {
        assert.equal(listed.length, 1)
        assert.deepEqual(listed[0]!.data, { secret: namespace })
      } else {
        assert.equal(item.status, 403)
        assert.equal(item.body.code, 'resource_forbidden')
        assert.deepEqual(listed, [], 'a resource the caller may not read is left out')
      }
      // No page of the unfiltered listing holds it either.
      const all = await call(who, 'GET', '/v1/resources')
      const anywhere = (all.body.resources as Listed[]).some((r) => r.id === id)
      assert.equal(anywhere, item.status === 200)
      return item.status
    }

    for (const actions of ACTION_SETS) {
      const label = actions.length === 0 ? 'no grant' : actions.join('+')
      test(`a direct grant of ${label}`, async () => {
        const grantee = await signedAgent(hub, { clock })
        const namespace = `direct-${actions.length}-${actions[0] ?? 'none'}`.replace(':', '-')
        const { id } = await newResource(namespace)
        if (actions.length > 0) {
          const g = await call(owner, 'POST', '/v1/capabilities', {
            resourceId: id,
            subject: grantee.principal,
            actions,
            expiresAt: expiresAt(),
          })
          assert.equal(g.status, 201, JSON.stringify(g.body))
        }
        const status = await assertListingMatchesItem(grantee, id, namespace)
        assert.equal(status, actions.includes('resource:read') ? 200 : 403)
      })

      if (actions.length === 0) continue
      test(`a delegated grant of ${label}`, async () => {
        const grantee = await signedAgent(hub, { clock })
        const namespace = `delegated-${actions.length}-${actions[0]}`.replace(':', '-')
        const { id } = await newResource(namespace)
        const parent = await call(owner, 'POST', '/v1/capabilities', {
          resourceId: id,
          subject: middle.principal,
          actions: ['resource:read', 'resource:update'],
          delegable: true,
          expiresAt: expiresAt(),
        })
        assert.equal(parent.status, 201, JSON.stringify(parent.body))
        const child = await call(middle, 'POST', '/v1/capabilities', {
          resourceId: id,
          subject: grantee.principal,
          actions,
          expiresAt: expiresAt(),
        })
        assert.equal(child.status, 201, JSON.stringify(child.body))
        const status = await assertListingMatchesItem(grantee, id, namespace)
        assert.equal(status, actions.includes('resource:read') ? 200 : 403)
        // Revoking the parent ends the child's access in the listing as on the item route.
        const revoked = await call(owner, 'DELETE', `/v1/capabilities/${parent.body.id}`)
        assert.equal(revoked.status, 200)
        assert.equal(await assertListingMatchesItem(grantee, id, namespace), 403)
      })
    }

    test('an update-only grantee can still update what it cannot list', async () => {
      const grantee = await signedAgent(hub, { clock })
      const { id } = await newResource('update-only-writes')
      await call(owner, 'POST', '/v1/capabilities', {
        resourceId: id,
        subject: grantee.principal,
        actions: ['resource:update'],
        expiresAt: expiresAt(),
      })
      const patched = await call(grantee, 'PATCH', `/v1/resources/${id}`, {
        expectedVersion: 1,
        data: { secret: 'replaced' },
      })
      assert.equal(patched.status, 200)
      assert.equal(await assertListingMatchesItem(grantee, id, 'update-only-writes'), 403)
    })
  })
}
