import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BatonError, canonicalJson, type TransferView } from '@baton/protocol'
import pg from 'pg'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { checksumOfCanonical, type TransferService } from '../src/transfers/service.js'
import { onPostgres, startTestHub, type TestHub, testStores } from './support.js'

// Transfer writes that arrive together commit as one set-based group: these check that each
// write of a group is decided with the ones before it in view, exactly as if they came one by one.

const OWNER = 'did:key:group-owner'
const RUNTIME = 'did:key:group-runtime'
const params = { tier: 'standard', budgetMicros: 1000, rateMicrosPerSecond: 10 }

const snapshot = (note: string) => ({
  systemPrompt: 'You resume the job.',
  messages: [{ role: 'user' as const, content: `task ${note}` }],
  toolState: {},
  mcpConfig: { servers: [] },
})

/** Settles every promise; answers each value or the code of its BatonError. */
async function settle<T>(promises: Promise<T>[]): Promise<(T | { code: string })[]> {
  const results = await Promise.allSettled(promises)
  return results.map((r) => {
    if (r.status === 'fulfilled') return r.value
    assert.ok(r.reason instanceof BatonError, String(r.reason))
    return { code: r.reason.code }
  })
}
const codes = (results: unknown[]) =>
  results.map((r) => (r as { code?: string }).code ?? 'ok').sort()

