import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import {
  onPostgres,
  signedAgent,
  startTestHub,
  TEST_ADDRESS_LIMITS,
  type TestHub,
  testStores,
} from './support.js'

type Body = Record<string, unknown> & { code?: string }
const PROGRAM = { '+': [{ var: 'a' }, { var: 'b' }] }
let keys = 0
const key = () => `claim-key-${++keys}-${Date.now()}`

async function ask(who: SignedClient, method: string, path: string, body?: unknown) {
  const res = await who.request<Body>(method, path, body as object)
  return { status: res.status, body: res.body ?? ({} as Body) }
}

for (const store of testStores) {
  describe(`compute step reservations end with their job, once (${store.name})`, () => {
    const BUDGET = 1000
    let hub: TestHub
    let alice: SignedClient
    let runtime: SignedClient
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 10))
    before(async () => {
      hub = await startTestHub(
        store,
        {
          BATON_ADMISSION: 'open',
          BATON_COMPUTE_EMBEDDED: 'false',
          BATON_COMPUTE_RUNTIMES: '*',
          BATON_COMPUTE_MAX_ATTEMPTS: '2',
          BATON_QUOTA_COMPUTE_STEPS_PER_DAY: String(BUDGET),
        },
        { clock },
      )
      alice = await signedAgent(hub, { clock })
      runtime = await signedAgent(hub, { clock })
    })
    after(() => hub.close())

    /** The owner's steps counted today, and the steps every job still holds reserved. */
    const steps = async () => {
      const rows = await hub.ctx.database.db
        .selectFrom('quota_counters')
        .select(['scope', 'subject', 'count'])
        .where('scope', 'in', ['compute_steps', 'compute_steps_reserved'])
        .execute()
      const counted = rows.find(
        (r) => r.scope === 'compute_steps' && r.subject === alice.identity.principal,
      )
      const reserved = rows
        .filter((r) => r.scope === 'compute_steps_reserved')
        .reduce((n, r) => n + Number(r.count), 0)
      return { counted: Number(counted?.count ?? 0), reserved }
    }
    const submit = async () => {
      const res = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 2 },
        idempotencyKey: key(),
      })
      assert.equal(res.status, 201)
      return res.body.jobId as string
    }
    const beat = (id: string) =>
      ask(runtime, 'POST', '/v1/compute/runtimes', { runtimeId: id, languages: ['json-expr-v1'] })
    const claim = async (id: string) => {
      const res = await ask(runtime, 'POST', `/v1/compute/runtimes/${id}/claim`)
      assert.equal(res.status, 200)
      return res.body.job as Body
    }
    const state = async (jobId: string) =>
      (await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)).body

    test('a job canceled while queued or while running holds no steps', async () => {
      await beat('reserve-rt-0001')
      const queued = await submit()
      assert.equal((await ask(alice, 'POST', `/v1/compute/jobs/${queued}/cancel`)).status, 200)
      assert.deepEqual(await steps(), { counted: 0, reserved: 0 })
      const running = await submit()
      const job = await claim('reserve-rt-0001')
      assert.equal(job.jobId, running)
      assert.equal(job.maxSteps, BUDGET)
      assert.deepEqual(await steps(), { counted: BUDGET, reserved: BUDGET })
      const canceled = await ask(alice, 'POST', `/v1/compute/jobs/${running}/cancel`)
      assert.equal(canceled.body.state, 'canceled')
      assert.deepEqual(await steps(), { counted: 0, reserved: 0 })
      // a repeated cancel, and the runtime's late result, give nothing back twice
      await ask(alice, 'POST', `/v1/compute/jobs/${running}/cancel`)
      const late = await ask(runtime, 'POST', `/v1/compute/jobs/${running}/result`, {
        leaseId: job.leaseId,
        ok: true,
        output: 3,
        steps: 1,
      })
      assert.equal(late.body.code, 'compute_lease_lost')
      assert.deepEqual(await steps(), { counted: 0, reserved: 0 })
    })

    test('a reclaim after a lost lease reserves afresh; the result settles to its steps', async () => {
      await beat('reserve-rt-0001')
      const jobId = await submit()
      const first = await claim('reserve-rt-0001')
      assert.equal(first.jobId, jobId)
      clock.advance(15_001)
      await beat('reserve-rt-0002')
      const second = await claim('reserve-rt-0002')
      assert.equal(second.jobId, jobId)
      assert.equal(second.maxSteps, BUDGET)
      assert.deepEqual(await steps(), { counted: BUDGET, reserved: BUDGET })
      const done = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: second.leaseId,
        ok: true,
        output: 3,
        steps: 7,
      })
      assert.equal(done.body.state, 'succeeded')
      assert.deepEqual(await steps(), { counted: 7, reserved: 0 })
      const again = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: second.leaseId,
        ok: true,
        output: 3,
        steps: 7,
      })
      assert.equal(again.body.code, 'compute_lease_lost')
      assert.deepEqual(await steps(), { counted: 7, reserved: 0 })
    })

    test('failed and timed-out results keep the steps they report, no more', async () => {
      await beat('reserve-rt-0001')
      for (const [code, used] of [
        ['compute_steps_exceeded', 20],
        ['compute_timeout', 10],
      ] as const) {
        const jobId = await submit()
        const job = await claim('reserve-rt-0001')
        assert.equal(job.jobId, jobId)
        const res = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
          leaseId: job.leaseId,
          ok: false,
          error: { code, message: 'bounded' },
          steps: used,
        })
        assert.equal(res.body.state, 'failed')
      }
      assert.deepEqual(await steps(), { counted: 37, reserved: 0 })
    })

    test('a job every runtime lost gives its steps back as it fails', async () => {
      const jobId = await submit()
      for (let i = 0; i < 2; i++) {
        await beat('reserve-rt-0001')
        assert.equal((await claim('reserve-rt-0001')).jobId, jobId)
        clock.advance(15_001)
      }
      assert.deepEqual(await steps(), { counted: BUDGET, reserved: BUDGET - 37 })
      await hub.ctx.compute.reap()
      const read = await state(jobId)
      assert.equal((read.error as Body).code, 'compute_runtime_lost')
      assert.deepEqual(await steps(), { counted: 37, reserved: 0 })
      await hub.ctx.compute.reap()
      assert.deepEqual(await steps(), { counted: 37, reserved: 0 })
    })

    test('a job whose runtime is gone gives its steps back as it fails', async () => {
      await beat('reserve-rt-0003')
      const jobId = await submit()
      assert.equal((await claim('reserve-rt-0003')).jobId, jobId)
      await ask(runtime, 'DELETE', '/v1/compute/runtimes/reserve-rt-0003')
      clock.advance(120_000)
      await hub.ctx.compute.reap()
      const read = await state(jobId)
      assert.equal((read.error as Body).code, 'compute_unavailable')
      assert.deepEqual(await steps(), { counted: 37, reserved: 0 })
    })
  })

  describe(`a claim takes the oldest job this runtime may run (${store.name})`, () => {
    const BUDGET = 100
    let hub: TestHub
    let alice: SignedClient
    let bob: SignedClient
    let runtime: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
        BATON_COMPUTE_MAX_ATTEMPTS: '2',
        BATON_QUOTA_COMPUTE_CONCURRENT: '30',
        BATON_QUOTA_COMPUTE_STEPS_PER_DAY: String(BUDGET),
      })
      alice = await signedAgent(hub)
      bob = await signedAgent(hub)
      runtime = await signedAgent(hub)
      await ask(runtime, 'POST', '/v1/compute/runtimes', {
        runtimeId: 'claims-rt-0001',
        languages: ['json-expr-v1'],
      })
    })
    after(() => hub.close())

    const submit = async (who: SignedClient) => {
      const res = await ask(who, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 2 },
        idempotencyKey: key(),
      })
      assert.equal(res.status, 201)
      return res.body.jobId as string
    }
    const claim = async () => {
      await ask(runtime, 'POST', '/v1/compute/runtimes', {
        runtimeId: 'claims-rt-0001',
        languages: ['json-expr-v1'],
      })
      const res = await ask(runtime, 'POST', '/v1/compute/runtimes/claims-rt-0001/claim')
      assert.equal(res.status, 200)
      return res.body.job as Body | null
    }
    const finish = (job: Body) =>
      ask(runtime, 'POST', `/v1/compute/jobs/${job.jobId}/result`, {
        leaseId: job.leaseId,
        ok: true,
        output: 3,
        steps: 1,
      })

    test('20 queued jobs of a language the runtime does not serve do not hold one it serves', async () => {
      const db = hub.ctx.database.db
      const template = await db
        .selectFrom('compute_jobs')
        .selectAll()
        .where('id', '=', await submit(alice))
        .executeTakeFirstOrThrow()
      await db.deleteFrom('compute_jobs').where('id', '=', template.id).execute()
      // written as a hub that accepted another language would have left them, all older
      for (let i = 0; i < 20; i++) {
        await db
          .insertInto('compute_jobs')
          .values({
            ...template,
            id: `cj_other-language-job-${String(i).padStart(3, '0')}`,
            idempotency_key: `other-${i}`,
            language: 'other-lang-v1',
            created_at: template.created_at - 1000 + i,
            updated_at: template.created_at - 1000 + i,
          })
          .execute()
      }
      const servable = await submit(bob)
      const job = await claim()
      assert.equal(job?.jobId, servable)
      await finish(job!)
      await db.deleteFrom('compute_jobs').where('language', '=', 'other-lang-v1').execute()
    })

    test("an owner's jobs waiting for steps do not hold another owner's job", async () => {
      const first = await submit(alice)
      const waiting: string[] = []
      for (let i = 0; i < 10; i++) waiting.push(await submit(alice))
      // alice's first job reserves all her steps of the day: her next ten wait for what it leaves
      const running = await claim()
      assert.equal(running?.jobId, first)
      const theirs = await submit(bob)
      const next = await claim()
      assert.equal(next?.jobId, theirs)
      await finish(next!)
      // alice's unused steps come back with her result; her oldest waiting job runs next
      await finish(running!)
      const hers = await claim()
      assert.equal(hers?.jobId, waiting[0])
      await finish(hers!)
      for (const id of waiting.slice(1)) await ask(alice, 'POST', `/v1/compute/jobs/${id}/cancel`)
    })

    test('jobs claimed as often as allowed, waiting for the reaper, do not hold a fresh one', async () => {
      const db = hub.ctx.database.db
      const lost: string[] = []
      for (let i = 0; i < 10; i++) lost.push(await submit(alice))
      // every claim of these ten ran out: the reaper fails them, no runtime is offered them
      await db
        .updateTable('compute_jobs')
        .set({ state: 'running', attempts: 2, lease_id: 'gone', lease_until: 1 })
        .where('id', 'in', lost)
        .execute()
      const fresh = await submit(bob)
      const job = await claim()
      assert.equal(job?.jobId, fresh)
      await finish(job!)
      await hub.ctx.compute.reap()
      const states = await db
        .selectFrom('compute_jobs')
        .select(['state', 'error_code'])
        .where('id', 'in', lost)
        .execute()
      assert.ok(
        states.every((s) => s.state === 'failed' && s.error_code === 'compute_runtime_lost'),
      )
    })
  })
}

