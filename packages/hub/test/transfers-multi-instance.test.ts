import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient } from '@baton/client'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { call, onPostgres } from './support.js'

type Body = Record<string, unknown> & { code?: string }
const ADMIN = 'transfer-multi-operator-token-0123456789abcdef'
const postgres = onPostgres.store!

// seed 004 races across instances: many hubs on one PostgreSQL database, one clock.
describe('session transfer on two hub instances sharing one PostgreSQL database', {
  skip: onPostgres.skip,
}, () => {
  let a: RunningHub
  let b: RunningHub
  let drop: () => Promise<void>
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
  let owner: SignedClient
  let runtime: SignedClient
  const at = (hub: RunningHub, who: SignedClient) => ({
    call: async (method: string, path: string, body?: unknown) => {
      const url = new URL(path, hub.url)
      const res = await who.request<Body>(method, url.pathname + url.search, body as object)
      return { status: res.status, body: res.body ?? {} }
    },
  })

  before(async () => {
    const db = await postgres.fresh()
    drop = db.drop
    const config = loadConfig({
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      BATON_ADMISSION: 'open',
      BATON_ADMIN_TOKEN: ADMIN,
      BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000),
      ...db.env,
    })
    ;[a, b] = await Promise.all([
      startHub(config, { clock, log: pino({ level: 'silent' }) }),
      startHub(config, { clock, log: pino({ level: 'silent' }) }),
    ])
    const opts = { now: () => Math.floor(clock.now() / 1000) }
    owner = await SignedClient.connect(
      `${a.url}/.well-known/agent-net`,
      createIdentity(a.url),
      opts,
    )
    runtime = await SignedClient.connect(
      `${a.url}/.well-known/agent-net`,
      createIdentity(a.url),
      opts,
    )
    await owner.me()
    await runtime.me()
  })
  after(async () => {
    await a.stop()
    await b.stop()
    await drop()
  })

  const mint = async (hub: RunningHub, id: string, body: Record<string, unknown>) => {
    const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
      body,
      headers: { authorization: `Bearer ${ADMIN}` },
    })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body.token as string
  }

  test('tokens minted on one instance work on the other; racing provisions and reports have one outcome', async () => {
    const snap = { systemPrompt: 'p', messages: [{ role: 'user', content: 'x' }] }
    const id = (await at(a, owner).call('POST', '/v1/transfers', { snapshot: snap })).body
      .transferId as string
    const p = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 100 }
    const tokens = await Promise.all(
      [a, b, a, b].map((hub) => mint(hub, id, { scope: 'provision', ...p })),
    )
    const provs = await Promise.all(
      tokens.map((token, i) =>
        at(i % 2 ? b : a, owner).call('POST', `/v1/transfers/${id}/provision`, { ...p, token }),
      ),
    )
    assert.equal(
      provs.filter((r) => r.status === 200).length,
      1,
      JSON.stringify(provs.map((r) => r.body.code)),
    )
    assert.ok(provs.every((r) => r.status === 200 || r.body.code === 'transfer_state_conflict'))
    await at(b, runtime).call('POST', `/v1/transfers/${id}/claim`)
    const sum = (await at(a, owner).call('GET', `/v1/transfers/${id}`)).body.checksum
    assert.equal(
      (await at(b, runtime).call('POST', `/v1/transfers/${id}/push`, { checksum: sum })).status,
      200,
    )
    const act = await mint(b, id, { scope: 'activate' })
    assert.equal(
      (await at(a, owner).call('POST', `/v1/transfers/${id}/activate`, { token: act })).status,
      200,
    )
    const replay = await at(b, owner).call('POST', `/v1/transfers/${id}/activate`, { token: act })
    assert.equal(replay.body.code, 'transfer_token_replayed')

    const reports = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) =>
        at(i % 2 ? a : b, runtime).call('POST', `/v1/transfers/${id}/usage`, {
          idempotencyKey: `k-${i}`,
          amountMicros: 150_000,
        }),
      ),
      ...Array.from({ length: 6 }, (_, i) =>
        at(i % 2 ? a : b, runtime).call('POST', `/v1/transfers/${id}/usage`, {
          idempotencyKey: 'same',
          amountMicros: 7,
        }),
      ),
    ])
    assert.ok(
      reports.every((r) => r.status === 200),
      JSON.stringify(reports.map((r) => r.body.code)),
    )
    let s = (await at(b, owner).call('GET', `/v1/transfers/${id}`)).body
    assert.equal(s.spentMicros, 1_500_007)
    assert.equal(s.state, 'insolvent')
    const types = () => (s.events as { type: string }[]).map((e) => e.type)
    assert.equal(types().filter((t) => t === 'insolvent').length, 1)

    clock.advance(60_000)
    const reaped = await Promise.all([a.ctx.transfers.reap(), b.ctx.transfers.reap()])
    assert.equal(reaped[0] + reaped[1], 1, 'one instance terminates it')
    s = (await at(a, owner).call('GET', `/v1/transfers/${id}`)).body
    assert.equal(s.state, 'terminated')
    assert.deepEqual(types(), [
      'staged',
      'provisioned',
      'claimed',
      'pushed',
      'active',
      'insolvent',
      'terminated',
    ])
  })
})
