import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { ManualClock } from '../src/clock.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// Every /v1 route of seed 000 against every kind of caller. A status is what the route answers
// that caller; `ok` stands for the route's own success status.
const ROLES = ['owner', 'grantee', 'expired', 'revoked', 'third', 'pending', 'unsigned'] as const
type Role = (typeof ROLES)[number]
type Row = {
  route: string
  method: string
  path: (ids: Ids) => string
  body?: (ids: Ids, role: Role) => unknown
  expect: Record<Role, number>
}
interface Ids {
  resource: string
  liveGrant: string
  revokedGrant: string
  message: string
  ownerPrincipal: string
}

const denied = { pending: 403, unsigned: 401 } as const
const MATRIX: Row[] = [
  {
    route: 'GET /v1/me',
    method: 'GET',
    path: () => '/v1/me',
    expect: {
      owner: 200,
      grantee: 200,
      expired: 200,
      revoked: 200,
      third: 200,
      pending: 200,
      unsigned: 401,
    },
  },
  {
    route: 'GET /v1/resources/{id}',
    method: 'GET',
    path: (i) => `/v1/resources/${i.resource}`,
    expect: { owner: 200, grantee: 200, expired: 403, revoked: 403, third: 403, ...denied },
  },
  {
    route: 'GET /v1/resources/{id}/history',
    method: 'GET',
    path: (i) => `/v1/resources/${i.resource}/history`,
    expect: { owner: 200, grantee: 200, expired: 403, revoked: 403, third: 403, ...denied },
  },
  {
    // A stale expectedVersion: permission is checked first, so only those allowed reach the 409.
    route: 'PATCH /v1/resources/{id}',
    method: 'PATCH',
    path: (i) => `/v1/resources/${i.resource}`,
    body: () => ({ expectedVersion: 99, data: { x: 1 } }),
    expect: { owner: 409, grantee: 409, expired: 403, revoked: 403, third: 403, ...denied },
  },
  {
    route: 'GET /v1/resources',
    method: 'GET',
    path: () => '/v1/resources?namespace=matrix',
    expect: { owner: 200, grantee: 200, expired: 200, revoked: 200, third: 200, ...denied },
  },
  {
    route: 'POST /v1/resources',
    method: 'POST',
    path: () => '/v1/resources',
    body: (_i, role) => ({ namespace: `own-${role}`, kind: 'k', data: {} }),
    expect: { owner: 201, grantee: 201, expired: 201, revoked: 201, third: 201, ...denied },
  },
  {
    route: 'POST /v1/capabilities',
    method: 'POST',
    path: () => '/v1/capabilities',
    body: (i) => ({
      resourceId: i.resource,
      subject: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
      actions: ['resource:read'],
      delegable: false,
      expiresAt: new Date(Date.UTC(2026, 10, 30, 18)).toISOString(),
    }),
    expect: { owner: 201, grantee: 403, expired: 403, revoked: 403, third: 403, ...denied },
  },
  {
    route: 'GET /v1/capabilities',
    method: 'GET',
    path: () => '/v1/capabilities',
    expect: { owner: 200, grantee: 200, expired: 200, revoked: 200, third: 200, ...denied },
  },
  {
    // The revoked grant: its issuer may repeat the revocation; its subject sees it but may not
    // revoke; anyone else does not see it at all.
    route: 'DELETE /v1/capabilities/{id}',
    method: 'DELETE',
    path: (i) => `/v1/capabilities/${i.revokedGrant}`,
    expect: { owner: 200, grantee: 404, expired: 404, revoked: 403, third: 404, ...denied },
  },
  {
    route: 'POST /v1/messages',
    method: 'POST',
    path: () => '/v1/messages',
    body: (i, role) => ({
      recipient: i.ownerPrincipal,
      body: { hello: role },
      idempotencyKey: `matrix-${role}`,
    }),
    expect: { owner: 201, grantee: 201, expired: 201, revoked: 201, third: 201, ...denied },
  },
  {
    route: 'GET /v1/messages',
    method: 'GET',
    path: () => '/v1/messages?after=0&limit=20',
    expect: { owner: 200, grantee: 200, expired: 200, revoked: 200, third: 200, ...denied },
  },
  {
    // Only the recipient (the owner here) may acknowledge; to anyone else the message is unknown.
    route: 'POST /v1/messages/{id}/ack',
    method: 'POST',
    path: (i) => `/v1/messages/${i.message}/ack`,
    expect: { owner: 200, grantee: 404, expired: 404, revoked: 404, third: 404, ...denied },
  },
  {
    // The owner's checkpoint path: every other caller reads its own, empty, home.
    route: 'GET /v1/home/file',
    method: 'GET',
    path: () => '/v1/home/file?path=matrix%2Fowner.json',
    expect: { owner: 200, grantee: 404, expired: 404, revoked: 404, third: 404, ...denied },
  },
  {
    route: 'GET /v1/home/files',
    method: 'GET',
    path: () => '/v1/home/files?prefix=matrix',
    expect: { owner: 200, grantee: 200, expired: 200, revoked: 200, third: 200, ...denied },
  },
  {
    route: 'PUT /v1/home/file',
    method: 'PUT',
    path: () => '/v1/home/file',
    body: (_i, role) => ({ path: `matrix/${role}-put.json`, expectedRevision: 0, content: '{}' }),
    expect: { owner: 200, grantee: 200, expired: 200, revoked: 200, third: 200, ...denied },
  },
  {
    route: 'DELETE /v1/home/file',
    method: 'DELETE',
    path: () => '/v1/home/file?path=matrix%2Fowner.json&expectedRevision=7',
    expect: { owner: 409, grantee: 404, expired: 404, revoked: 404, third: 404, ...denied },
  },
]

