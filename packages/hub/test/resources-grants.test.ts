import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { ManualClock } from '../src/clock.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

type Body = Record<string, unknown> & { code?: string }

for (const store of testStores) {
  describe(`resources and grants (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    const agents: Record<'owner' | 'peer' | 'third' | 'fourth', SignedClient> = {} as never
    const as = (who: keyof typeof agents) => ({
      call: async (
        method: string,
        path: string,
        body?: unknown,
        headers?: Record<string, string>,
      ) => {
        const res = await agents[who].request<Body>(method, path, body as object, headers)
        return { status: res.status, body: res.body ?? {} }
      },
    })
    const expiresIn = (ms: number) => new Date(clock.now() + ms).toISOString()

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' }, { clock })
      for (const who of ['owner', 'peer', 'third', 'fourth'] as const) {
        agents[who] = await signedAgent(hub, { clock })
        assert.equal((await as(who).call('GET', '/v1/me')).status, 200)
      }
    })
    after(() => hub.close())

    async function newTask(data: unknown = { status: 'open' }) {
      const res = await as('owner').call('POST', '/v1/resources', {
        namespace: 'handoff-test',
        kind: 'net-task-handoff/v1',
        data,
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body as { id: string; version: number }
    }

    test('create answers version 1 with owner and times; the owner reads it back', async () => {
      const res = await as('owner').call('POST', '/v1/resources', {
        namespace: 'ns-a',
        kind: 'k/v1',
        data: { title: 'x', result: null },
      })
      assert.equal(res.status, 201)
      assert.equal(res.body.version, 1)
      assert.equal(res.body.owner, agents.owner.principal)
      assert.match(String(res.body.id), /^rs_/)
      const read = await as('owner').call('GET', `/v1/resources/${res.body.id}`)
      assert.deepEqual(read.body.data, { title: 'x', result: null })
    })

    test('PATCH replaces data only at expectedVersion; a conflict names currentVersion', async () => {
      const task = await newTask()
      const ok = await as('owner').call('PATCH', `/v1/resources/${task.id}`, {
        expectedVersion: 1,
        data: { status: 'done' },
      })
      assert.equal(ok.status, 200)
      assert.equal(ok.body.version, 2)
      const stale = await as('owner').call('PATCH', `/v1/resources/${task.id}`, {
        expectedVersion: 1,
        data: { status: 'other' },
      })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.code, 'version_conflict')
      assert.equal(stale.body.currentVersion, 2)
      const repeat = await as('owner').call('PATCH', `/v1/resources/${task.id}`, {
        expectedVersion: 1,
        data: { status: 'done' },
      })
      assert.equal(repeat.status, 200, 'the identical update after a lost answer is answered')
      assert.equal(repeat.body.repeated, true)
      assert.equal(repeat.body.version, 2)
      const history = await as('owner').call('GET', `/v1/resources/${task.id}/history`)
      const versions = history.body.versions as { version: number; data: unknown; actor: string }[]
      assert.deepEqual(
        versions.map((v) => [v.version, v.data, v.actor]),
        [
          [1, { status: 'open' }, agents.owner.principal],
          [2, { status: 'done' }, agents.owner.principal],
        ],
      )
    })

    test('a third party gets 403 on the resource, its history and its update; listings omit it', async () => {
      const task = await newTask()
      for (const [method, path, body] of [
        ['GET', `/v1/resources/${task.id}`, undefined],
        ['GET', `/v1/resources/${task.id}/history`, undefined],
        ['PATCH', `/v1/resources/${task.id}`, { expectedVersion: 1, data: {} }],
      ] as const) {
        const res = await as('third').call(method, path, body)
        assert.equal(res.status, 403, `${method} ${path}`)
        assert.equal(res.body.code, 'resource_forbidden')
      }
      const missing = await as('third').call('GET', '/v1/resources/rs_AAAAAAAAAAAAAAAAAAAAAA')
      assert.deepEqual(
        { ...missing.body, error: '', resourceId: '' },
        {
          ...(await as('third').call('GET', `/v1/resources/${task.id}`)).body,
          error: '',
          resourceId: '',
        },
        'an unknown id and a forbidden one answer alike',
      )
      const list = await as('third').call('GET', '/v1/resources?namespace=handoff-test')
      assert.deepEqual(list.body.resources, [])
    })

    test('a grant gives exactly its actions until it expires; revocation stops it at once', async () => {
      const task = await newTask()
      const grant = await as('owner').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.peer.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: expiresIn(3600_000),
      })
      assert.equal(grant.status, 201, JSON.stringify(grant.body))
      assert.equal(grant.body.status, 'active')
      assert.equal((await as('peer').call('GET', `/v1/resources/${task.id}`)).status, 200)
      assert.equal((await as('peer').call('GET', `/v1/resources/${task.id}/history`)).status, 200)
      const upd = await as('peer').call('PATCH', `/v1/resources/${task.id}`, {
        expectedVersion: 1,
        data: { by: 'peer' },
      })
      assert.equal(upd.status, 403, 'read does not include update')
      const listed = await as('peer').call(
        'GET',
        `/v1/resources?namespace=handoff-test&kind=${encodeURIComponent('net-task-handoff/v1')}`,
      )
      assert.ok((listed.body.resources as { id: string }[]).some((r) => r.id === task.id))
      const revoked = await as('owner').call('DELETE', `/v1/capabilities/${grant.body.id}`)
      assert.equal(revoked.status, 200)
      assert.equal(revoked.body.status, 'revoked')
      const again = await as('owner').call('DELETE', `/v1/capabilities/${grant.body.id}`)
      assert.equal(again.body.revokedAt, revoked.body.revokedAt, 'revocation is idempotent')
      assert.equal((await as('peer').call('GET', `/v1/resources/${task.id}`)).status, 403)
      const listedAfter = await as('peer').call('GET', '/v1/resources?namespace=handoff-test')
      assert.ok(!(listedAfter.body.resources as { id: string }[]).some((r) => r.id === task.id))
      const caps = await as('peer').call('GET', '/v1/capabilities')
      const mine = (caps.body.capabilities as { id: string; revokedAt: string }[]).find(
        (c) => c.id === grant.body.id,
      )
      assert.equal(mine?.revokedAt, revoked.body.revokedAt)
    })

    test('an expired grant stops working at once (injected clock)', async () => {
      const task = await newTask()
      await as('owner').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.peer.principal,
        actions: ['resource:read', 'resource:update'],
        delegable: false,
        expiresAt: expiresIn(60_000),
      })
      assert.equal((await as('peer').call('GET', `/v1/resources/${task.id}`)).status, 200)
      clock.advance(60_000)
      assert.equal((await as('peer').call('GET', `/v1/resources/${task.id}`)).status, 403)
      const caps = await as('owner').call('GET', '/v1/capabilities')
      assert.ok(
        (caps.body.capabilities as { status: string }[]).some((c) => c.status === 'expired'),
      )
    })

    test('grant rules: owner only, no wildcard or self, future expiry, no delegation unless delegable', async () => {
      const task = await newTask()
      const base = {
        resourceId: task.id,
        subject: agents.peer.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: expiresIn(3600_000),
      }
      const cases: [keyof typeof agents, object, number, string][] = [
        ['owner', { ...base, subject: '*' }, 400, 'invalid_request'],
        ['owner', { ...base, subject: agents.owner.principal }, 400, 'invalid_grant'],
        ['owner', { ...base, expiresAt: expiresIn(-1000) }, 400, 'invalid_grant'],
        ['owner', { ...base, expiresAt: 'tomorrow' }, 400, 'invalid_request'],
        ['owner', { ...base, actions: ['resource:delete'] }, 400, 'invalid_request'],
        ['owner', { ...base, actions: [] }, 400, 'invalid_request'],
        ['owner', { ...base, extra: 1 }, 400, 'unknown_field'],
        ['third', base, 403, 'resource_forbidden'],
        ['owner', { ...base, resourceId: 'rs_AAAAAAAAAAAAAAAAAAAAAA' }, 403, 'resource_forbidden'],
      ]
      for (const [who, body, status, code] of cases) {
        const res = await as(who).call('POST', '/v1/capabilities', body)
        assert.equal(res.status, status, JSON.stringify(body))
        assert.equal(res.body.code, code, JSON.stringify(body))
      }
      await as('owner').call('POST', '/v1/capabilities', base)
      const passOn = await as('peer').call('POST', '/v1/capabilities', {
        ...base,
        subject: agents.third.principal,
      })
      assert.equal(passOn.status, 403)
      assert.equal(passOn.body.code, 'grant_forbidden', 'a non-delegable grant cannot be passed on')
    })

    test('delegation: a subset, no later expiry; revoking the parent revokes what was passed on', async () => {
      const task = await newTask()
      const parent = await as('owner').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.peer.principal,
        actions: ['resource:read', 'resource:update'],
        delegable: true,
        expiresAt: expiresIn(3600_000),
      })
      assert.equal(parent.status, 201)
      const tooLong = await as('peer').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.third.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: expiresIn(7200_000),
      })
      assert.equal(tooLong.body.code, 'grant_forbidden')
      const child = await as('peer').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.third.principal,
        actions: ['resource:read'],
        delegable: true,
        expiresAt: expiresIn(1800_000),
      })
      assert.equal(child.status, 201)
      assert.equal(child.body.parentId, parent.body.id)
      const grandchild = await as('third').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.fourth.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: expiresIn(900_000),
      })
      assert.equal(grandchild.status, 201)
      const widen = await as('third').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.fourth.principal,
        actions: ['resource:update'],
        delegable: false,
        expiresAt: expiresIn(900_000),
      })
      assert.equal(widen.body.code, 'grant_forbidden', 'a delegate cannot widen its actions')
      assert.equal((await as('fourth').call('GET', `/v1/resources/${task.id}`)).status, 200)
      const denied = await as('third').call('DELETE', `/v1/capabilities/${parent.body.id}`)
      assert.equal(denied.status, 404, 'a stranger to a grant does not see it')
      assert.equal(
        (await as('owner').call('DELETE', `/v1/capabilities/${parent.body.id}`)).status,
        200,
      )
      for (const who of ['peer', 'third', 'fourth'] as const) {
        assert.equal((await as(who).call('GET', `/v1/resources/${task.id}`)).status, 403, who)
      }
      const caps = await as('third').call('GET', '/v1/capabilities')
      for (const c of caps.body.capabilities as { id: string; status: string }[]) {
        if (c.id === child.body.id || c.id === grandchild.body.id) assert.equal(c.status, 'revoked')
      }
    })

    test('Idempotency-Key on resource and grant creation', async () => {
      const body = { namespace: 'idem', kind: 'k', data: { n: 1 } }
      const a = await as('owner').call('POST', '/v1/resources', body, {
        'idempotency-key': 'res-key-0001',
      })
      const b = await as('owner').call('POST', '/v1/resources', body, {
        'idempotency-key': 'res-key-0001',
      })
      assert.equal(a.status, 201)
      assert.deepEqual(b.body, a.body)
      const c = await as('owner').call(
        'POST',
        '/v1/resources',
        { ...body, data: { n: 2 } },
        {
          'idempotency-key': 'res-key-0001',
        },
      )
      assert.equal(c.body.code, 'idempotency_conflict')
      const other = await as('peer').call('POST', '/v1/resources', body, {
        'idempotency-key': 'res-key-0001',
      })
      assert.notEqual(other.body.id, a.body.id, 'keys are per principal')
    })

    test('many writers with the same expectedVersion: exactly one wins', async () => {
      const task = await newTask()
      await as('owner').call('POST', '/v1/capabilities', {
        resourceId: task.id,
        subject: agents.peer.principal,
        actions: ['resource:update', 'resource:read'],
        delegable: false,
        expiresAt: expiresIn(3600_000),
      })
      const writers = Array.from({ length: 30 }, (_, i) =>
        as(i % 2 ? 'owner' : 'peer').call('PATCH', `/v1/resources/${task.id}`, {
          expectedVersion: 1,
          data: { writer: i },
        }),
      )
      const results = await Promise.all(writers)
      assert.equal(results.filter((r) => r.status === 200).length, 1)
      assert.equal(results.filter((r) => r.status === 409).length, 29)
      const history = await as('owner').call('GET', `/v1/resources/${task.id}/history`)
      assert.equal((history.body.versions as unknown[]).length, 2)
    })

    test('size limit and bad input', async () => {
      const big = await as('owner').call('POST', '/v1/resources', {
        namespace: 'n',
        kind: 'k',
        data: 'x'.repeat(300 * 1024),
      })
      assert.ok(big.status === 413, JSON.stringify(big.body).slice(0, 200))
      for (const body of [
        {},
        { namespace: '', kind: 'k', data: 1 },
        { namespace: 'n', kind: 'k' },
      ]) {
        const res = await as('owner').call('POST', '/v1/resources', body)
        assert.equal(res.status, 400, JSON.stringify(body))
      }
      const badList = await as('owner').call('GET', '/v1/resources?limit=1000')
      assert.equal(badList.status, 400)
    })
  })
}
