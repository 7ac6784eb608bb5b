import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient, saveIdentity } from '@baton/client'
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import {
  batonBin,
  exited,
  repoRoot,
  startTestHub,
  TEST_ADDRESS_LIMITS,
  type TestHub,
  testStores,
} from './support.js'

type Body = Record<string, unknown> & { code?: string }
const LIVE = {
  BATON_ADMISSION: 'open',
  BATON_COMPUTE_EMBEDDED: 'false',
  BATON_COMPUTE_RUNTIMES: '*',
  BATON_COMPUTE_RUNTIME_TTL_SECONDS: '2',
  BATON_COMPUTE_LEASE_SECONDS: '2',
}
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
const PROGRAM = { map: [{ var: 'xs' }, { '*': [{ var: '' }, 10] }] }
let n = 0
const key = () => `e2e-key-${process.pid}-${++n}`

async function ask(who: SignedClient, method: string, p: string, body?: unknown) {
  const res = await who.request<Body>(method, p, body as object)
  return { status: res.status, body: res.body ?? ({} as Body) }
}

async function availability(url: string): Promise<{ ready: boolean }> {
  const res = await fetch(`${url}/.well-known/agent-net`)
  return ((await res.json()) as { runtimeAvailability: { ready: boolean } }).runtimeAvailability
}