const postgres = onPostgres.store!
// Many instances share one PostgreSQL database; SQLite is the single-instance store by design.
describe('concurrent claims on two hub instances never take the same job', {
  skip: onPostgres.skip,
}, () => {
  let a: RunningHub
  let b: RunningHub
  let drop: () => Promise<void>
  before(async () => {
    const db = await postgres.fresh()
    drop = db.drop
    const config = loadConfig({
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      ...TEST_ADDRESS_LIMITS,
      BATON_COMPUTE_RUNTIMES: '*',
      BATON_QUOTA_COMPUTE_CONCURRENT: '40',
      ...db.env,
    })
    a = await startHub(config, { log: pino({ level: 'silent' }) })
    b = await startHub(config, { log: pino({ level: 'silent' }) })
  })
  after(async () => {
    await a.stop()
    await b.stop()
    await drop()
  })

  test('24 jobs, 8 runtimes claiming at once across both: each job claimed once', async () => {
    const owner = 'did:key:z6MkClaimOwnerForTwoInstances'
    const runtimes = Array.from({ length: 8 }, (_, i) => `two-instances-rt-${i}`)
    const hubs = (i: number) => (i % 2 === 0 ? a : b)
    for (const [i, id] of runtimes.entries()) {
      await hubs(i).ctx.compute.heartbeat(`did:key:z6MkRuntime${i}`, {
        runtimeId: id,
        languages: ['json-expr-v1'],
      })
    }
    const jobs = new Set<string>()
    for (let i = 0; i < 24; i++) {
      const view = await a.ctx.compute.submit(owner, {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: i, b: 1 },
        idempotencyKey: `two-instances-${i}`,
      })
      jobs.add(view.jobId)
    }
    const taken: string[] = []
    for (let round = 0; round < 24 && taken.length < 24; round++) {
      const claims = await Promise.all(
        runtimes.map((id, i) => hubs(i).ctx.compute.claim(`did:key:z6MkRuntime${i}`, id)),
      )
      for (const c of claims) if (c) taken.push(c.jobId)
    }
    assert.equal(taken.length, 24)
    assert.equal(new Set(taken).size, 24)
    assert.deepEqual(new Set(taken), jobs)
  })
})