for (const store of testStores) {
  describe(`transfer writes in one group (${store.name})`, () => {
    let hub: TestHub
    let svc: TransferService
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))

    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000) },
        { clock },
      )
      svc = hub.ctx.transfers
    })
    after(() => hub.close())

    const stage = async (note = String(Math.random())) =>
      (await svc.create(OWNER, { snapshot: snapshot(note) })).transferId
    const provisionToken = async (id: string) =>
      (await svc.mint(id, { scope: 'provision', ...params })).token
    const activateToken = async (id: string) => (await svc.mint(id, { scope: 'activate' })).token
    async function toActive(): Promise<string> {
      const note = String(Math.random())
      const id = (await svc.create(OWNER, { snapshot: snapshot(note) })).transferId
      await svc.provision(OWNER, id, { ...params, token: await provisionToken(id) })
      await svc.claim(RUNTIME, id)
      await svc.push(RUNTIME, id, { checksum: checksumOfCanonical(canonicalJson(snapshot(note))) })
      await svc.activate(OWNER, id, { token: await activateToken(id) })
      return id
    }
    /** The event log is the version history: seq 1, 2, 3… up to the transfer's version. */
    function assertLog(view: TransferView): void {
      assert.deepEqual(
        view.events.map((e) => e.seq),
        Array.from({ length: view.version }, (_, i) => i + 1),
      )
    }

    test('two provisions and one token twice in one group: one move, one token use', async () => {
      const id = await stage()
      const [a, b] = [await provisionToken(id), await provisionToken(id)]
      const results = await settle([
        svc.provision(OWNER, id, { ...params, token: a }),
        svc.provision(OWNER, id, { ...params, token: b }),
        svc.provision(OWNER, id, { ...params, token: a }),
      ])
      assert.deepEqual(codes(results), ['ok', 'transfer_state_conflict', 'transfer_token_replayed'])
      const view = await svc.get(OWNER, id)
      assert.equal(view.state, 'provisioned')
      assert.deepEqual(
        view.events.map((e) => e.type),
        ['staged', 'provisioned'],
      )
      assertLog(view)
    })

    test('usage in one group: repeats answered, a conflicting amount refused, one flip', async () => {
      const id = await toActive()
      const results = await settle([
        svc.usage(RUNTIME, id, { idempotencyKey: 'k1', amountMicros: 600 }),
        svc.usage(RUNTIME, id, { idempotencyKey: 'k1', amountMicros: 600 }),
        svc.usage(RUNTIME, id, { idempotencyKey: 'k1', amountMicros: 5 }),
        svc.usage(RUNTIME, id, { idempotencyKey: 'k2', amountMicros: 600 }),
        svc.usage(RUNTIME, id, { idempotencyKey: 'k3', amountMicros: 1 }),
      ])
      assert.deepEqual(codes(results), ['idempotency_conflict', 'ok', 'ok', 'ok', 'ok'])
      const [first, repeat, , second, third] = results as {
        repeated: boolean
        state: string
        spentMicros: number
      }[]
      assert.deepEqual([first!.repeated, first!.state, first!.spentMicros], [false, 'active', 600])
      assert.deepEqual(
        [repeat!.repeated, repeat!.state, repeat!.spentMicros],
        [true, 'active', 600],
      )
      assert.deepEqual([second!.state, second!.spentMicros], ['insolvent', 1200])
      assert.deepEqual([third!.state, third!.spentMicros], ['insolvent', 1201])
      const view = await svc.get(OWNER, id)
      assert.equal(view.spentMicros, 1201)
      assert.equal(view.events.filter((e) => e.type === 'insolvent').length, 1)
      assertLog(view)
    })

    test('usage on many transfers in one group: each finds its own committed report', async () => {
      const [a, b, c] = await Promise.all([toActive(), toActive(), toActive()])
      await Promise.all([
        svc.usage(RUNTIME, a!, { idempotencyKey: 'same', amountMicros: 100 }),
        svc.usage(RUNTIME, b!, { idempotencyKey: 'same', amountMicros: 200 }),
      ])
      const results = await settle([
        svc.usage(RUNTIME, a!, { idempotencyKey: 'same', amountMicros: 100 }),
        svc.usage(RUNTIME, b!, { idempotencyKey: 'same', amountMicros: 100 }),
        svc.usage(RUNTIME, c!, { idempotencyKey: 'same', amountMicros: 300 }),
      ])
      assert.deepEqual(
        results.map((r) => {
          const u = r as { code?: string; repeated?: boolean; spentMicros?: number }
          return u.code ?? [u.repeated, u.spentMicros]
        }),
        [[true, 100], 'idempotency_conflict', [false, 300]],
      )
      const spent = await Promise.all([a!, b!, c!].map((id) => svc.get(OWNER, id)))
      assert.deepEqual(
        spent.map((v) => v.spentMicros),
        [100, 200, 300],
      )
    })

    test('a group of different steps on many transfers answers each from its own rows', async () => {
      const staged = await Promise.all([stage(), stage(), stage()])
      const tokens = await Promise.all(staged.map(provisionToken))
      const active = await toActive()
      const answers = await settle<unknown>([
        ...staged.map((id, i) => svc.provision(OWNER, id, { ...params, token: tokens[i]! })),
        svc.lease(RUNTIME, active, { instance: 'process-1' }),
        svc.usage(RUNTIME, active, { idempotencyKey: 'g1', amountMicros: 10 }),
        svc.terminate(staged[0]!, { reason: 'changed my mind' }),
      ])
      assert.deepEqual(codes(answers), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok'])
      const provisioned = answers.slice(0, 3) as TransferView[]
      for (const [i, view] of provisioned.entries()) {
        assert.equal(view.transferId, staged[i])
        assert.equal(view.state, 'provisioned')
        assertLog(view)
      }
      const terminated = answers[5] as TransferView
      assert.equal(terminated.state, 'terminated')
      assert.deepEqual(
        terminated.events.map((e) => e.type),
        ['staged', 'provisioned', 'terminated'],
      )
      const running = await svc.get(OWNER, active)
      assert.deepEqual(running.events.at(-1)?.type, 'started')
      assert.equal(running.spentMicros, 10)
      assertLog(running)
    })

    test('writes on one transfer split by another write in one commit each see the one before', async () => {
      // Queued together, the claim and the push commit in one transaction, as two groups with
      // another write between them: the push, decided second, must see the claim's runtime.
      const note = String(Math.random())
      const id = await stage(note)
      await svc.provision(OWNER, id, { ...params, token: await provisionToken(id) })
      const checksum = checksumOfCanonical(canonicalJson(snapshot(note)))
      const results = await settle<unknown>([
        svc.claim(RUNTIME, id),
        hub.ctx.batcher.run(async () => 'between'),
        svc.push(RUNTIME, id, { checksum }),
      ])
      assert.deepEqual(codes(results), ['ok', 'ok', 'ok'])
      const view = await svc.get(OWNER, id)
      assert.deepEqual(
        [view.state, view.events.map((e) => e.type)],
        ['pushed', ['staged', 'provisioned', 'claimed', 'pushed']],
      )
      assertLog(view)
    })

    test('one snapshot key twice in one group stages one transfer', async () => {
      const body = { snapshot: snapshot('keyed'), idempotencyKey: 'same-key' }
      const results = await settle([
        svc.create(OWNER, body),
        svc.create(OWNER, body),
        svc.create(OWNER, { snapshot: snapshot('other'), idempotencyKey: 'same-key' }),
      ])
      assert.deepEqual(codes(results), ['idempotency_conflict', 'ok', 'ok'])
      const [a, b] = results as { transferId: string; repeated: boolean }[]
      assert.equal(a!.transferId, b!.transferId)
      assert.deepEqual([a!.repeated, b!.repeated], [false, true])
      const again = await svc.create(OWNER, body)
      assert.deepEqual([again.transferId, again.repeated], [a!.transferId, true])
    })

    test('an expired transfer in a group: its expiry commits, the others move', async () => {
      const old = await stage()
      clock.advance(31 * 60 * 1000)
      const fresh = await stage()
      const [oldToken, freshToken] = [await provisionToken(old), await provisionToken(fresh)]
      const results = await settle([
        svc.provision(OWNER, old, { ...params, token: oldToken }),
        svc.provision(OWNER, fresh, { ...params, token: freshToken }),
      ])
      assert.deepEqual(codes(results), ['ok', 'transfer_expired'])
      const ended = await svc.get(OWNER, old)
      assert.deepEqual([ended.state, ended.endReason], ['terminated', 'expired'])
      assert.deepEqual(
        ended.events.map((e) => e.type),
        ['staged', 'expired'],
      )
      assert.equal((await svc.get(OWNER, fresh)).state, 'provisioned')
    })

    test('a group that fails as a whole is decided again from what committed meanwhile', {
      skip: store.name !== 'postgres' && 'row locks and a second session: PostgreSQL only',
    }, async () => {
      const id = await toActive()
      // Another instance reports the same key and has not committed yet: this report decides
      // it is new, then its insert waits on that key; once the other commits, the group fails
      // on the unique key and is decided again from what is committed.
      const other = new pg.Client({ connectionString: hub.config.databaseUrl })
      await other.connect()
      try {
        await other.query('begin')
        await other.query(
          `insert into transfer_usage (transfer_id, idempotency_key, amount_micros, spent_after, reporter, at)
             values ($1, 'raced', 7, 7, $2, 0)`,
          [id, RUNTIME],
        )
        const report = svc.usage(RUNTIME, id, { idempotencyKey: 'raced', amountMicros: 7 })
        for (;;) {
          const waiting = await other.query(
            `select 1 from pg_stat_activity
             where datname = current_database() and wait_event_type = 'Lock'`,
          )
          if (waiting.rowCount) break
          await new Promise((r) => setImmediate(r))
        }
        await other.query('commit')
        const answer = await report
        assert.deepEqual([answer.repeated, answer.spentMicros], [true, 0])
      } finally {
        await other.end()
      }
    })
  })
}

