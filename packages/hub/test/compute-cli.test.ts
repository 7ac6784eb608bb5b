import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ComputeClient, createIdentity, type SignedClient, saveIdentity } from '@baton/client'
import { BatonError } from '@baton/protocol'
import { completionTable } from '../src/cli/completion.js'
import { batonBin, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs the built `baton` bin as a process, with stdin. */
function baton(argv: string[], stdin = ''): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [batonBin, ...argv], (error, stdout, stderr) => {
      const code = error ? (error as { code?: number }).code : 0
      resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
    })
    child.stdin?.end(stdin)
  })
}

let keys = 0
const key = () => `sdk-key-${++keys}-${Date.now()}`
const SUM = { '+': [{ var: 'a' }, { var: 'b' }] }
// Fails on a deterministic bound at once: the merged array is longer than an array may grow.
// Its input of 15,000 items stays under the hub's element bound of a body.
const GROW: Record<string, unknown> = {
  merge: [{ var: 'xs' }, { var: 'xs' }, { var: 'xs' }, { var: 'xs' }, { var: 'xs' }],
}

test('completion offers --wait for compute run', () => {
  assert.ok(completionTable().get('baton compute run')?.includes('--wait'))
})

for (const store of testStores) {
  describe(`baton compute run --wait and the SDK compute client (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    let identity: string
    let alice: SignedClient
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_COMPUTE_EMBEDDED: 'true' })
      dir = mkdtempSync(path.join(tmpdir(), 'baton-compute-cli-'))
      identity = path.join(dir, 'agent.identity.json')
      await saveIdentity(identity, createIdentity(`${hub.url}/.well-known/agent-net`))
      writeFileSync(path.join(dir, 'sum.json'), JSON.stringify(SUM))
      writeFileSync(path.join(dir, 'in.json'), JSON.stringify({ a: 2, b: 40 }))
      writeFileSync(path.join(dir, 'grow.json'), JSON.stringify(GROW))
      alice = await signedAgent(hub)
    })
    after(async () => {
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })
    const signed = () => ['--hub', hub.url, '--identity', identity]

    test('a program file and an input file run to their output, printed as JSON', async () => {
      const run = await baton([
        'compute',
        'run',
        path.join(dir, 'sum.json'),
        '--input',
        path.join(dir, 'in.json'),
        '--wait',
        ...signed(),
      ])
      assert.equal(run.code, 0, run.stderr)
      assert.equal(JSON.parse(run.stdout), 42)
      assert.ok(run.stderr.length > 0)
    })

    test('the input from stdin; --json prints the ended job', async () => {
      const run = await baton(
        [
          'compute',
          'run',
          path.join(dir, 'sum.json'),
          '--input',
          '-',
          '--wait',
          '--json',
          ...signed(),
        ],
        JSON.stringify({ a: 1, b: 1 }),
      )
      assert.equal(run.code, 0, run.stderr)
      const job = JSON.parse(run.stdout)
      assert.equal(job.state, 'succeeded')
      assert.equal(job.output, 2)
    })

    test('a failed job exits 1 with its code', async () => {
      writeFileSync(
        path.join(dir, 'xs.json'),
        JSON.stringify({ xs: Array.from({ length: 15_000 }, (_, i) => i) }),
      )
      const run = await baton([
        'compute',
        'run',
        path.join(dir, 'grow.json'),
        '--input',
        path.join(dir, 'xs.json'),
        '--wait',
        ...signed(),
      ])
      assert.equal(run.code, 1)
      assert.match(run.stderr, /compute_array_too_long/)
    })

    test('without --wait the job is printed as submitted; a bad program is refused', async () => {
      const run = await baton(['compute', 'run', path.join(dir, 'sum.json'), '--json', ...signed()])
      assert.equal(run.code, 0, run.stderr)
      assert.equal(JSON.parse(run.stdout).state, 'queued')
      writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ eval: ['x'] }))
      const bad = await baton(['compute', 'run', path.join(dir, 'bad.json'), '--wait', ...signed()])
      assert.equal(bad.code, 1)
      assert.match(bad.stderr, /compute_invalid_program/)
    })

    test('the SDK: availability, run, submit + wait, get, list and cancel', async () => {
      const compute = new ComputeClient(alice)
      const ra = await compute.availability()
      assert.equal(ra.ready, true)
      assert.deepEqual(
        ra.available.map((a) => a.language),
        ['json-expr-v1'],
      )
      const done = await compute.run({
        language: 'json-expr-v1',
        program: SUM,
        input: { a: 20, b: 22 },
        idempotencyKey: key(),
      })
      assert.equal(done.state, 'succeeded')
      assert.equal(done.output, 42)
      const seen: string[] = []
      const sub = await compute.submit({
        language: 'json-expr-v1',
        program: GROW as never,
        input: { xs: Array.from({ length: 15_000 }, (_, i) => i) },
        idempotencyKey: key(),
      })
      const failed = await compute.wait(sub.jobId, { onChange: (j) => seen.push(j.state) })
      assert.equal(failed.state, 'failed')
      assert.equal(failed.error?.code, 'compute_array_too_long')
      assert.equal(seen.at(-1), 'failed')
      assert.equal((await compute.get(sub.jobId)).state, 'failed')
      assert.ok((await compute.list(10)).some((j) => j.jobId === done.jobId))
      // canceling an ended job answers it as it is
      assert.equal((await compute.cancel(done.jobId)).state, 'succeeded')
      await assert.rejects(
        compute.get('cj_AAAAAAAAAAAAAAAAAAAAAA'),
        (e: unknown) => e instanceof BatonError && e.code === 'compute_job_not_found',
      )
    })
  })
}
