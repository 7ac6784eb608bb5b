// The red team's replay (issue 25): a built hub as its own process, with its embedded compute
// runtime, is sent what a hostile caller sent it, one attack after another, while /healthz is
// probed every 25 ms; each attack's /healthz p99 is set beside the idle p99 of the same run, and
// what the attacks left stored is read back. The attacks:
//
//   push configs   2,000 push configs on one task, then one 60 KB send to it
//   artifacts      150 sends of 64 artifacts each to one task, then GetTask
//   900 KB         20 messages of 900 KB
//   compare bomb   4 jobs of equal 480,000-character strings compared under the step bound by
//                  one principal, and a trivial job of another principal submitted meanwhile
//   bodies         four 1 MiB bodies (the worst shape of the bodies bench) in flight for 4 s
//
//   node --import tsx bench/red-team.ts
import { readdirSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { contentDigest, createIdentity, type Identity, SignedClient } from '@baton/client'
import { fmt, median, printResults, printTable, quantile, type Result } from './lib.js'
import {
  type Answer,
  closeConnections,
  type HubProcess,
  probe,
  send,
  sendSigned,
  signedHeaders,
  startHubProcess,
} from './served.js'

const RELAY = 'urn:baton:a2a:relay:v1'
const IDLE_MS = Number(process.env.BENCH_REDTEAM_IDLE_MS ?? 4000)
const log = (line: string) => process.stderr.write(`${line}\n`)

/** Bytes of the files under a folder. */
function folderBytes(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name)
    n += e.isDirectory() ? folderBytes(full) : statSync(full).size
  }
  return n
}

/** Counts answers by status and code. */
function tally(answers: Answer[]): string {
  const counts = new Map<string, number>()
  for (const a of answers) {
    const key = `${a.status}${a.code ? ` ${a.code}` : ''}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n} x ${k}`)
    .join(', ')
}

interface Attack {
  name: string
  /** Runs the attack; answers what to report beside the probes. */
  run(): Promise<Record<string, unknown>>
}