const postgres = onPostgres.store

// An instance answers from the event logs it committed only while no other instance wrote since.
describe('transfer answers across two instances on one PostgreSQL database', {
  skip: onPostgres.skip,
}, () => {
  let hubs: RunningHub[] = []
  let drop: () => Promise<void> = async () => {}
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))

  before(async () => {
    const db = await postgres!.fresh()
    drop = db.drop
    const config = loadConfig({
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000),
      ...db.env,
    })
    hubs = await Promise.all([
      startHub(config, { clock, log: pino({ level: 'silent' }) }),
      startHub(config, { clock, log: pino({ level: 'silent' }) }),
    ])
  })
  after(async () => {
    for (const hub of hubs) await hub.stop()
    await drop()
  })

  test('each answer carries every event, whichever instance wrote it', async () => {
    const [a, b] = hubs.map((h) => h.ctx.transfers) as [TransferService, TransferService]
    const s = snapshot('two instances')
    const id = (await a.create(OWNER, { snapshot: s })).transferId
    const p = await a.mint(id, { scope: 'provision', ...params })
    await a.provision(OWNER, id, { ...params, token: p.token })
    await b.claim(RUNTIME, id)
    const pushed = await a.push(RUNTIME, id, { checksum: checksumOfCanonical(canonicalJson(s)) })
    assert.deepEqual(
      pushed.events.map((e) => e.type),
      ['staged', 'provisioned', 'claimed', 'pushed'],
    )
    const act = await b.mint(id, { scope: 'activate' })
    await b.activate(OWNER, id, { token: act.token })
    assert.deepEqual(
      (await a.get(OWNER, id)).events.map((e) => e.type),
      ['staged', 'provisioned', 'claimed', 'pushed', 'active'],
    )
    await b.lease(RUNTIME, id, { instance: 'process-b' })
    assert.equal((await a.get(OWNER, id)).events.at(-1)?.type, 'started')
    const ended = await a.terminate(id, {})
    assert.deepEqual(
      ended.events.map((e) => e.type),
      ['staged', 'provisioned', 'claimed', 'pushed', 'active', 'started', 'terminated'],
    )
  })
})
