import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type SignedClient, signedFetch } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ManualClock } from '../src/clock.js'
import { call, signedAgent, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

type Body = Record<string, unknown> & { code?: string }
const PROGRAM = { '+': [{ var: 'a' }, { var: 'b' }] }
let keys = 0
const key = () => `job-key-${++keys}-${Date.now()}`

async function ask(who: SignedClient, method: string, path: string, body?: unknown) {
  const res = await who.request<Body>(method, path, body as object)
  return { status: res.status, body: res.body ?? ({} as Body), headers: res.headers }
}

async function waitEnded(who: SignedClient, jobId: string): Promise<Body> {
  for (;;) {
    const res = await ask(who, 'GET', `/v1/compute/jobs/${jobId}/wait/5`)
    assert.equal(res.status, 200)
    if (['succeeded', 'failed', 'canceled'].includes(res.body.state as string)) return res.body
  }
}

for (const store of testStores) {
  describe(`compute jobs on the embedded runtime (${store.name})`, () => {
    let hub: TestHub
    let alice: SignedClient
    let bob: SignedClient
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_COMPUTE_EMBEDDED: 'true' })
      alice = await signedAgent(hub)
      bob = await signedAgent(hub)
    })
    after(() => hub.close())

    test('discovery shows json-expr-v1 available on the embedded runtime', async () => {
      const res = await call(hub, 'GET', '/.well-known/agent-net')
      const ra = res.body.runtimeAvailability as {
        ready: boolean
        available: { language: string; workers: number }[]
        supported: string[]
      }
      assert.equal(ra.ready, true)
      assert.deepEqual(ra.supported, ['json-expr-v1'])
      assert.equal(ra.available[0]?.language, 'json-expr-v1')
      assert.equal(ra.available[0]?.workers, 1)
    })

    test('a job runs to succeeded with its output; a repeat answers the same job', async () => {
      const body = {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 2, b: 3 },
        idempotencyKey: key(),
      }
      const sub = await ask(alice, 'POST', '/v1/compute/jobs', body)
      assert.equal(sub.status, 201)
      assert.equal(sub.body.state, 'queued')
      const done = await waitEnded(alice, sub.body.jobId as string)
      assert.equal(done.state, 'succeeded')
      assert.equal(done.output, 5)
      assert.equal(done.attempts, 1)
      const again = await ask(alice, 'POST', '/v1/compute/jobs', body)
      assert.equal(again.body.jobId, sub.body.jobId)
      assert.equal(again.body.repeated, true)
      const other = await ask(alice, 'POST', '/v1/compute/jobs', { ...body, input: { a: 1, b: 1 } })
      assert.equal(other.status, 409)
      assert.equal(other.body.code, 'idempotency_conflict')
      // another principal's job answers exactly like a missing one
      const peek = await ask(bob, 'GET', `/v1/compute/jobs/${sub.body.jobId}`)
      assert.equal(peek.status, 404)
      assert.equal(peek.body.code, 'compute_job_not_found')
    })

    test('a failing program ends failed with its bound code', async () => {
      const loop = { reduce: [{ var: 'xs' }, { cat: [{ var: 'accumulator' }, 'xx'] }, ''] }
      const xs = Array.from({ length: 15_000 }, (_, i) => i)
      const sub = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: loop,
        input: { xs },
        idempotencyKey: key(),
      })
      assert.equal(sub.status, 201)
      const done = await waitEnded(alice, sub.body.jobId as string)
      assert.equal(done.state, 'failed')
      assert.equal((done.error as Body).code, 'compute_steps_exceeded')
      // a failed job tells the steps it used, so its reservation settles to them
      assert.ok((done.steps as number) > 0)
    })

    test('a job that fails while it runs reports the steps it used', async () => {
      // builds a string past maxStringLength after some work
      const sub = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { cat: [{ var: 's' }, { var: 's' }, { var: 's' }] },
        input: { s: 'x'.repeat(30_000) },
        idempotencyKey: key(),
      })
      const done = await waitEnded(alice, sub.body.jobId as string)
      assert.equal((done.error as Body).code, 'compute_string_too_long')
      assert.ok((done.steps as number) > 0)
    })

    test('a program or input nested past the JSON guard answers compute_depth_exceeded', async () => {
      const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)])
      for (const [body, where] of [
        [{ program: deep(300), input: null }, 'program'],
        [{ program: 1, input: { a: deep(300) } }, 'input'],
        // just past the guard: the body is one level deeper than its program
        [{ program: deep(128), input: null }, 'program'],
      ] as const) {
        const res = await ask(alice, 'POST', '/v1/compute/jobs', {
          language: 'json-expr-v1',
          ...body,
          idempotencyKey: key(),
        })
        assert.equal(res.status, 422)
        assert.equal(res.body.code, 'compute_depth_exceeded')
        assert.equal(res.body.where, where)
        assert.equal(res.body.limit, 64)
      }
      // The MCP tool answers the same, over the real MCP SDK client on a signed session.
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
          fetch: signedFetch(alice.identity),
        }),
      )
      try {
        for (const [args, where] of [
          [{ program: deep(300), input: null }, 'program'],
          [{ program: 1, input: { a: deep(300) } }, 'input'],
          // the arguments sit three levels into the JSON-RPC body
          [{ program: deep(126), input: null }, 'program'],
        ] as const) {
          const answer = toolAnswer(
            await client.callTool({
              name: 'submit_compute_job',
              arguments: { language: 'json-expr-v1', ...args, idempotencyKey: key() },
            }),
          )
          assert.equal(answer.isError, true)
          assert.equal(answer.body.code, 'compute_depth_exceeded')
          assert.equal(answer.body.where, where)
          assert.equal(answer.body.limit, 64)
        }
        // The session goes on: the next call is answered as usual.
        const listed = toolAnswer(
          await client.callTool({ name: 'list_compute_jobs', arguments: {} }),
        )
        assert.equal(listed.isError, false)
        // Another tool's deep arguments keep the guard's answer, a refusal of the request.
        await assert.rejects(
          client.callTool({
            name: 'create_resource',
            arguments: { namespace: 'compute-test', kind: 'deep/v1', data: deep(300) },
          }),
        )
      } finally {
        await client.close()
      }
      // other routes keep the guard's answer
      const other = await ask(alice, 'POST', '/v1/resources', {
        namespace: 'compute-test',
        kind: 'deep/v1',
        data: deep(300),
      })
      assert.equal(other.status, 400)
      assert.equal(other.body.code, 'invalid_request')
    })

    test('bad programs and unknown languages are refused and store nothing', async () => {
      const bad = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { eval: ['x'] },
        input: null,
        idempotencyKey: key(),
      })
      assert.equal(bad.status, 400)
      assert.equal(bad.body.code, 'compute_invalid_program')
      const py = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'python-3',
        program: 'print(1)',
        idempotencyKey: key(),
      })
      assert.equal(py.status, 400)
      assert.equal(py.body.code, 'compute_language_unsupported')
      const list = await ask(alice, 'GET', '/v1/compute/jobs')
      assert.equal(
        (list.body.jobs as Body[]).every((j) => j.state !== 'queued'),
        true,
      )
    })

    test('the output is written into a resource at its expected version, once', async () => {
      const made = await ask(alice, 'POST', '/v1/resources', {
        namespace: 'compute-test',
        kind: 'result/v1',
        data: { pending: true },
      })
      assert.equal(made.status, 201)
      const resourceId = made.body.id as string
      const sub = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { merge: [{ var: 'xs' }, [9]] },
        input: { xs: [1, 2] },
        idempotencyKey: key(),
        output: { resourceId, expectedVersion: 1 },
      })
      const done = await waitEnded(alice, sub.body.jobId as string)
      assert.equal(done.state, 'succeeded')
      assert.deepEqual(done.outputResource, { resourceId, expectedVersion: 1, version: 2 })
      const read = await ask(alice, 'GET', `/v1/resources/${resourceId}`)
      assert.equal(read.body.version, 2)
      assert.deepEqual(read.body.data, [1, 2, 9])
      // a stale expected version ends the job failed with the resource's conflict
      const stale = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: 1,
        idempotencyKey: key(),
        output: { resourceId, expectedVersion: 1 },
      })
      const failed = await waitEnded(alice, stale.body.jobId as string)
      assert.equal(failed.state, 'failed')
      assert.equal((failed.error as Body).code, 'version_conflict')
      assert.equal((await ask(alice, 'GET', `/v1/resources/${resourceId}`)).body.version, 2)
      // a resource the caller may not update is refused at submit
      const theirs = await ask(bob, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: 1,
        idempotencyKey: key(),
        output: { resourceId, expectedVersion: 2 },
      })
      assert.equal(theirs.body.code, 'resource_forbidden')
      // the input may come from a resource the caller may read
      const fromResource = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: {
          reduce: [{ var: '' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0],
        },
        inputResourceId: resourceId,
        idempotencyKey: key(),
      })
      assert.equal((await waitEnded(alice, fromResource.body.jobId as string)).output, 12)
    })
  })

  describe(`compute jobs without a live runtime, and remote leases (${store.name})`, () => {
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
          BATON_QUOTA_COMPUTE_CONCURRENT: '2',
          BATON_COMPUTE_MAX_ATTEMPTS: '2',
        },
        { clock },
      )
      alice = await signedAgent(hub, { clock })
      runtime = await signedAgent(hub, { clock })
    })
    after(() => hub.close())
    const submit = (k = key()) =>
      ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 2 },
        idempotencyKey: k,
      })
    const beat = (id: string) =>
      ask(runtime, 'POST', '/v1/compute/runtimes', { runtimeId: id, languages: ['json-expr-v1'] })

    test('no live runtime: refused with compute_unavailable and the availability', async () => {
      const res = await submit()
      assert.equal(res.status, 503)
      assert.equal(res.body.code, 'compute_unavailable')
      assert.equal((res.body.runtimeAvailability as Body).ready, false)
      const disc = await call(hub, 'GET', '/.well-known/agent-net')
      assert.deepEqual(disc.body.runtimeAvailability, {
        ready: false,
        available: [],
        supported: ['json-expr-v1'],
      })
    })

    test('availability follows heartbeats: live on a beat, gone after its TTL or a stop', async () => {
      assert.equal((await beat('runtime-one-0001')).status, 200)
      let disc = await call(hub, 'GET', '/.well-known/agent-net')
      assert.equal((disc.body.runtimeAvailability as Body).ready, true)
      clock.advance(10_001)
      disc = await call(hub, 'GET', '/.well-known/agent-net')
      assert.equal((disc.body.runtimeAvailability as Body).ready, false)
      await beat('runtime-one-0001')
      const stopped = await ask(runtime, 'DELETE', '/v1/compute/runtimes/runtime-one-0001')
      assert.equal(stopped.body.stopped, true)
      disc = await call(hub, 'GET', '/.well-known/agent-net')
      assert.equal((disc.body.runtimeAvailability as Body).ready, false)
    })

    test('a lost lease is reclaimed; the stale result is refused; the job ends once', async () => {
      await beat('runtime-one-0001')
      await beat('runtime-two-0002')
      const sub = await submit()
      assert.equal(sub.status, 201)
      const jobId = sub.body.jobId as string
      const first = await ask(runtime, 'POST', '/v1/compute/runtimes/runtime-one-0001/claim')
      const claimed = first.body.job as Body
      assert.equal(claimed.jobId, jobId)
      const none = await ask(runtime, 'POST', '/v1/compute/runtimes/runtime-two-0002/claim')
      assert.equal(none.body.job, null)
      // runtime one goes silent past its lease; runtime two reclaims the job
      clock.advance(15_001)
      await beat('runtime-two-0002')
      const second = await ask(runtime, 'POST', '/v1/compute/runtimes/runtime-two-0002/claim')
      const reclaimed = second.body.job as Body
      assert.equal(reclaimed.jobId, jobId)
      assert.notEqual(reclaimed.leaseId, claimed.leaseId)
      const late = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: claimed.leaseId,
        ok: true,
        output: 'stale',
      })
      assert.equal(late.status, 409)
      assert.equal(late.body.code, 'compute_lease_lost')
      const renew = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/lease`, {
        leaseId: claimed.leaseId,
      })
      assert.equal(renew.body.code, 'compute_lease_lost')
      const ok = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: reclaimed.leaseId,
        ok: true,
        output: 3,
        steps: 4,
      })
      assert.equal(ok.status, 200)
      assert.equal(ok.body.state, 'succeeded')
      const again = await ask(runtime, 'POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: reclaimed.leaseId,
        ok: true,
        output: 4,
      })
      assert.equal(again.body.code, 'compute_lease_lost')
      const read = await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(read.body.output, 3)
      assert.equal(read.body.attempts, 2)
    })

    test('a job every runtime lost fails with compute_runtime_lost', async () => {
      await beat('runtime-one-0001')
      const sub = await submit()
      const jobId = sub.body.jobId as string
      for (let i = 0; i < 2; i++) {
        await beat('runtime-one-0001')
        const c = await ask(runtime, 'POST', '/v1/compute/runtimes/runtime-one-0001/claim')
        assert.equal((c.body.job as Body).jobId, jobId)
        clock.advance(15_001)
      }
      await hub.ctx.compute.reap()
      const read = await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(read.body.state, 'failed')
      assert.equal((read.body.error as Body).code, 'compute_runtime_lost')
    })

    test('concurrent jobs are capped per principal (429 with Retry-After); cancel frees one', async () => {
      await beat('runtime-one-0001')
      const a = await submit()
      const b = await submit()
      assert.equal(b.status, 201)
      const c = await submit()
      assert.equal(c.status, 429)
      assert.equal(c.body.code, 'rate_limited')
      assert.equal(c.headers.get('retry-after'), '1')
      const canceled = await ask(alice, 'POST', `/v1/compute/jobs/${a.body.jobId}/cancel`)
      assert.equal(canceled.body.state, 'canceled')
      const d = await submit()
      assert.equal(d.status, 201)
      await ask(alice, 'POST', `/v1/compute/jobs/${b.body.jobId}/cancel`)
      await ask(alice, 'POST', `/v1/compute/jobs/${d.body.jobId}/cancel`)
    })

    test('a queued job whose runtimes all stopped fails with compute_unavailable after the grace', async () => {
      await beat('runtime-three-0003')
      const sub = await submit()
      assert.equal(sub.status, 201)
      const jobId = sub.body.jobId as string
      await ask(runtime, 'DELETE', '/v1/compute/runtimes/runtime-three-0003')
      // within the grace (60 s by default) since a runtime was last live, the job keeps waiting
      clock.advance(30_000)
      await hub.ctx.compute.reap()
      assert.equal((await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)).body.state, 'queued')
      clock.advance(41_000)
      await hub.ctx.compute.reap()
      const read = await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(read.body.state, 'failed')
      assert.equal((read.body.error as Body).code, 'compute_unavailable')
      assert.equal(read.body.attempts, 0)
      const waited = await ask(alice, 'GET', `/v1/compute/jobs/${jobId}/wait/0`)
      assert.equal(waited.body.state, 'failed')
    })

    test('a claimed job whose runtime died waits while a runtime lives, then fails', async () => {
      await beat('runtime-four-0004')
      const sub = await submit()
      const jobId = sub.body.jobId as string
      const c = await ask(runtime, 'POST', '/v1/compute/runtimes/runtime-four-0004/claim')
      assert.equal((c.body.job as Body).jobId, jobId)
      // runtime four dies mid-job; runtime five stays live (it may reclaim the job), so it waits
      for (let i = 0; i < 10; i++) {
        await beat('runtime-five-0005')
        clock.advance(9_000)
        await hub.ctx.compute.reap()
      }
      assert.equal((await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)).body.state, 'running')
      await ask(runtime, 'DELETE', '/v1/compute/runtimes/runtime-five-0005')
      clock.advance(60_001)
      await hub.ctx.compute.reap()
      const read = await ask(alice, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(read.body.state, 'failed')
      assert.equal((read.body.error as Body).code, 'compute_unavailable')
      assert.equal(read.body.attempts, 1)
      // its active slot is free again: two jobs may be queued at once
      await beat('runtime-five-0005')
      const a = await submit()
      const b = await submit()
      assert.equal(a.status, 201)
      assert.equal(b.status, 201)
      await ask(alice, 'POST', `/v1/compute/jobs/${a.body.jobId}/cancel`)
      await ask(alice, 'POST', `/v1/compute/jobs/${b.body.jobId}/cancel`)
    })

    test('a runtime may not advertise a language the hub does not accept', async () => {
      const res = await ask(runtime, 'POST', '/v1/compute/runtimes', {
        runtimeId: 'runtime-py-0003',
        languages: ['python-3'],
      })
      assert.equal(res.status, 400)
      assert.equal(res.body.code, 'compute_language_unsupported')
    })
  })
}

describe('remote compute runtimes are opt-in', () => {
  let hub: TestHub
  before(async () => {
    hub = await startTestHub(testStores[0]!, {
      BATON_ADMISSION: 'open',
      BATON_COMPUTE_EMBEDDED: 'true',
    })
  })
  after(() => hub.close())

  test('without BATON_COMPUTE_RUNTIMES an admitted principal may not serve compute', async () => {
    const stranger = await signedAgent(hub)
    const beat = await ask(stranger, 'POST', '/v1/compute/runtimes', {
      runtimeId: 'runtime-stranger-01',
      languages: ['json-expr-v1'],
    })
    assert.equal(beat.status, 403)
    assert.equal(beat.body.code, 'compute_runtime_forbidden')
    const claim = await ask(stranger, 'POST', '/v1/compute/runtimes/runtime-stranger-01/claim')
    assert.equal(claim.body.code, 'compute_runtime_forbidden')
  })
})

for (const store of testStores) {
  describe(`the compute steps quota never overshoots (${store.name})`, () => {
    const BUDGET = 100
    let hub: TestHub
    let alice: SignedClient
    let runtime: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
        BATON_QUOTA_COMPUTE_STEPS_PER_DAY: String(BUDGET),
      })
      alice = await signedAgent(hub)
      runtime = await signedAgent(hub)
    })
    after(() => hub.close())

    const counted = async () => {
      const row = await hub.ctx.database.db
        .selectFrom('quota_counters')
        .select('count')
        .where('scope', '=', 'compute_steps')
        .where('subject', '=', alice.identity.principal)
        .executeTakeFirst()
      return Number(row?.count ?? 0)
    }

    test('concurrent claims together reserve at most the daily steps; unused steps come back', async () => {
      const runtimes = ['quota-rt-0001', 'quota-rt-0002', 'quota-rt-0003']
      for (const id of runtimes) {
        await ask(runtime, 'POST', '/v1/compute/runtimes', {
          runtimeId: id,
          languages: ['json-expr-v1'],
        })
      }
      const jobs: string[] = []
      for (let i = 0; i < 6; i++) {
        const sub = await ask(alice, 'POST', '/v1/compute/jobs', {
          language: 'json-expr-v1',
          program: PROGRAM,
          input: { a: i, b: 1 },
          idempotencyKey: key(),
        })
        assert.equal(sub.status, 201)
        jobs.push(sub.body.jobId as string)
      }
      let given = 0
      for (let round = 0; round < 10; round++) {
        const claims = await Promise.all(
          runtimes.map((id) => ask(runtime, 'POST', `/v1/compute/runtimes/${id}/claim`)),
        )
        const claimed = claims.map((c) => c.body.job as Body | null).filter((j) => j !== null)
        const granted = claimed.reduce((n, j) => n + (j.maxSteps as number), 0)
        assert.ok(granted <= BUDGET, `round ${round} granted ${granted}`)
        assert.ok((await counted()) <= BUDGET)
        if (claimed.length === 0) break
        given += claimed.length
        // every job uses 30 steps or all it was given, whichever is fewer
        await Promise.all(
          claimed.map((j) =>
            ask(runtime, 'POST', `/v1/compute/jobs/${j.jobId}/result`, {
              leaseId: j.leaseId,
              ok: true,
              output: 1,
              steps: Math.min(30, j.maxSteps as number),
            }),
          ),
        )
        assert.ok((await counted()) <= BUDGET)
      }
      const states = await Promise.all(
        jobs.map(async (id) => (await ask(alice, 'GET', `/v1/compute/jobs/${id}`)).body),
      )
      // 30 + 30 + 30 + 10 steps: four jobs ran, the rest found the day's steps used up
      assert.equal(given, 4)
      assert.equal(states.filter((j) => j.state === 'succeeded').length, 4)
      const refused = states.filter((j) => j.state === 'failed')
      assert.equal(refused.length, 2)
      for (const j of refused) assert.equal((j.error as Body).code, 'rate_limited')
      assert.equal(await counted(), BUDGET)
      const more = await ask(alice, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 1 },
        idempotencyKey: key(),
      })
      assert.equal(more.status, 429)
      assert.equal(more.body.code, 'rate_limited')
    })
  })
}
