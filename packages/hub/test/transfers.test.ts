import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { canonicalJson, createIdentity, SignedClient } from '@baton/client'
import { ManualClock } from '../src/clock.js'
import { call, startTestHub, type TestHub, testStores } from './support.js'

type Body = Record<string, unknown> & { code?: string }
type Event = { seq: number; type: string; from: string | null; to: string; actor: string }

const ADMIN = 'transfer-test-operator-token-0123456789abcdef'
const admin = { authorization: `Bearer ${ADMIN}` }
const TTL_MS = 30 * 60 * 1000
const GRACE_MS = 60 * 1000
const params = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }

function snapshot(note = 'x'): Record<string, unknown> {
  return {
    systemPrompt: 'You are a careful agent.',
    messages: [
      { role: 'user', content: `Translate the report ${note}` },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Working on it.' },
          { type: 'tool_use', id: 't1', name: 'fetch', input: { url: 'https://example.com/a' } },
        ],
      },
    ],
    toolState: { fetch: { cache: { hits: 3, ratio: 0.75 } } },
    mcpConfig: {
      servers: [
        {
          name: 'github',
          command: 'gh-mcp',
          env: { GITHUB_TOKEN: { credRef: 'vault://kv/agents/github#token' } },
        },
        { name: 'search', url: 'https://search.example/mcp', apiKey: { credRef: 'env://SEARCH' } },
      ],
    },
  }
}

