import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  SignedClient,
  saveIdentity,
  TransferAdminClient,
  TransferClient,
} from '@baton/client'
import type { TransferView } from '@baton/protocol'
import { createLogger } from '../src/log.js'
import { batonBin, repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN = 'transfer-e2e-operator-token-0123456789abcdef'
const fixture = path.join(repoRoot, 'packages/hub/test/fixtures/transfer-agent.mjs')

/** True while the process runs; a zombie (exited, not yet reaped by its reparented init) is not. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return true
  }
}

for (const store of testStores) {
  describe(`session transfer end to end with a real baton runtime (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    const runtimes: ChildProcess[] = []
    /** The hub's request log lines. */
    const requests: { msg?: string; route?: string; method?: string; traceId?: string }[] = []

    before(async () => {
      const sink = new Writable({
        write(chunk, _enc, done) {
          for (const l of String(chunk).split('\n')) if (l) requests.push(JSON.parse(l))
          done()
        },
      })
      hub = await startTestHub(
        store,
        {
          BATON_ADMISSION: 'open',
          BATON_ADMIN_TOKEN: ADMIN,
          BATON_TRANSFER_GRACE_SECONDS: '1',
          BATON_TRANSFER_REAP_INTERVAL_MS: '200',
        },
        { log: createLogger('info', sink) },
      )
      dir = mkdtempSync(path.join(tmpdir(), 'baton-transfer-e2e-'))
    })
    after(async () => {
      for (const rt of runtimes) {
        if (rt.exitCode === null && rt.signalCode === null) {
          rt.kill('SIGTERM')
          await new Promise((r) => rt.once('exit', r))
        }
      }
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })

    function startRuntime(identityFile: string, markers: string, log: string[]): ChildProcess {
      const rt = spawn(
        process.execPath,
        [
          batonBin,
          'runtime',
          '--hub',
          hub.url,
          '--identity',
          identityFile,
          '--tier',
          'standard',
          '--exec',
          `"${process.execPath}" "${fixture}"`,
          '--report-interval',
          '200',
          '--poll-interval',
          '100',
          '--kill-after',
          '1000',
          '--state-dir',
          dir,
        ],
        {
          cwd: repoRoot,
          env: {
            ...process.env,
            TRANSFER_AGENT_MARKERS: markers,
            TRANSFER_AGENT_USAGE_MICROS: '500',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      rt.stderr?.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)))
      rt.stdout?.on('data', (d: Buffer) => log.push(...d.toString().split('\n').filter(Boolean)))
      runtimes.push(rt)
      return rt
    }

    async function until(
      transfers: TransferClient,
      id: string,
      done: (t: TransferView) => boolean,
      ms: number,
    ): Promise<TransferView> {
      const deadline = Date.now() + ms
      let t = await transfers.get(id)
      while (!done(t)) {
        if (Date.now() > deadline) throw new Error(`timed out in state ${t.state}`)
        t = await transfers.wait(id, 2, t.version)
      }
      return t
    }

    test('snapshot → token → provision → runtime pulls and verifies → activate → metered child → insolvent → terminated', async () => {
      const discovery = `${hub.url}/.well-known/agent-net`
      const owner = new TransferClient(
        await SignedClient.connect(discovery, createIdentity(hub.url)),
      )
      const orchestrator = new TransferAdminClient(hub.url, ADMIN)
      const identityFile = path.join(dir, 'runtime.identity.json')
      await saveIdentity(identityFile, createIdentity(discovery))
      const markers = mkdtempSync(path.join(dir, 'markers-'))
      const log: string[] = []

      const staged = await owner.snapshot(
        {
          systemPrompt: 'You resume the translation job.',
          messages: [
            { role: 'user', content: 'Translate chapter 3.' },
            { role: 'assistant', content: [{ type: 'text', text: 'Chapter 3 started.' }] },
          ],
          toolState: { progress: { chapter: 3, page: 12 } },
          mcpConfig: {
            servers: [{ name: 'docs', env: { TOKEN: { credRef: 'env://DOCS_TOKEN' } } }],
          },
        },
        { idempotencyKey: `e2e-${store.name}` },
      )
      const id = staged.transferId
      // 30 000 micro-units at 10 000 per second of wall time plus ~5 000 per second the child
      // reports: the budget runs out in about two seconds.
      const budget = { tier: 'standard', budgetMicros: 30_000, rateMicrosPerSecond: 10_000 }
      const { token: provisionToken } = await orchestrator.mint(id, {
        scope: 'provision',
        ...budget,
      })
      const provisioned = await owner.provision(id, { ...budget, token: provisionToken })
      const handedOn = provisioned.traceparent?.split('-')[1]
      assert.ok(handedOn, 'the provisioning hands its trace on')

      startRuntime(identityFile, markers, log)
      const pushed = await until(owner, id, (t) => t.state === 'pushed', 30_000)
      assert.ok(pushed.runtime, 'a runtime claimed it')
      // The same runtime started twice: the second process must not run the transfer again.
      startRuntime(identityFile, markers, log)
      const deadline = Date.now() + 30_000
      while (log.filter((l) => l.includes('"event":"runtime.resumed"')).length < 2) {
        assert.ok(Date.now() < deadline, log.join('\n'))
        await new Promise((r) => setTimeout(r, 50))
      }

      const { token: activateToken } = await orchestrator.mint(id, { scope: 'activate' })
      await owner.activate(id, activateToken)

      const ended = await until(owner, id, (t) => t.state === 'terminated', 30_000)
      assert.equal(ended.endReason, 'insolvent')
      assert.ok(ended.spentMicros >= 30_000, String(ended.spentMicros))
      assert.ok(Number.isSafeInteger(ended.spentMicros))
      const types = ended.events.map((e) => e.type)
      assert.deepEqual(
        types,
        [
          'staged',
          'provisioned',
          'claimed',
          'pushed',
          'active',
          'started',
          'insolvent',
          'terminated',
        ],
        log.join('\n'),
      )
      assert.deepEqual(
        ended.events.map((e) => e.seq),
        ended.events.map((_, i) => i + 1),
      )

      // Exactly one child ran, it saw the snapshot, and it was stopped.
      const started = readdirSync(markers).filter((f) => f.startsWith('started-'))
      assert.equal(started.length, 1, `children started: ${started.join(', ')}\n${log.join('\n')}`)
      const marker = JSON.parse(readFileSync(path.join(markers, started[0]!), 'utf8')) as {
        pid: number
        transferId: string
        systemPrompt: string
        messages: number
      }
      assert.equal(marker.transferId, id)
      assert.equal(marker.systemPrompt, 'You resume the translation job.')
      assert.equal(marker.messages, 2)
      assert.ok(existsSync(path.join(markers, `stopped-${marker.pid}`)), 'the child got SIGTERM')
      assert.equal(alive(marker.pid), false)
      // Its usage reports reached the hub; the child's own lines were part of the charge.
      assert.ok(log.some((l) => l.includes('"event":"usage.reported"')))
      assert.ok(
        log.some((l) => l.includes('"event":"transfer.lease_held"')),
        'the second process found the lease held and did not start the agent',
      )
      // Whatever the runtime sent about the transfer continued the trace the hub handed it.
      for (const route of ['/v1/transfers/:id/push', '/v1/transfers/:id/usage']) {
        const sent = requests.filter((r) => r.msg === 'request' && r.route === route)
        assert.ok(sent.length > 0, route)
        assert.deepEqual(new Set(sent.map((r) => r.traceId)), new Set([handedOn]), route)
      }
    })
  })
}
