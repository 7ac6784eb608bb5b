import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import {
  batonBin,
  call,
  exited,
  openWaits,
  repoRoot,
  serveProcess,
  startTestHub,
  type TestHub,
  testStores,
  until,
} from './support.js'

const run = promisify(execFile)
const H = '/services/v1/handoff'

interface Outcome {
  status: number
  state: string
  code?: string
}

/** A racer process (fixtures/racer.ts): `ready` once it has said so, and `go` lets it move. */
function racer(args: string[]) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'packages/hub/test/fixtures/racer.ts', ...args],
    {
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  )
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk
  })
  const ended = new Promise<number | null>((resolve) => child.once('close', resolve))
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => {
      if (out.startsWith('ready\n')) resolve()
    })
    void ended.then((code) =>
      reject(new Error(`a racer exited ${code} before it was ready: ${err}`)),
    )
  })
  const outcome = ended.then((code) => {
    assert.equal(code, 0, err)
    return JSON.parse(out.slice('ready\n'.length)) as Outcome
  })
  return { ready, outcome, go: () => child.stdin.end() }
}

for (const store of testStores) {
  describe(`separate processes (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store)
    })
    after(() => hub.close())

    test('eight OS processes racing for one move: one winner, seven 409s naming the winning state', async () => {
      const created = await call(hub, 'POST', H, { body: { payload: { job: 'race' } } })
      const { handoff_id: id, owner_token, receiver_token } = created.body as Record<string, string>
      const targets = ['accepted', 'working', 'done', 'failed']
      const racers = Array.from({ length: 8 }, (_, i) =>
        racer([hub.url, id!, i % 2 ? owner_token! : receiver_token!, targets[i % 4]!, 'offered']),
      )
      // Every racer has started before any moves: they race each other, not their start-up.
      await Promise.all(racers.map((r) => r.ready))
      for (const r of racers) r.go()
      const outcomes = await Promise.all(racers.map((r) => r.outcome))
      const winners = outcomes.filter((o) => o.status === 200)
      const refused = outcomes.filter((o) => o.status === 409)
      assert.equal(winners.length, 1, JSON.stringify(outcomes))
      assert.equal(refused.length, 7)
      for (const r of refused) {
        assert.equal(r.code, 'state_conflict')
        assert.equal(r.state, winners[0]!.state)
      }
    })

    test('the CLI: create, advance, read, a conflict exits 1 with the wire body under --json', async () => {
      const created = await run(
        process.execPath,
        [batonBin, 'handoff', 'create', '--hub', hub.url, '--payload', '{"task":"cli"}', '--json'],
        { cwd: repoRoot },
      )
      const h = JSON.parse(created.stdout) as Record<string, string>
      const moved = await run(
        process.execPath,
        [
          batonBin,
          'handoff',
          'advance',
          h.handoff_id!,
          'accepted',
          '--from',
          'offered',
          '--token',
          h.receiver_token!,
          '--hub',
          hub.url,
          '--json',
        ],
        { cwd: repoRoot },
      )
      assert.equal(JSON.parse(moved.stdout).state, 'accepted')
      const conflict = await run(
        process.execPath,
        [
          batonBin,
          'handoff',
          'advance',
          h.handoff_id!,
          'working',
          '--from',
          'offered',
          '--token',
          h.owner_token!,
          '--hub',
          hub.url,
          '--json',
        ],
        { cwd: repoRoot },
      ).then(
        () => assert.fail('a conflict must exit non-zero'),
        (e: { code: number; stdout: string }) => e,
      )
      assert.equal(conflict.code, 1)
      const body = JSON.parse(conflict.stdout)
      assert.equal(body.code, 'state_conflict')
      assert.equal(body.state, 'accepted')
    })
  })

  describe(`hub process lifecycle (${store.name})`, () => {
    test('a write acknowledged before a crash (SIGKILL) is there after restart', async () => {
      const db = await store.fresh()
      try {
        const first = await serveProcess(db.env)
        const created = await call({ url: first.url }, 'POST', H, { body: { payload: { n: 1 } } })
        const { handoff_id: id, owner_token } = created.body as Record<string, string>
        const moves = await Promise.all(
          ['accepted'].map((to) =>
            call({ url: first.url }, 'POST', `${H}/${id}/${to}`, {
              token: owner_token!,
              body: { from: 'offered', nonce: 'before-crash' },
            }),
          ),
        )
        assert.equal(moves[0]!.status, 200)
        first.child.kill('SIGKILL')
        await exited(first.child)
        const second = await serveProcess(db.env)
        try {
          const read = await call({ url: second.url }, 'GET', `${H}/${id}`, { token: owner_token! })
          assert.equal(read.status, 200)
          assert.equal(read.body.state, 'accepted')
          assert.equal(read.body.version, 2)
          const repeat = await call({ url: second.url }, 'POST', `${H}/${id}/accepted`, {
            token: owner_token!,
            body: { from: 'offered', nonce: 'before-crash' },
          })
          assert.equal(repeat.body.repeated, true, 'the nonce survives the crash too')
        } finally {
          second.child.kill('SIGTERM')
          await exited(second.child)
        }
      } finally {
        await db.drop()
      }
    })

    // The wait is held for an hour: only the shutdown can answer it within the test's minute.
    test('SIGTERM answers waiters at once, then exits 0', { timeout: 60_000 }, async () => {
      const db = await store.fresh()
      try {
        const hubProc = await serveProcess({ ...db.env, BATON_HANDOFF_MAX_WAIT_SECONDS: '3600' })
        const created = await call({ url: hubProc.url }, 'POST', H, { body: { payload: 1 } })
        const { handoff_id: id, owner_token } = created.body as Record<string, string>
        const waiting = call({ url: hubProc.url }, 'GET', `${H}/${id}/wait/3600`, {
          token: owner_token!,
        })
        await until('the hub holds the wait', async () => (await openWaits(hubProc)) === 1)
        hubProc.child.kill('SIGTERM')
        const res = await waiting
        assert.equal(res.status, 200)
        assert.equal(res.body.changed, false)
        assert.equal(await exited(hubProc.child), 0)
      } finally {
        await db.drop()
      }
    })
  })
}