for (const store of testStores) {
  describe(`compute claims are fair across principals (${store.name})`, () => {
    let hub: TestHub
    let alice: SignedClient
    let bob: SignedClient
    let runtime: SignedClient
    const clock = new ManualClock(Date.UTC(2026, 11, 2, 10))
    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_COMPUTE_EMBEDDED: 'false', BATON_COMPUTE_RUNTIMES: '*' },
        { clock },
      )
      alice = await signedAgent(hub, { clock })
      bob = await signedAgent(hub, { clock })
      runtime = await signedAgent(hub, { clock })
    })
    after(() => hub.close())

    const submit = async (who: SignedClient) => {
      clock.advance(1)
      const res = await ask(who, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 2 },
        idempotencyKey: key(),
      })
      assert.equal(res.status, 201)
      return res.body.jobId as string
    }
    const claim = async () => {
      const res = await ask(runtime, 'POST', '/v1/compute/runtimes/fair-rt-0001/claim')
      assert.equal(res.status, 200)
      return (res.body.job as Body | null)?.jobId
    }

    test("a principal with nothing running is served before another principal's queue", async () => {
      const beat = await ask(runtime, 'POST', '/v1/compute/runtimes', {
        runtimeId: 'fair-rt-0001',
        languages: ['json-expr-v1'],
      })
      assert.equal(beat.status, 200)
      const queue = [await submit(alice), await submit(alice), await submit(alice)]
      assert.equal(await claim(), queue[0])
      // Bob's one job came after Alice's queue, but Bob has nothing running: it goes next.
      const bobs = await submit(bob)
      assert.equal(await claim(), bobs)
      // Then the oldest again, each of them with a job running.
      assert.equal(await claim(), queue[1])
      assert.equal(await claim(), queue[2])
      assert.equal(await claim(), undefined)
    })
  })
}