/** Polls discovery (a real process starts and stops on its own time) until `ready` is `want`. */
async function untilReady(url: string, want: boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while ((await availability(url)).ready !== want) {
    if (Date.now() > deadline) throw new Error(`runtimeAvailability.ready never became ${want}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function waitEnded(who: SignedClient, jobId: string): Promise<Body> {
  for (;;) {
    const res = await ask(who, 'GET', `/v1/compute/jobs/${jobId}/wait/5`)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    if (['succeeded', 'failed', 'canceled'].includes(res.body.state as string)) return res.body
  }
}

/** Kills every child still running (`exited` waits forever on one already killed by a signal). */
async function stopAll(children: ChildProcess[]): Promise<void> {
  const live = children.filter((c) => c.exitCode === null && c.signalCode === null)
  for (const c of live) c.kill('SIGKILL')
  await Promise.all(live.map(exited))
}

function startRuntime(hubUrl: string, identityFile: string, log: string[]): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      batonBin,
      'runtime',
      '--hub',
      hubUrl,
      '--identity',
      identityFile,
      '--compute',
      'json-expr-v1',
      '--workers',
      '1',
      '--heartbeat-interval',
      '300',
      '--renew-interval',
      '500',
      '--poll-interval',
      '100',
    ],
    { cwd: repoRoot, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  child.stderr?.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)))
  return child
}

/**
 * A loopback proxy in front of a hub that, once armed, holds the next job result instead of
 * passing it on: the runtime has claimed and evaluated the job but the hub has not heard the result, so
 * killing the runtime then is killing it mid-job, without any timing.
 */
async function resultHoldingProxy() {
  let target = ''
  let armed = false
  const held: { path: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = []
  let onHeld: () => void = () => {}
  const forward = (method: string, p: string, headers: http.IncomingHttpHeaders, body: Buffer) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
      (resolve, reject) => {
        const out = http.request(`${target}${p}`, { method, headers }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
            }),
          )
        })
        out.on('error', reject)
        out.end(body)
      },
    )
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (armed && req.method === 'POST' && /\/v1\/compute\/jobs\/[^/]+\/result$/.test(req.url!)) {
        // one result is held; the runtime that reclaims the job gets through
        armed = false
        held.push({ path: req.url!, headers: req.headers, body })
        onHeld()
        return
      }
      forward(req.method!, req.url!, req.headers, body).then(
        (answer) => {
          res.writeHead(answer.status, answer.headers)
          res.end(answer.body)
        },
        () => res.destroy(),
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    held,
    setTarget: (t: string) => {
      target = t
    },
    arm: () => {
      armed = true
      return new Promise<void>((r) => {
        onHeld = r
      })
    },
    /** Sends a held result on to the hub now and answers the hub's reply. */
    release: async (i: number) => {
      const h = held[i]!
      const a = await forward('POST', h.path, h.headers, h.body)
      return { status: a.status, body: JSON.parse(a.body.toString()) as Body }
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}

for (const store of testStores) {
  describe(`a remote baton runtime (${store.name})`, () => {
    let a: RunningHub
    let b: RunningHub
    let drop: () => Promise<void>
    let dir: string
    const children: ChildProcess[] = []
    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'baton-compute-e2e-'))
      const db = await store.fresh()
      drop = db.drop
      const config = loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        ...TEST_ADDRESS_LIMITS,
        ...db.env,
        ...LIVE,
      })
      a = await startHub(config, { log: pino({ level: 'silent' }) })
      // Two instances share PostgreSQL; SQLite is one instance's file, so there b is a.
      b = store.name === 'postgres' ? await startHub(config, { log: pino({ level: 'silent' }) }) : a
    })
    after(async () => {
      await stopAll(children)
      if (b !== a) await b.stop()
      await a.stop()
      await drop()
      rmSync(dir, { recursive: true, force: true })
    })

    test('a job submitted on one instance runs on a remote runtime and is read on another; availability follows the runtime', async () => {
      const owner = await SignedClient.connect(
        `${b.url}/.well-known/agent-net`,
        createIdentity(b.url),
      )
      await owner.request('GET', '/v1/me')
      assert.equal((await availability(b.url)).ready, false)
      const refused = await ask(owner, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { xs: [1] },
        idempotencyKey: key(),
      })
      assert.equal(refused.status, 503)
      assert.equal(refused.body.code, 'compute_unavailable')

      const identityFile = path.join(dir, 'runtime.identity.json')
      await saveIdentity(identityFile, createIdentity(`${a.url}/.well-known/agent-net`))
      const log: string[] = []
      const runtime = startRuntime(a.url, identityFile, log)
      children.push(runtime)
      await untilReady(b.url, true)

      const sub = await ask(owner, 'POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { xs: [1, 2, 3] },
        idempotencyKey: key(),
      })
      assert.equal(sub.status, 201, JSON.stringify(sub.body))
      const done = await waitEnded(owner, sub.body.jobId as string)
      assert.equal(done.state, 'succeeded', log.join('\n'))
      assert.deepEqual(done.output, [10, 20, 30])
      assert.equal(done.attempts, 1)

      // A stopped runtime deregisters: availability is false on the other instance at once.
      runtime.kill('SIGTERM')
      assert.equal(await exited(runtime), 0)
      assert.equal((await availability(b.url)).ready, false)
    })
  })

  describe(`a runtime killed mid-job (${store.name})`, () => {
    let hub: TestHub
    let proxy: Awaited<ReturnType<typeof resultHoldingProxy>>
    let dir: string
    const children: ChildProcess[] = []
    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'baton-compute-kill-'))
      proxy = await resultHoldingProxy()
      hub = await startTestHub(store, { ...LIVE, BATON_PUBLIC_URL: proxy.url })
      proxy.setTarget(hub.url)
    })
    after(async () => {
      await stopAll(children)
      await hub.close()
      await proxy.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test('its job is reclaimed after the lease and completes exactly once; the late result is refused', async () => {
      const owner = await SignedClient.connect(
        `${proxy.url}/.well-known/agent-net`,
        createIdentity(proxy.url),
      )
      await owner.request('GET', '/v1/me')
      const identityFile = path.join(dir, 'runtime.identity.json')
      await saveIdentity(identityFile, createIdentity(`${proxy.url}/.well-known/agent-net`))
      const log: string[] = []
      const first = startRuntime(proxy.url, identityFile, log)
      children.push(first)
      await untilReady(proxy.url, true)

      const heldResult = proxy.arm()
      const submitted = await owner.request<Body>(
        'POST',
        '/v1/compute/jobs',
        {
          language: 'json-expr-v1',
          program: PROGRAM,
          input: { xs: [4, 5] },
          idempotencyKey: key(),
        },
        { traceparent: TRACEPARENT, tracestate: 'rojo=1' },
      )
      assert.equal(submitted.status, 201)
      const jobId = submitted.body.jobId as string
      await heldResult
      // The runtime sends its result in the trace of the submit that its claim handed on.
      assert.equal(proxy.held[0]?.headers.traceparent, TRACEPARENT)
      assert.equal(proxy.held[0]?.headers.tracestate, 'rojo=1')
      await stopAll([first])
      const running = await ask(owner, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(running.body.state, 'running')
      assert.equal(running.body.attempts, 1)

      // A killed runtime never deregisters: it drops out of availability when its TTL passes.
      await untilReady(proxy.url, false)
      const second = startRuntime(proxy.url, identityFile, log)
      children.push(second)
      const done = await waitEnded(owner, jobId)
      assert.equal(done.state, 'succeeded', log.join('\n'))
      assert.deepEqual(done.output, [40, 50])
      assert.equal(done.attempts, 2)

      // The dead runtime's result reaches the hub at last: refused, and the job is unchanged.
      const late = await proxy.release(0)
      assert.equal(late.status, 409)
      assert.equal(late.body.code, 'compute_lease_lost')
      const after = await ask(owner, 'GET', `/v1/compute/jobs/${jobId}`)
      assert.equal(after.body.version, done.version)
      assert.deepEqual(after.body.output, [40, 50])
      second.kill('SIGTERM')
      await exited(second)
    })
  })
}
