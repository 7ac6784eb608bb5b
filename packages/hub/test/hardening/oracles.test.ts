import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { canonicalJson, type SignedClient } from '@baton/client'
import { ManualClock } from '../../src/clock.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from '../support.js'

type Body = Record<string, unknown> & { code?: string }

const ADMIN = 'oracle-test-operator-token-0123456789abcdef'
const admin = { authorization: `Bearer ${ADMIN}` }
const params = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }
// Headers that differ between any two answers, whatever they say.
// A request id is each request's own (echoed or made fresh), never a trace of the id asked for;
// so is the trace a request without trace context is put in (traceresponse, random ids).
const VOLATILE = new Set(['date', 'keep-alive', 'connection', 'x-request-id', 'traceresponse'])

/** An id of the same form and length as `id` that names nothing. */
function missingLike(id: string): string {
  const prefix = id.slice(0, id.indexOf('_') + 1)
  return prefix + randomBytes(16).toString('base64url')
}

/** One answer with the id taken out, as text: status, headers and body byte for byte. */
function normalized(
  res: { status: number; headers: Headers; body: unknown },
  id: string,
  path: string,
): string {
  const strip = (s: string) => s.split(id).join('<id>').split(encodeURIComponent(id)).join('<id>')
  const headers = [...res.headers.entries()]
    .filter(([k]) => !VOLATILE.has(k))
    .map(([k, v]) => `${k}: ${strip(v)}`)
    .sort()
  return [String(res.status), ...headers, strip(JSON.stringify(res.body)), strip(path)].join('\n')
}

