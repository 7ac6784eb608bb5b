// The SDK's transport: signed `me()` calls and unsigned `GET /healthz` calls per second, and the
// client process's CPU per call, through the SDK's own keep-alive node:http transport beside the
// same SDK handed the global `fetch` (what every call went through before), against one hub in
// the same run. The client runs in a child process of its own, so its CPU is read apart from the
// hub's; rounds alternate which transport goes first.
//
//   node --import tsx bench/sdk-transport.ts
//   BENCH_ROUNDS=7 BENCH_CALLS=3000 BENCH_CONCURRENCY=8 node --import tsx bench/sdk-transport.ts
//   BENCH_SDK_BASE=../other-checkout node --import tsx bench/sdk-transport.ts
//
// BENCH_SDK_BASE names another built checkout (an earlier commit, say): its SDK, as it is, runs
// in the same rounds as a third client, so the fetch baseline can be checked against it.
import { type ChildProcess, fork } from 'node:child_process'
import { loadavg } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createIdentity, requestJson, SignedClient } from '@baton/client'
import { DISCOVERY_PATH } from '@baton/protocol'
import { startBenchHub } from './hub.js'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CALLS = Number(process.env.BENCH_CALLS ?? 2000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8)

type Transport = 'fetch' | 'node:http' | 'base build'
type Kind = 'signed me()' | 'unsigned GET /healthz'

interface Job {
  transport: Transport
  kind: Kind
  calls: number
  concurrency: number
}

interface Measured {
  perSecond: number
  /** The client process's CPU (user + system, every thread) per call. */
  cpuUsPerCall: number
}

/** The client side, in the child: one client per transport, made once, then jobs over IPC. */
async function serveCalls(hubUrl: string): Promise<void> {
  const discovery = `${hubUrl}${DISCOVERY_PATH}`
  const identity = createIdentity(discovery)
  const fetchOnly = (input: string | URL | Request, init?: RequestInit) => fetch(input, init)
  const base = process.env.BENCH_SDK_BASE
    ? ((await import(
        pathToFileURL(path.resolve(process.env.BENCH_SDK_BASE, 'packages/client/dist/index.js'))
          .href
      )) as typeof import('@baton/client'))
    : undefined
  const clients: Record<string, { me(): Promise<unknown> }> = {
    fetch: await SignedClient.connect(discovery, identity, { fetch: fetchOnly }),
    'node:http': await SignedClient.connect(discovery, identity),
    ...(base ? { 'base build': await base.SignedClient.connect(discovery, identity) } : {}),
  }
  const call = (job: Job): Promise<unknown> => {
    if (job.kind === 'signed me()') return clients[job.transport]!.me()
    if (job.transport === 'base build') return base!.requestJson(hubUrl, 'GET', '/healthz')
    return requestJson(hubUrl, 'GET', '/healthz', undefined, {
      ...(job.transport === 'fetch' ? { fetch: fetchOnly } : {}),
    })
  }
  // The first signed call enrols the key.
  await clients['node:http']!.me()
  process.on('message', async (job: Job) => {
    try {
      let next = 0
      const cpu = process.cpuUsage()
      const started = performance.now()
      await Promise.all(
        Array.from({ length: job.concurrency }, async () => {
          while (next++ < job.calls) await call(job)
        }),
      )
      const ms = performance.now() - started
      const used = process.cpuUsage(cpu)
      const measured: Measured = {
        perSecond: (job.calls / ms) * 1000,
        cpuUsPerCall: (used.user + used.system) / job.calls,
      }
      process.send?.({ ok: true, measured })
    } catch (error) {
      process.send?.({ ok: false, error: String(error) })
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.send?.({ ready: true })
}

function ask(child: ChildProcess, job: Job): Promise<Measured> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: { ok: true; measured: Measured } | { ok: false; error: string }) =>
      m.ok ? resolve(m.measured) : reject(new Error(m.error)),
    )
    child.send(job)
  })
}

export async function run(): Promise<Result[]> {
  const { hub, stop } = await startBenchHub('sdk-transport')
  const child = fork(fileURLToPath(import.meta.url), ['--calls', hub.url], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve())
      child.once('exit', (code) => reject(new Error(`the client exited early with ${code}`)))
    })
    const kinds: Kind[] = ['signed me()', 'unsigned GET /healthz']
    const seen = new Map<string, Measured[]>()
    const loads: number[] = []
    const transports: Transport[] = process.env.BENCH_SDK_BASE
      ? ['fetch', 'node:http', 'base build']
      : ['fetch', 'node:http']
    for (const kind of kinds) {
      // One warm-up of each transport, not counted.
      for (const transport of transports) {
        await ask(child, { transport, kind, calls: 300, concurrency: CONCURRENCY })
      }
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of kinds) {
        const order = round % 2 ? [...transports].reverse() : transports
        for (const transport of order) {
          const m = await ask(child, { transport, kind, calls: CALLS, concurrency: CONCURRENCY })
          const key = `${kind} ${transport}`
          seen.set(key, [...(seen.get(key) ?? []), m])
        }
      }
      loads.push(loadavg()[0]!)
    }
    const load = median(loads).toFixed(2)
    const of = (kind: Kind, transport: Transport, f: (m: Measured) => number) =>
      median((seen.get(`${kind} ${transport}`) ?? []).map(f))
    return kinds.flatMap((kind) => {
      const rate = (t: Transport) => of(kind, t, (m) => m.perSecond)
      const cpu = (t: Transport) => of(kind, t, (m) => m.cpuUsPerCall)
      const detail = { rounds: ROUNDS, calls: CALLS, concurrency: CONCURRENCY, loadavg_1m: load }
      const against = process.env.BENCH_SDK_BASE
        ? [
            {
              name: `SDK ${kind}: fetch baseline vs the base build's SDK (calls/s)`,
              baseline: rate('base build'),
              value: rate('fetch'),
              ratio: rate('fetch') / rate('base build'),
              unit: 'calls/s',
              detail: { ...detail, cpu_us_per_call_base: cpu('base build') },
            },
          ]
        : []
      return [
        ...against,
        {
          name: `SDK ${kind}: node:http transport vs fetch (calls/s)`,
          baseline: rate('fetch'),
          value: rate('node:http'),
          ratio: rate('node:http') / rate('fetch'),
          unit: 'calls/s',
          detail,
        },
        {
          name: `SDK ${kind}: client CPU per call, fetch ÷ node:http (above 1: less CPU)`,
          baseline: cpu('fetch'),
          value: cpu('node:http'),
          ratio: cpu('fetch') / cpu('node:http'),
          unit: 'µs/call',
          detail,
        },
      ]
    })
  } finally {
    child.disconnect()
    await stop()
  }
}

const at = process.argv.indexOf('--calls')
if (at >= 0 && process.send) {
  await serveCalls(process.argv[at + 1]!)
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printResults } = await import('./lib.js')
  printResults(await run())
}