export async function run(): Promise<Result[]> {
  const hub: HubProcess = await startHubProcess('red-team', {
    BATON_COMPUTE_EMBEDDED: 'true',
    BATON_NOTIFY_ALLOW_LOOPBACK: 'true',
    BATON_QUOTA_MESSAGES_PER_DAY: String(1e9),
  })
  const { port } = hub
  const results: Result[] = []
  try {
    const discoveryUrl = `http://127.0.0.1:${port}/.well-known/agent-net`
    const ids: Record<'owner' | 'agent' | 'other', Identity> = {
      owner: createIdentity(discoveryUrl),
      agent: createIdentity(discoveryUrl),
      other: createIdentity(discoveryUrl),
    }
    for (const id of Object.values(ids)) await (await SignedClient.connect(discoveryUrl, id)).me()
    const a2a = (as: Identity, method: string, params: object, parse = false) =>
      sendSigned(
        port,
        as,
        'POST',
        '/v1/a2a',
        { jsonrpc: '2.0', id: 1, method, params },
        { 'a2a-version': '1.0' },
        parse,
      )
    let tasks = 0
    const newTask = async () => {
      const created = await a2a(
        ids.owner,
        'SendMessage',
        {
          tenant: ids.agent.principal,
          message: { messageId: `task-${++tasks}`, role: 'ROLE_USER', parts: [{ text: 'go' }] },
          configuration: { returnImmediately: true },
        },
        true,
      )
      return (created.body as { result: { task: { id: string } } }).result.task.id
    }
    let sends = 0
    const agentSend = (taskId: string, update: object, text = 'working') =>
      a2a(ids.agent, 'SendMessage', {
        message: { messageId: `s-${++sends}`, role: 'ROLE_AGENT', parts: [{ text }], taskId },
        metadata: { [RELAY]: update },
      })
    const storedBytes = async () => {
      let n = 0
      for (const id of Object.values(ids)) {
        const me = await sendSigned(port, id, 'GET', '/v1/me', undefined, {}, true)
        n += (me.body as { quotas: { storedBytes: { used: number } } }).quotas.storedBytes.used
      }
      return n
    }
    const waitJob = async (as: Identity, jobId: string) => {
      for (;;) {
        const job = await sendSigned(
          port,
          as,
          'GET',
          `/v1/compute/jobs/${jobId}/wait/25`,
          undefined,
          {},
          true,
        )
        const body = job.body as { state: string; steps?: number; error?: { code?: string } }
        if (['succeeded', 'failed', 'canceled'].includes(body.state)) return body
      }
    }

    const attacks: Attack[] = [
      {
        name: '2,000 push configs on one task',
        async run() {
          const taskId = await newTask()
          const answers: Answer[] = []
          const started = performance.now()
          for (let i = 0; i < 2000; i++) {
            answers.push(
              await a2a(ids.owner, 'CreateTaskPushNotificationConfig', {
                taskId,
                url: `http://127.0.0.1:9/hook-${i}`,
              }),
            )
          }
          const configsMs = performance.now() - started
          const send60 = await agentSend(taskId, {}, 'z'.repeat(60_000))
          return {
            configs: tally(answers),
            'configs s': fmt(configsMs / 1000),
            '60 KB send': `${send60.status}${send60.code ? ` ${send60.code}` : ''}, ${fmt(send60.ms)} ms`,
          }
        },
      },
      {
        name: '150 artifact-heavy sends',
        async run() {
          const taskId = await newTask()
          const answers: Answer[] = []
          for (let i = 0; i < 150; i++) {
            const artifacts = Array.from({ length: 64 }, (_, k) => ({
              artifact: { artifactId: `art-${k}`, parts: [{ text: `part ${i}-${k}` }] },
              append: i > 0,
            }))
            answers.push(await agentSend(taskId, { artifacts }))
          }
          const accepted = answers.filter((a) => a.status === 200 && !a.code)
          const view = await a2a(ids.agent, 'GetTask', { id: taskId })
          return {
            sends: tally(answers),
            'first / last accepted send ms': `${fmt(median(accepted.slice(0, 5).map((a) => a.ms)))} / ${fmt(median(accepted.slice(-5).map((a) => a.ms)))}`,
            GetTask: `${fmt(view.ms)} ms, ${view.bytes} bytes`,
          }
        },
      },
      {
        name: '900 KB messages',
        async run() {
          const answers: Answer[] = []
          for (let i = 0; i < 20; i++) {
            answers.push(
              await a2a(ids.owner, 'SendMessage', {
                tenant: ids.agent.principal,
                message: {
                  messageId: `huge-${i}`,
                  role: 'ROLE_USER',
                  parts: [{ text: 'z'.repeat(900_000) }],
                },
                configuration: { returnImmediately: true },
              }),
            )
          }
          return { sends: tally(answers), 'answer ms p50': fmt(median(answers.map((a) => a.ms))) }
        },
      },
      {
        name: 'string-compare compute bomb',
        async run() {
          const text = 'x'.repeat(480_000)
          // As many compares as the step bound lets one program make, and one more: the red
          // team's 540,004-step program charged one step each.
          const program = Array.from({ length: 34 }, () => ({
            '===': [{ var: 'a' }, { var: 'b' }],
          }))
          const bombs: Promise<{ state: string; steps?: number; error?: { code?: string } }>[] = []
          const started = performance.now()
          for (let i = 0; i < 4; i++) {
            const sub = await sendSigned(
              port,
              ids.owner,
              'POST',
              '/v1/compute/jobs',
              {
                language: 'json-expr-v1',
                program,
                input: { a: text, b: `${text.slice(0, -1)}y` },
                idempotencyKey: `bench-bomb-${i}`,
              },
              {},
              true,
            )
            const jobId = (sub.body as { jobId?: string }).jobId
            if (jobId) bombs.push(waitJob(ids.owner, jobId))
          }
          // Another principal's trivial job, submitted while the bombs are queued or running.
          const trivialStarted = performance.now()
          const trivial = await sendSigned(
            port,
            ids.other,
            'POST',
            '/v1/compute/jobs',
            {
              language: 'json-expr-v1',
              program: { '+': [1, 2] },
              input: null,
              idempotencyKey: 'bench-trivial-job',
            },
            {},
            true,
          )
          const trivialEnd = await waitJob(ids.other, (trivial.body as { jobId: string }).jobId)
          const trivialMs = performance.now() - trivialStarted
          const ended = await Promise.all(bombs)
          const bombMs = performance.now() - started
          return {
            bombs: ended
              .map((b) => `${b.state}${b.error?.code ? ` ${b.error.code}` : ''} (${b.steps} steps)`)
              .join(', '),
            'bombs s': fmt(bombMs / 1000),
            'trivial job of another principal': `${trivialEnd.state} in ${fmt(trivialMs)} ms`,
          }
        },
      },
      {
        name: 'four 1 MiB bodies in flight',
        async run() {
          // The bodies bench's worst signed shape at the limit: a string of escapes.
          const value = `"${'\\u00e9'.repeat(Math.floor((1024 * 1024 - 64) / 6))}"`
          const body = Buffer.from(`{"namespace":"n","kind":"k","data":${value}}`)
          const digest = contentDigest(body)
          const answers: Answer[] = []
          const deadline = performance.now() + 4000
          const loop = async () => {
            while (performance.now() < deadline) {
              const headers = signedHeaders(port, ids.other, 'POST', '/v1/resources', digest)
              answers.push(await send(port, 'POST', '/v1/resources', body, headers))
            }
          }
          await Promise.all(Array.from({ length: 4 }, loop))
          return { bodies: tally(answers) }
        },
      },
    ]

    const idle = await probe(port, new Promise((r) => setTimeout(r, IDLE_MS)))
    const idleP99 = quantile(idle, 0.99)
    log(`idle: /healthz p50 ${fmt(quantile(idle, 0.5))} ms, p99 ${fmt(idleP99)} ms`)
    const rows: Record<string, unknown>[] = []
    const all: number[] = []
    for (const attack of attacks) {
      const loadBefore = loadavg()[0]!
      const work = attack.run()
      const probes = await probe(port, work)
      const report = await work
      all.push(...probes)
      const p99 = quantile(probes, 0.99)
      const load = `${fmt(loadBefore)}/${fmt(loadavg()[0]!)}`
      rows.push({
        attack: attack.name,
        probes: probes.length,
        'p50 ms': quantile(probes, 0.5),
        'p99 ms': p99,
        'max ms': probes.at(-1),
        load,
      })
      log(`${attack.name}: /healthz p99 ${fmt(p99)} ms (load ${load}); ${JSON.stringify(report)}`)
      results.push({
        name: `red team: /healthz p99 during ${attack.name}`,
        baseline: idleP99,
        value: p99,
        ratio: p99 / idleP99,
        unit: 'ms',
        detail: { ...report, probes: probes.length, p50: quantile(probes, 0.5), load1: load },
      })
    }
    all.sort((a, b) => a - b)
    console.log('')
    printTable(['attack', 'probes', 'p50 ms', 'p99 ms', 'max ms', 'load'], rows)
    const stored = await storedBytes()
    const files = folderBytes(hub.dir)
    results.push({
      name: 'red team: /healthz p99 over every attack',
      baseline: idleP99,
      value: quantile(all, 0.99),
      ratio: quantile(all, 0.99) / idleP99,
      unit: 'ms',
      detail: { probes: all.length, max: all.at(-1) ?? 0 },
    })
    results.push({
      name: 'red team: stored bytes charged to the three principals, vs their three quotas',
      baseline: 3 * 10 * 1024 * 1024,
      value: stored,
      ratio: stored / (3 * 10 * 1024 * 1024),
      unit: 'bytes',
      detail: { 'data folder bytes': files },
    })
  } finally {
    closeConnections()
    await hub.stop()
  }
  return results
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printResults(await run())
}