for (const store of testStores) {
  describe(`authorization matrix (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    const agents = {} as Record<Exclude<Role, 'unsigned'>, SignedClient>
    const ids = {} as Ids

    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'approval', BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0' },
        { clock },
      )
      for (const role of ROLES) {
        if (role === 'unsigned') continue
        agents[role] = await signedAgent(hub, { clock })
        if (role !== 'pending') await hub.ctx.identity.decide(agents[role].principal, 'approve')
      }
      const { owner } = agents
      ids.ownerPrincipal = owner.principal
      const resource = await owner.call<{ id: string }>('POST', '/v1/resources', {
        namespace: 'matrix',
        kind: 'task',
        data: { v: 1 },
      })
      ids.resource = resource.id
      const grant = async (role: Role, expiresInMs: number) =>
        (
          await owner.call<{ id: string }>('POST', '/v1/capabilities', {
            resourceId: resource.id,
            subject: agents[role as Exclude<Role, 'unsigned'>].principal,
            actions: ['resource:read', 'resource:update'],
            delegable: false,
            expiresAt: new Date(clock.now() + expiresInMs).toISOString(),
          })
        ).id
      ids.liveGrant = await grant('grantee', 3 * 3600_000)
      await grant('expired', 60_000)
      ids.revokedGrant = await grant('revoked', 3 * 3600_000)
      await owner.call('DELETE', `/v1/capabilities/${ids.revokedGrant}`)
      const sent = await agents.third.call<{ id: string }>('POST', '/v1/messages', {
        recipient: owner.principal,
        body: { note: 'for the owner' },
        idempotencyKey: 'matrix-seed',
      })
      ids.message = sent.id
      await owner.call('PUT', '/v1/home/file', {
        path: 'matrix/owner.json',
        expectedRevision: 0,
        content: '{"stage":"owner"}',
      })
      clock.advance(120_000)
    })
    after(() => hub.close())

    for (const row of MATRIX) {
      test(row.route, async () => {
        const seen: Record<string, number> = {}
        for (const role of ROLES) {
          const body = row.body?.(ids, role)
          if (role === 'unsigned') {
            const res = await fetch(hub.url + row.path(ids), {
              method: row.method,
              ...(body === undefined
                ? {}
                : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
            })
            seen[role] = res.status
            continue
          }
          const res = await agents[role].request(row.method, row.path(ids), body as object)
          seen[role] = res.status
        }
        assert.deepEqual(seen, row.expect)
      })
    }

    test('listings show the resource only to its owner and its live grantee', async () => {
      for (const role of ['owner', 'grantee', 'expired', 'revoked', 'third'] as const) {
        const list = await agents[role].call<{ resources: { id: string }[] }>(
          'GET',
          '/v1/resources?namespace=matrix',
        )
        const listed = list.resources.some((r) => r.id === ids.resource)
        assert.equal(listed, role === 'owner' || role === 'grantee', role)
      }
    })
  })
}