for (const store of testStores) {
  describe(`ids the caller may not see answer like missing ones (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    let owner: SignedClient
    let peer: SignedClient
    let runtime: SignedClient
    let stranger: SignedClient
    let suspended: SignedClient

    const send = async (who: SignedClient, method: string, path: string, body?: unknown) => {
      const res = await who.request<Body>(method, path, body as object)
      return { status: res.status, headers: res.headers, body: res.body ?? {} }
    }
    const ok = async (who: SignedClient, method: string, path: string, body?: unknown) => {
      const res = await send(who, method, path, body)
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
      return res.body
    }
    const expiresAt = () => new Date(clock.now() + 3_600_000).toISOString()

    /**
     * Sends the same request as `who` naming an existing id and a missing id of the same form, and
     * asserts the two answers are identical once the ids are taken out; answers the status.
     */
    async function assertLikeMissing(
      who: SignedClient,
      method: string,
      id: string,
      build: (id: string) => { path: string; body?: unknown },
    ): Promise<number> {
      const missing = missingLike(id)
      const a = build(id)
      const b = build(missing)
      const seen = await send(who, method, a.path, a.body)
      const none = await send(who, method, b.path, b.body)
      assert.ok(none.status >= 400, `${method} ${b.path} must refuse a missing id`)
      assert.equal(
        normalized(seen, id, a.path),
        normalized(none, missing, b.path),
        `${method} ${a.path} tells that the id exists`,
      )
      return seen.status
    }

    before(async () => {
      hub = await startTestHub(
        store,
        {
          BATON_ADMISSION: 'open',
          BATON_ADMIN_TOKEN: ADMIN,
          BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000),
        },
        { clock },
      )
      owner = await signedAgent(hub, { clock })
      peer = await signedAgent(hub, { clock })
      runtime = await signedAgent(hub, { clock })
      stranger = await signedAgent(hub, { clock })
      suspended = await signedAgent(hub, { clock })
      const res = await call(
        hub,
        'POST',
        `/admin/v1/principals/${encodeURIComponent(suspended.principal)}/suspend`,
        { headers: admin },
      )
      assert.equal(res.status, 200)
    })
    after(() => hub.close())

    test('resources, history, updates and grants on someone else’s resource', async () => {
      const r = await ok(owner, 'POST', '/v1/resources', {
        namespace: 'oracle',
        kind: 'k/v1',
        data: { secret: 1 },
      })
      const id = r.id as string
      // The peer may update but not read: its reads must not tell more than a stranger's.
      await ok(owner, 'POST', '/v1/capabilities', {
        resourceId: id,
        subject: peer.principal,
        actions: ['resource:update'],
        expiresAt: expiresAt(),
      })
      for (const who of [stranger, peer]) {
        assert.equal(
          await assertLikeMissing(who, 'GET', id, (x) => ({ path: `/v1/resources/${x}` })),
          403,
        )
        await assertLikeMissing(who, 'GET', id, (x) => ({ path: `/v1/resources/${x}/history` }))
        // A grant naming the resource, for every subject: the owner, the caller, a third party.
        for (const subject of [owner.principal, who.principal, runtime.principal]) {
          for (const actions of [['resource:read'], ['resource:update']]) {
            await assertLikeMissing(who, 'POST', id, (x) => ({
              path: '/v1/capabilities',
              body: { resourceId: x, subject, actions, expiresAt: expiresAt() },
            }))
          }
        }
      }
      await assertLikeMissing(stranger, 'PATCH', id, (x) => ({
        path: `/v1/resources/${x}`,
        body: { expectedVersion: 1, data: { secret: 2 } },
      }))
      await assertLikeMissing(stranger, 'PATCH', id, (x) => ({
        path: `/v1/resources/${x}`,
        body: { expectedVersion: 7, data: { secret: 2 } },
      }))
    })

    test('revoking someone else’s grant', async () => {
      const r = await ok(owner, 'POST', '/v1/resources', { namespace: 'g', kind: 'k', data: {} })
      const g = await ok(owner, 'POST', '/v1/capabilities', {
        resourceId: r.id,
        subject: peer.principal,
        actions: ['resource:read'],
        expiresAt: expiresAt(),
      })
      await assertLikeMissing(stranger, 'DELETE', g.id as string, (x) => ({
        path: `/v1/capabilities/${x}`,
      }))
    })

    test('acknowledging a message of another inbox; sending to a suspended key', async () => {
      const m = await ok(owner, 'POST', '/v1/messages', {
        recipient: peer.principal,
        body: { hello: 1 },
        idempotencyKey: 'oracle-1',
      })
      await assertLikeMissing(stranger, 'POST', m.id as string, (x) => ({
        path: `/v1/messages/${x}/ack`,
      }))
      await assertLikeMissing(owner, 'POST', m.id as string, (x) => ({
        path: `/v1/messages/${x}/ack`,
      }))
      // Admission is not probed either: a suspended key answers like one never enrolled.
      const ghost = `did:key:z6Mk${randomBytes(32).toString('base64url').replace(/[-_]/g, 'a')}`
      const a = await send(stranger, 'POST', '/v1/messages', {
        recipient: suspended.principal,
        body: { hello: 1 },
        idempotencyKey: 'oracle-2',
      })
      const b = await send(stranger, 'POST', '/v1/messages', {
        recipient: ghost,
        body: { hello: 1 },
        idempotencyKey: 'oracle-3',
      })
      assert.equal(a.status, b.status)
      assert.deepEqual(a.body, b.body)
    })

    test('home files are the caller’s own: another home’s path reads as unused', async () => {
      await ok(owner, 'PUT', '/v1/home/file', {
        path: 'notes/secret.json',
        content: '{}',
        expectedRevision: 0,
      })
      const a = await send(stranger, 'GET', '/v1/home/file?path=notes%2Fsecret.json')
      const b = await send(stranger, 'GET', '/v1/home/file?path=notes%2Fothers.json')
      assert.equal(a.status, 404)
      assert.equal(
        normalized(a, 'secret', '').replace('secret', ''),
        normalized(b, 'others', '').replace('others', ''),
      )
    })

    async function stage(): Promise<string> {
      const body = await ok(owner, 'POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: randomId() }] },
      })
      return body.transferId as string
    }
    const randomId = () => randomBytes(6).toString('hex')
    async function mint(id: string, body: Record<string, unknown>): Promise<string> {
      const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
        body,
        headers: admin,
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body.token as string
    }
    async function provision(id: string) {
      const token = await mint(id, { scope: 'provision', ...params })
      await ok(owner, 'POST', `/v1/transfers/${id}/provision`, { ...params, token })
    }
    async function checksumOf(id: string) {
      const res = await ok(runtime, 'GET', `/v1/transfers/${id}/snapshot`)
      const digest = createHash('sha256').update(canonicalJson(res.snapshot)).digest('base64url')
      return `sha-256:${digest}`
    }

    /** One transfer in each state a stranger could probe, by name. */
    async function transfersInEveryState(): Promise<Record<string, string>> {
      const staged = await stage()
      const claimed = await stage()
      await provision(claimed)
      await ok(runtime, 'POST', `/v1/transfers/${claimed}/claim`)
      const pushed = await stage()
      await provision(pushed)
      await ok(runtime, 'POST', `/v1/transfers/${pushed}/claim`)
      await ok(runtime, 'POST', `/v1/transfers/${pushed}/push`, {
        checksum: await checksumOf(pushed),
      })
      const active = await stage()
      await provision(active)
      await ok(runtime, 'POST', `/v1/transfers/${active}/claim`)
      await ok(runtime, 'POST', `/v1/transfers/${active}/push`, {
        checksum: await checksumOf(active),
      })
      await ok(owner, 'POST', `/v1/transfers/${active}/activate`, {
        token: await mint(active, { scope: 'activate' }),
      })
      const terminated = await stage()
      const res = await call(hub, 'POST', `/admin/v1/transfers/${terminated}/terminate`, {
        body: { reason: 'test' },
        headers: admin,
      })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return { staged, claimed, pushed, active, terminated }
    }

    test('every signed transfer route, in every state, to a stranger and another runtime', async () => {
      const ids = await transfersInEveryState()
      const other = await signedAgent(hub, { clock })
      const routes: [string, (x: string) => { path: string; body?: unknown }][] = [
        ['GET', (x) => ({ path: `/v1/transfers/${x}` })],
        ['GET', (x) => ({ path: `/v1/transfers/${x}/wait?seconds=0` })],
        ['GET', (x) => ({ path: `/v1/transfers/${x}/snapshot` })],
        ['POST', (x) => ({ path: `/v1/transfers/${x}/claim` })],
        ['POST', (x) => ({ path: `/v1/transfers/${x}/push`, body: { checksum: 'sha-256:AAAA' } })],
        ['POST', (x) => ({ path: `/v1/transfers/${x}/lease`, body: { instance: 'instance-1' } })],
        [
          'POST',
          (x) => ({
            path: `/v1/transfers/${x}/usage`,
            body: { idempotencyKey: randomId(), amountMicros: 1 },
          }),
        ],
      ]
      for (const [state, id] of Object.entries(ids)) {
        for (const who of [stranger, other]) {
          for (const [method, build] of routes) {
            const status = await assertLikeMissing(who, method, id, build)
            assert.equal(status, 404, `${method} ${build(id).path} in ${state}`)
          }
        }
      }
      // Nothing the probes did moved a transfer.
      for (const [state, id] of Object.entries(ids)) {
        const seen = await ok(owner, 'GET', `/v1/transfers/${id}`)
        assert.equal(seen.state, state === 'claimed' ? 'provisioned' : state)
      }
    })

    test('a claim lost to another runtime, and an expired offer, answer like missing ids', async () => {
      const id = await stage()
      await provision(id)
      await ok(runtime, 'POST', `/v1/transfers/${id}/claim`)
      const loser = await signedAgent(hub, { clock })
      await assertLikeMissing(loser, 'POST', id, (x) => ({ path: `/v1/transfers/${x}/claim` }))
      const due = await stage()
      await provision(due)
      clock.advance(24 * 60 * 60 * 1000)
      await assertLikeMissing(loser, 'POST', due, (x) => ({ path: `/v1/transfers/${x}/claim` }))
    })

    test('the owner and the holding runtime still hear the real reason', async () => {
      const id = await stage()
      const early = await send(runtime, 'POST', `/v1/transfers/${id}/claim`)
      assert.equal(early.status, 404, 'a staged transfer is not offered to runtimes')
      const mine = await send(owner, 'POST', `/v1/transfers/${id}/push`, { checksum: 'x' })
      assert.equal(mine.status, 403)
      assert.equal(mine.body.code, 'transfer_forbidden')
      await provision(id)
      await ok(runtime, 'POST', `/v1/transfers/${id}/claim`)
      const lease = await send(runtime, 'POST', `/v1/transfers/${id}/lease`, {
        instance: 'instance-1',
      })
      assert.equal(lease.status, 409)
      assert.equal(lease.body.code, 'transfer_state_conflict')
      assert.equal(lease.body.state, 'provisioned')
    })
  })
}