for (const store of testStores) {
  describe(`session transfer (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    const agents: Record<'owner' | 'runtime' | 'runtime2' | 'stranger', SignedClient> = {} as never
    const as = (who: keyof typeof agents) => ({
      call: async (
        method: string,
        path: string,
        body?: unknown,
        headers?: Record<string, string>,
      ) => {
        const res = await agents[who].request<Body>(method, path, body as object, headers)
        return { status: res.status, body: res.body ?? {}, headers: res.headers }
      },
    })

    before(async () => {
      hub = await startTestHub(
        store,
        {
          BATON_ADMISSION: 'open',
          BATON_ADMIN_TOKEN: ADMIN,
          // The reaper is run by hand here, so the injected clock alone decides.
          BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000),
          BATON_TRANSFER_MAX_WAIT_SECONDS: '3600',
        },
        { clock },
      )
      for (const who of ['owner', 'runtime', 'runtime2', 'stranger'] as const) {
        agents[who] = await SignedClient.connect(
          `${hub.url}/.well-known/agent-net`,
          createIdentity(hub.url),
          { now: () => Math.floor(clock.now() / 1000) },
        )
        assert.equal((await as(who).call('GET', '/v1/me')).status, 200)
      }
    })
    after(() => hub.close())

    async function stage(note = String(Math.random()), key?: string): Promise<Body> {
      const res = await as('owner').call('POST', '/v1/transfers', {
        snapshot: snapshot(note),
        ...(key ? { idempotencyKey: key } : {}),
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body
    }
    async function mint(id: string, body: Record<string, unknown>): Promise<string> {
      const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
        body,
        headers: admin,
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body.token as string
    }
    const provisionToken = (id: string, p = params, ttlSeconds?: number) =>
      mint(id, { scope: 'provision', ...p, ...(ttlSeconds ? { ttlSeconds } : {}) })
    const activateToken = (id: string, ttlSeconds?: number) =>
      mint(id, { scope: 'activate', ...(ttlSeconds ? { ttlSeconds } : {}) })
    async function provision(id: string, token?: string, p = params) {
      return as('owner').call('POST', `/v1/transfers/${id}/provision`, {
        ...p,
        token: token ?? (await provisionToken(id, p)),
      })
    }
    async function checksumOf(id: string, who: 'owner' | 'runtime' = 'runtime') {
      const res = await as(who).call('GET', `/v1/transfers/${id}/snapshot`)
      assert.equal(res.status, 200, JSON.stringify(res.body))
      const canonical = canonicalJson(res.body.snapshot)
      return `sha-256:${createHash('sha256').update(canonical).digest('base64url')}`
    }
    async function toPushed(p = params): Promise<string> {
      const id = (await stage()).transferId as string
      assert.equal((await provision(id, undefined, p)).status, 200)
      assert.equal((await as('runtime').call('POST', `/v1/transfers/${id}/claim`)).status, 200)
      const push = await as('runtime').call('POST', `/v1/transfers/${id}/push`, {
        checksum: await checksumOf(id),
      })
      assert.equal(push.status, 200, JSON.stringify(push.body))
      return id
    }
    async function toActive(p = params): Promise<string> {
      const id = await toPushed(p)
      const res = await as('owner').call('POST', `/v1/transfers/${id}/activate`, {
        token: await activateToken(id),
      })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return id
    }
    const usage = (
      id: string,
      key: string,
      amountMicros: number,
      who: 'runtime' | 'runtime2' | 'owner' = 'runtime',
    ) => as(who).call('POST', `/v1/transfers/${id}/usage`, { idempotencyKey: key, amountMicros })
    const status = async (id: string) => (await as('owner').call('GET', `/v1/transfers/${id}`)).body
    const types = (b: Body) => (b.events as Event[]).map((e) => e.type)

    test('snapshot: staged, SHA-256 over RFC 8785 canonical JSON of the whole snapshot, one event', async () => {
      const res = await as('owner').call('POST', '/v1/transfers', { snapshot: snapshot('c') })
      assert.equal(res.status, 201)
      const b = res.body
      assert.match(String(b.transferId), /^tr_[A-Za-z0-9_-]{22}$/)
      assert.equal(b.state, 'staged')
      assert.equal(b.owner, agents.owner.principal)
      const canonical = canonicalJson(snapshot('c'))
      assert.equal(
        b.checksum,
        `sha-256:${createHash('sha256').update(canonical).digest('base64url')}`,
      )
      assert.equal(b.snapshotBytes, Buffer.byteLength(canonical))
      assert.equal(b.expiresAt, new Date(clock.now() + TTL_MS).toISOString())
      assert.deepEqual(types(b), ['staged'])
      // Key order and whitespace do not change the checksum.
      const reverse = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(reverse)
          : v && typeof v === 'object'
            ? Object.fromEntries(
                Object.entries(v)
                  .reverse()
                  .map(([k, x]) => [k, reverse(x)]),
              )
            : v
      const reordered = reverse(snapshot('c'))
      const again = await as('owner').call('POST', '/v1/transfers', { snapshot: reordered })
      assert.equal(again.body.checksum, b.checksum)
      // The checksum covers more than the message history.
      const other = snapshot('c')
      ;(other.toolState as Record<string, unknown>).fetch = { cache: { hits: 4 } }
      const third = await as('owner').call('POST', '/v1/transfers', { snapshot: other })
      assert.notEqual(third.body.checksum, b.checksum)
    })

    test('snapshot: a retry with the same key answers the first transfer; a changed one conflicts', async () => {
      const key = `snap-${Math.random()}`
      const first = await stage('k', key)
      const again = await as('owner').call('POST', '/v1/transfers', {
        snapshot: snapshot('k'),
        idempotencyKey: key,
      })
      assert.equal(again.status, 201)
      assert.equal(again.body.transferId, first.transferId)
      assert.equal(again.body.repeated, true)
      const racing = await Promise.all(
        Array.from({ length: 6 }, () =>
          as('owner').call(
            'POST',
            '/v1/transfers',
            { snapshot: snapshot('r') },
            { 'idempotency-key': `${key}-race` },
          ),
        ),
      )
      assert.equal(
        new Set(racing.map((r) => r.body.transferId)).size,
        1,
        'concurrent retries make one',
      )
      const changed = await as('owner').call('POST', '/v1/transfers', {
        snapshot: snapshot('other'),
        idempotencyKey: key,
      })
      assert.equal(changed.status, 409)
      assert.equal(changed.body.code, 'idempotency_conflict')
      const list = await as('owner').call('GET', '/v1/transfers')
      const ids = (list.body.transfers as Body[]).map((t) => t.transferId)
      assert.equal(ids.filter((i) => i === first.transferId).length, 1)
    })

    test('snapshot: raw secrets are refused with their path, credRefs are checked', async () => {
      const secrets: [string, unknown][] = [
        [
          'private_key',
          '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----',
        ],
        ['aws_access_key_id', 'key AKIAIOSFODNN7EXAMPLE here'],
        ['github_token', `ghp_${'a'.repeat(36)}`],
        ['slack_token', 'xoxb-1234567890-abcdefghij'],
        ['api_key', `sk-proj-${'A1b2'.repeat(8)}`],
        [
          'jwt',
          'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
        ],
        ['url_with_password', 'postgres://app:hunter2@db.internal/app'],
      ]
      for (const [kind, value] of secrets) {
        const s = snapshot()
        ;(s.messages as unknown[]).push({ role: 'tool', content: [{ type: 'text', text: value }] })
        const res = await as('owner').call('POST', '/v1/transfers', { snapshot: s })
        assert.equal(res.status, 400, kind)
        assert.equal(res.body.code, 'snapshot_contains_secret', kind)
        assert.equal(res.body.kind, kind)
        assert.equal(res.body.path, '$.snapshot.messages[2].content[0].text')
        assert.ok(!JSON.stringify(res.body).includes(String(value).slice(0, 12)), 'no echo')
      }
      const named = snapshot()
      ;(named.toolState as Record<string, unknown>).db = { password: 'correct horse' }
      const n = await as('owner').call('POST', '/v1/transfers', { snapshot: named })
      assert.equal(n.body.code, 'snapshot_contains_secret')
      assert.equal(n.body.path, '$.snapshot.toolState.db.password')
      const badRef = snapshot()
      ;(badRef.toolState as Record<string, unknown>).k = { credRef: 'plaintext-secret' }
      const r = await as('owner').call('POST', '/v1/transfers', { snapshot: badRef })
      assert.equal(r.status, 400)
      assert.equal(r.body.code, 'snapshot_invalid')
      const shape = await as('owner').call('POST', '/v1/transfers', { snapshot: { messages: [] } })
      assert.equal(shape.body.code, 'snapshot_invalid')
    })

    test('snapshot: several MiB are accepted beyond the global body limit', async () => {
      const s = snapshot()
      ;(s.toolState as Record<string, unknown>).blob = 'a b '.repeat(768 * 1024)
      const res = await as('owner').call('POST', '/v1/transfers', { snapshot: s })
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 200))
      assert.ok((res.body.snapshotBytes as number) > 3 * 1024 * 1024)
    })

    test('tokens: minted only with the operator token; tiers and their limits are enforced', async () => {
      const id = (await stage()).transferId as string
      const noAdmin = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
        body: { scope: 'activate' },
      })
      assert.equal(noAdmin.status, 401)
      assert.equal(noAdmin.body.code, 'admin_token_invalid')
      const signedCall = await as('owner').call('POST', `/admin/v1/transfers/${id}/tokens`, {
        scope: 'activate',
      })
      assert.equal(signedCall.status, 401, 'a signed agent cannot mint')
      for (const [body, code] of [
        [
          { scope: 'provision', tier: 'nope', budgetMicros: 1, rateMicrosPerSecond: 1 },
          'tier_unknown',
        ],
        [
          { scope: 'provision', tier: 'small', budgetMicros: 10_000_001, rateMicrosPerSecond: 1 },
          'tier_limit_exceeded',
        ],
        [
          { scope: 'provision', tier: 'small', budgetMicros: 1, rateMicrosPerSecond: 1001 },
          'tier_limit_exceeded',
        ],
        [{ scope: 'provision', tier: 'small' }, 'invalid_request'],
        // An activate token binds no tier: the field is not one of its shape.
        [{ scope: 'activate', tier: 'small' }, 'unknown_field'],
      ] as const) {
        const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
          body,
          headers: admin,
        })
        assert.equal(res.body.code, code, JSON.stringify(body))
      }
    })

    test('provision: every token defect has its own code and burns nothing', async () => {
      const id = (await stage()).transferId as string
      const other = (await stage()).transferId as string
      const good = await provisionToken(id)
      const [v, kid, payload, mac] = good.split('.') as [string, string, string, string]
      const forged = Buffer.from(
        JSON.stringify({
          ...JSON.parse(Buffer.from(payload, 'base64url').toString()),
          budgetMicros: 9_000_000,
        }),
      ).toString('base64url')
      const cases: [string, string, Record<string, unknown>?][] = [
        ['transfer_token_malformed', 'not-a-token'],
        ['transfer_token_malformed', `${v}.${kid}.${payload}`],
        ['transfer_token_unknown_key', `${v}.zz9.${payload}.${mac}`],
        ['transfer_token_bad_signature', `${v}.${kid}.${forged}.${mac}`],
        ['transfer_token_bad_signature', `${v}.${kid}.${payload}.${mac.slice(0, -2)}AA`],
        ['transfer_token_wrong_transfer', await provisionToken(other)],
        ['transfer_token_wrong_scope', await activateToken(id)],
        ['transfer_token_params_mismatch', good, { ...params, tier: 'large' }],
        ['transfer_token_params_mismatch', good, { ...params, budgetMicros: 1_000_001 }],
        ['transfer_token_params_mismatch', good, { ...params, rateMicrosPerSecond: 999 }],
      ]
      for (const [code, token, p] of cases) {
        const res = await provision(id, token, (p as typeof params) ?? params)
        assert.equal(res.body.code, code, `${code} ${token.slice(0, 20)}`)
        // RFC 9110 §11.6.1: a 401 says how to authenticate.
        if (res.status === 401) {
          assert.equal(
            res.headers.get('www-authenticate'),
            `TransferToken realm="baton", error="${code}"`,
          )
        }
      }
      const ok = await provision(id, good)
      assert.equal(ok.status, 200, 'the good token was not burned by the refusals')
      assert.equal(ok.body.state, 'provisioned')
      assert.equal(ok.body.budgetMicros, 1_000_000)
      assert.equal(ok.body.tier, 'standard')
      const replay = await provision(id, good)
      assert.equal(replay.status, 409)
      assert.equal(replay.body.code, 'transfer_token_replayed')
      const late = await provisionToken(other)
      clock.advance(5 * 60 * 1000)
      const expired = await provision(other, late)
      assert.equal(expired.body.code, 'transfer_token_expired')
    })

    test('a failed move does not burn its token; precondition errors name the real state', async () => {
      const id = (await stage()).transferId as string
      const activate = await activateToken(id)
      const early = await as('owner').call('POST', `/v1/transfers/${id}/activate`, {
        token: activate,
      })
      assert.equal(early.status, 409)
      assert.equal(early.body.code, 'transfer_state_conflict')
      assert.equal(early.body.state, 'staged')
      const pushEarly = await as('owner').call('POST', `/v1/transfers/${id}/push`, {
        checksum: 'x',
      })
      assert.equal(pushEarly.body.code, 'transfer_forbidden')
      assert.equal((await provision(id)).status, 200)
      const again = await provision(id)
      assert.equal(again.body.code, 'transfer_state_conflict')
      assert.equal(again.body.state, 'provisioned')
      const claim = await as('runtime').call('POST', `/v1/transfers/${id}/claim`)
      assert.equal(claim.status, 200)
      const push = await as('runtime').call('POST', `/v1/transfers/${id}/push`, {
        checksum: await checksumOf(id),
      })
      assert.equal(push.status, 200)
      const later = await as('owner').call('POST', `/v1/transfers/${id}/activate`, {
        token: activate,
      })
      assert.equal(later.status, 200, 'the token refused earlier still works once')
      assert.equal(later.body.state, 'active')
      assert.equal(later.body.expiresAt, null)
    })

    test('claim, snapshot access and push: only the claiming runtime; mismatches are refused and logged', async () => {
      const id = (await stage()).transferId as string
      assert.equal(
        (await as('stranger').call('GET', `/v1/transfers/${id}`)).body.code,
        'transfer_not_found',
      )
      assert.equal((await as('runtime').call('GET', `/v1/transfers/${id}/snapshot`)).status, 404)
      assert.equal(
        (await as('runtime').call('POST', `/v1/transfers/${id}/claim`)).body.code,
        'transfer_not_found',
        'a staged transfer is not offered to runtimes: it answers like a missing id',
      )
      await provision(id)
      const first = await as('runtime').call('POST', `/v1/transfers/${id}/claim`)
      assert.equal(first.status, 200)
      assert.equal(first.body.runtime, agents.runtime.principal)
      assert.equal(
        (await as('runtime').call('POST', `/v1/transfers/${id}/claim`)).status,
        200,
        'a repeat is answered',
      )
      const second = await as('runtime2').call('POST', `/v1/transfers/${id}/claim`)
      assert.equal(second.status, 404, 'a transfer another runtime holds is not visible')
      assert.equal(second.body.code, 'transfer_not_found')
      assert.equal((await as('runtime2').call('GET', `/v1/transfers/${id}/snapshot`)).status, 404)
      assert.equal((await as('stranger').call('GET', `/v1/transfers/${id}/snapshot`)).status, 404)
      const sum = await checksumOf(id)
      assert.equal(sum, await checksumOf(id, 'owner'))
      const wrongRuntime = await as('runtime2').call('POST', `/v1/transfers/${id}/push`, {
        checksum: sum,
      })
      assert.equal(wrongRuntime.body.code, 'transfer_not_found')
      const bad = await as('runtime').call('POST', `/v1/transfers/${id}/push`, {
        checksum: 'sha-256:AAAA',
      })
      assert.equal(bad.status, 422)
      assert.equal(bad.body.code, 'checksum_mismatch')
      let s = await status(id)
      assert.equal(s.state, 'provisioned')
      assert.deepEqual(types(s), ['staged', 'provisioned', 'claimed', 'checksum_mismatch'])
      const good = await as('runtime').call('POST', `/v1/transfers/${id}/push`, { checksum: sum })
      assert.equal(good.status, 200)
      s = await status(id)
      assert.equal(s.state, 'pushed')
      // The runtime sees status too.
      assert.equal((await as('runtime').call('GET', `/v1/transfers/${id}`)).status, 200)
    })

    test('claim-next takes the oldest provisioned transfer of the tier, one runtime each', async () => {
      const a = (await stage()).transferId as string
      const b = (await stage()).transferId as string
      const p = { ...params, tier: 'large' }
      await provision(a, undefined, p)
      await provision(b, undefined, p)
      const [x, y] = await Promise.all([
        as('runtime').call('POST', '/v1/transfers/claim', { tier: 'large' }),
        as('runtime2').call('POST', '/v1/transfers/claim', { tier: 'large' }),
      ])
      const got = [(x.body.transfer as Body).transferId, (y.body.transfer as Body).transferId]
      assert.deepEqual([...got].sort(), [a, b].sort())
      const none = await as('runtime').call('POST', '/v1/transfers/claim', { tier: 'large' })
      assert.equal(none.body.transfer, null)
      const unknown = await as('runtime').call('POST', '/v1/transfers/claim', { tier: 'huge' })
      assert.equal(unknown.body.code, 'tier_unknown')
    })

    test('usage: only the holding runtime; exact integer spend; retries never double-charge', async () => {
      const id = await toActive()
      const mine = await usage(id, 'k-owner', 1, 'owner')
      assert.equal(mine.status, 403)
      assert.equal(mine.body.code, 'transfer_forbidden')
      const other = await usage(id, 'k-runtime2', 1, 'runtime2')
      assert.equal(other.status, 404, 'another runtime does not see the transfer')
      assert.equal(other.body.code, 'transfer_not_found')
      const r1 = await usage(id, 'u-1', 100_000)
      assert.equal(r1.status, 200)
      assert.deepEqual(
        {
          state: r1.body.state,
          spent: r1.body.spentMicros,
          stop: r1.body.stop,
          repeated: r1.body.repeated,
        },
        { state: 'active', spent: 100_000, stop: false, repeated: false },
      )
      const again = await usage(id, 'u-1', 100_000)
      assert.equal(again.body.repeated, true)
      assert.equal(again.body.spentMicros, 100_000)
      const conflictAmount = await usage(id, 'u-1', 5)
      assert.equal(conflictAmount.body.code, 'idempotency_conflict')
      const burst = await Promise.all([
        ...Array.from({ length: 8 }, (_, i) => usage(id, `u-b${i}`, 10_000)),
        ...Array.from({ length: 8 }, () => usage(id, 'u-same', 1)),
      ])
      assert.ok(
        burst.every((r) => r.status === 200),
        JSON.stringify(burst.map((r) => r.body.code)),
      )
      const s = await status(id)
      // 0.1 + 8 × 0.01 + 0.000001 units, exactly, in micro-units.
      assert.equal(s.spentMicros, 180_001)
      assert.equal(s.remainingMicros, 819_999)
      assert.equal(s.state, 'active')
    })

    test('insolvency: flips exactly once under concurrent reports; the runtime is told to stop', async () => {
      const id = await toActive()
      const reports = await Promise.all(
        Array.from({ length: 12 }, (_, i) => usage(id, `i-${i}`, 100_000)),
      )
      assert.ok(reports.every((r) => r.status === 200))
      const s = await status(id)
      assert.equal(s.state, 'insolvent')
      assert.equal(s.spentMicros, 1_200_000)
      assert.equal(types(s).filter((t) => t === 'insolvent').length, 1)
      assert.equal(s.graceEndsAt, new Date(clock.now() + GRACE_MS).toISOString())
      const after = await usage(id, 'i-after', 1)
      assert.equal(after.body.stop, true)
      assert.equal(after.body.state, 'insolvent')
      assert.equal(reports.filter((r) => r.body.stop === false).length, 9)
    })

    test('reaper: insolvent past grace and expired pre-active transfers end, with events; nothing else', async () => {
      await hub.ctx.transfers.reap()
      const insolvent = await toActive()
      await usage(insolvent, 'all', 1_000_000)
      const solvent = await toActive()
      await usage(solvent, 'some', 10)
      const staged = (await stage()).transferId as string
      clock.advance(GRACE_MS - 1)
      await hub.ctx.transfers.reap()
      assert.equal((await status(insolvent)).state, 'insolvent', 'not before its grace ends')
      clock.advance(1)
      assert.ok((await hub.ctx.transfers.reap()) >= 1)
      const ended = await status(insolvent)
      assert.equal(ended.state, 'terminated')
      assert.equal(ended.endReason, 'insolvent')
      assert.deepEqual(types(ended).slice(-2), ['insolvent', 'terminated'])
      assert.equal((await status(solvent)).state, 'active')
      assert.equal((await status(staged)).state, 'staged')
      assert.equal(await hub.ctx.transfers.reap(), 0, 'reaping twice ends nothing twice')
      clock.advance(TTL_MS)
      await hub.ctx.transfers.reap()
      const expired = await status(staged)
      assert.equal(expired.state, 'terminated')
      assert.equal(expired.endReason, 'expired')
      assert.deepEqual(types(expired), ['staged', 'expired'])
      assert.equal((await status(solvent)).state, 'active', 'active transfers do not expire')
    })

    test('expiry: a read past the TTL answers expired at once; moves answer transfer_expired', async () => {
      const id = (await stage()).transferId as string
      const token = await provisionToken(id, params, 3600)
      clock.advance(TTL_MS)
      const s = await status(id)
      assert.equal(s.state, 'terminated')
      assert.equal(s.endReason, 'expired')
      assert.deepEqual(types(s), ['staged', 'expired'])
      const late = await provision(id, token)
      assert.equal(late.status, 409, 'a terminated transfer cannot be provisioned')
      const id2 = (await stage()).transferId as string
      const t2 = await provisionToken(id2, params, 3600)
      clock.advance(TTL_MS)
      const res = await provision(id2, t2)
      assert.equal(res.status, 410)
      assert.equal(res.body.code, 'transfer_expired')
      assert.deepEqual(types(await status(id2)), ['staged', 'expired'])
    })

    test('races: concurrent provisions, activations, and activate against expiry have one winner', async () => {
      const id = (await stage()).transferId as string
      const tokens = await Promise.all([provisionToken(id), provisionToken(id), provisionToken(id)])
      const provs = await Promise.all(tokens.map((t) => provision(id, t)))
      assert.equal(provs.filter((r) => r.status === 200).length, 1)
      assert.ok(
        provs
          .filter((r) => r.status !== 200)
          .every((r) => r.body.code === 'transfer_state_conflict'),
      )
      assert.deepEqual(types(await status(id)), ['staged', 'provisioned'])

      const pushed = await toPushed()
      const acts = await Promise.all(
        (await Promise.all([activateToken(pushed), activateToken(pushed)])).map((token) =>
          as('owner').call('POST', `/v1/transfers/${pushed}/activate`, { token }),
        ),
      )
      assert.deepEqual(acts.map((r) => r.status).sort(), [200, 409])
      assert.equal(types(await status(pushed)).filter((t) => t === 'active').length, 1)

      const racing = await toPushed()
      const token = await activateToken(racing, 3600)
      clock.advance(TTL_MS)
      const [act] = await Promise.all([
        as('owner').call('POST', `/v1/transfers/${racing}/activate`, { token }),
        hub.ctx.transfers.reap(),
        as('owner').call('GET', `/v1/transfers/${racing}`),
      ])
      assert.ok([409, 410].includes(act.status), String(act.status))
      const s = await status(racing)
      assert.equal(s.state, 'terminated')
      assert.equal(types(s).filter((t) => t === 'expired').length, 1)
      assert.ok(!types(s).includes('active'))
    })

    test('terminate: the orchestrator ends any state with an event; agents cannot', async () => {
      const staged = (await stage()).transferId as string
      const active = await toActive()
      const refused = await call(hub, 'POST', `/admin/v1/transfers/${active}/terminate`, {
        body: {},
      })
      assert.equal(refused.status, 401)
      for (const id of [staged, active]) {
        const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/terminate`, {
          body: { reason: 'operator decision' },
          headers: admin,
        })
        assert.equal(res.status, 200)
        assert.equal(res.body.state, 'terminated')
        assert.equal(res.body.endReason, 'orchestrator')
        const events = res.body.events as Event[]
        assert.equal(events.at(-1)?.type, 'terminated')
        assert.equal(events.at(-1)?.actor, 'operator')
      }
      const repeat = await call(hub, 'POST', `/admin/v1/transfers/${active}/terminate`, {
        body: {},
        headers: admin,
      })
      assert.equal(repeat.status, 200)
      assert.equal(types(repeat.body).filter((t) => t === 'terminated').length, 1)
      const stop = await usage(active, 'after-end', 1)
      assert.equal(stop.body.code, 'transfer_state_conflict')
      const adminRead = await call(hub, 'GET', `/admin/v1/transfers/${active}`, { headers: admin })
      assert.equal(adminRead.body.state, 'terminated')
    })

    test('lease: one process runs an active transfer; a lapsed lease is taken over with an event', async () => {
      const id = await toActive()
      const a = await as('runtime').call('POST', `/v1/transfers/${id}/lease`, {
        instance: 'instance-a',
      })
      assert.equal(a.status, 200)
      assert.equal(a.body.renewed, false)
      const b = await as('runtime').call('POST', `/v1/transfers/${id}/lease`, {
        instance: 'instance-b',
      })
      assert.equal(b.status, 409)
      assert.equal(b.body.code, 'transfer_lease_held')
      assert.equal(
        (await as('runtime').call('POST', `/v1/transfers/${id}/lease`, { instance: 'instance-a' }))
          .body.renewed,
        true,
      )
      assert.equal(
        (await as('runtime2').call('POST', `/v1/transfers/${id}/lease`, { instance: 'instance-c' }))
          .status,
        404,
        'another runtime does not see the transfer',
      )
      clock.advance(16_000)
      const c = await as('runtime').call('POST', `/v1/transfers/${id}/lease`, {
        instance: 'instance-b',
      })
      assert.equal(c.status, 200)
      assert.deepEqual(types(await status(id)).slice(-2), ['started', 'restarted'])
    })

    // The wait is held for an hour (a missed wake would still see the move when it ends): only
    // the move can answer it within the test's minute.
    test('wait: a long-poll answers when the transfer moves; the full log is in order', {
      timeout: 60_000,
    }, async () => {
      const id = (await stage()).transferId as string
      const held = hub.ctx.waits.waiting
      const waiting = as('owner').call('GET', `/v1/transfers/${id}/wait?seconds=3600&version=1`)
      await hub.ctx.waits.untilWaiting(held + 1)
      await provision(id)
      const w = await waiting
      assert.equal(w.status, 200)
      assert.equal(w.body.changed, true)
      assert.equal(w.body.state, 'provisioned')
      const now = await as('owner').call('GET', `/v1/transfers/${id}/wait?seconds=0`)
      assert.equal(now.body.changed, false)
      const full = await toActive()
      await as('runtime').call('POST', `/v1/transfers/${full}/lease`, { instance: 'instance-z' })
      await usage(full, 'z', 1_000_000)
      clock.advance(GRACE_MS)
      await hub.ctx.transfers.reap()
      const s = await status(full)
      assert.deepEqual(types(s), [
        'staged',
        'provisioned',
        'claimed',
        'pushed',
        'active',
        'started',
        'insolvent',
        'terminated',
      ])
      const events = s.events as Event[]
      assert.deepEqual(
        events.map((e) => e.seq),
        events.map((_, i) => i + 1),
      )
      assert.deepEqual(
        events.filter((e) => e.from !== e.to).map((e) => e.to),
        ['staged', 'provisioned', 'pushed', 'active', 'insolvent', 'terminated'],
      )
    })
  })
}
