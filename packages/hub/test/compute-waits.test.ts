import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import type { ComputeJobWaitView } from '@baton/protocol'
import { countStatements } from '../src/store/transaction.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

type Body = Record<string, unknown>

for (const store of testStores) {
  describe(`compute job waits share one read per change (${store.name})`, () => {
    let hub: TestHub
    let alice: SignedClient
    let bob: SignedClient
    let runtime: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
        BATON_WAIT_MAX_PER_TOPIC: '1000',
      })
      alice = await signedAgent(hub)
      bob = await signedAgent(hub)
      runtime = await signedAgent(hub)
    })
    after(() => hub.close())

    test('100 waiters joining one by one and woken by a cancel cost a bounded number of reads', async () => {
      const counts = countStatements(hub.ctx.database)
      // A live runtime that never claims: the job stays queued while it is waited on.
      const beat = await runtime.request('POST', '/v1/compute/runtimes', {
        runtimeId: 'waits-rt-idle',
        languages: ['json-expr-v1'],
      })
      assert.equal(beat.status, 200)
      const sub = await alice.request<Body>('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { '+': [1, 2] },
        idempotencyKey: 'compute-waits-1',
      })
      assert.equal(sub.status, 201)
      const id = sub.body!.jobId as string
      const owner = alice.identity.principal

      // A stranger's wait is refused like a missing job, and takes no slot.
      await assert.rejects(hub.ctx.compute.wait(bob.identity.principal, id, 20), {
        code: 'compute_job_not_found',
      })

      const readsBefore = hub.ctx.waits.reads
      const statementsBefore = counts.statements
      const waits: Promise<ComputeJobWaitView>[] = []
      for (let i = 0; i < 100; i++) {
        waits.push(hub.ctx.compute.wait(owner, id, 20))
        while (hub.ctx.waits.waiting < i + 1) await new Promise((r) => setImmediate(r))
      }
      // The first waiter reads the job; the others join that read, nothing having changed.
      assert.ok(
        hub.ctx.waits.reads - readsBefore <= 2,
        `reads ${hub.ctx.waits.reads - readsBefore}`,
      )
      assert.ok(counts.statements - statementsBefore <= 4, 'joining waiters read nothing')

      const canceled = await alice.request<Body>('POST', `/v1/compute/jobs/${id}/cancel`)
      assert.equal(canceled.body!.state, 'canceled')
      const answers = await Promise.all(waits)
      for (const a of answers) {
        assert.equal(a.state, 'canceled')
        assert.equal(a.version, canceled.body!.version)
        assert.equal(a.changed, true)
      }
      assert.ok(
        hub.ctx.waits.reads - readsBefore <= 4,
        `reads ${hub.ctx.waits.reads - readsBefore}`,
      )
    })
  })
}
