// A CPU profile of the hub answering signed `GET /v1/me` (or another signed request) from the
// bench's child load client: the inspector profiles this process only around the signed load, so
// nothing else of a bench swamps it. Prints self time by function and by file, and writes the
// profile (open it in a browser's devtools) when BENCH_PROFILE_OUT names a file.
//
//   node --import tsx bench/profile-signed.ts            # signed GET /v1/me
//   BENCH_PROFILE_ROUTE=send node --import tsx bench/profile-signed.ts   # signed POST message
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createIdentity } from '@baton/client'
import { startBenchHub } from './hub.js'
import { type LoadRequest, signedLoadRequest, startLoadClient } from './lib.js'

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 6000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const ROUTE = process.env.BENCH_PROFILE_ROUTE ?? 'me'
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 40)

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: HeapNode[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

/** CPU ticks (user + system) of each thread of this process, by thread id and name (Linux). */
function threadTicks(): Map<string, number> {
  const out = new Map<string, number>()
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      out.set(`${tid} ${name}`, Number(fields[11]) + Number(fields[12]))
    }
  } catch {
    // Not Linux: no per-thread figures.
  }
  return out
}

/** Profiles the hub under one signed load and prints the summaries. */
async function profileSigned(): Promise<void> {
  const { hub, stop } = await startBenchHub('profile', {
    BATON_QUOTA_MESSAGES_PER_DAY: String(1e9),
  })
  const load = await startLoadClient('child')
  const id = createIdentity('bench')
  const other = createIdentity('bench-peer')
  const batch = (): LoadRequest[] =>
    Array.from({ length: REQUESTS }, (_, i) =>
      ROUTE === 'healthz'
        ? { method: 'GET', path: '/healthz' }
        : ROUTE === 'send'
          ? signedLoadRequest(hub.url, id, 'POST', '/v1/messages', {
              recipient: other.principal,
              body: { n: i },
              idempotencyKey: `k-${Date.now()}-${i}`,
            })
          : signedLoadRequest(hub.url, id, 'GET', '/v1/me'),
    )
  try {
    // Both keys enrol (open admission) before anything is measured.
    for (const who of [id, other]) {
      await load.run({
        origin: hub.url,
        requests: [signedLoadRequest(hub.url, who, 'GET', '/v1/me')],
        concurrency: 1,
      })
    }
    const warm = await load.run({
      origin: hub.url,
      requests: batch().slice(0, 1000),
      concurrency: CONCURRENCY,
    })
    process.stderr.write(`warm-up statuses ${JSON.stringify(warm.statuses)}\n`)
    const requests = batch()
    const session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 100 })
    // BENCH_PROFILE=heap samples allocations instead of CPU.
    const heap = process.env.BENCH_PROFILE === 'heap'
    const profiling = process.env.BENCH_PROFILE !== '0' && !heap
    if (profiling) await session.post('Profiler.start')
    if (heap)
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      })
    const ticks = threadTicks()
    const elu = performance.eventLoopUtilization()
    const cpu = process.cpuUsage()
    const result = await load.run({ origin: hub.url, requests, concurrency: CONCURRENCY })
    const used = process.cpuUsage(cpu)
    const loop = performance.eventLoopUtilization(elu)
    const ticksAfter = threadTicks()
    if (heap) {
      const { profile: h } = (await session.post('HeapProfiler.stopSampling')) as {
        profile: { head: HeapNode }
      }
      const bytes = new Map<string, number>()
      const walk = (n: HeapNode) => {
        const f = n.callFrame
        const file = f.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*\/packages\//, '')
        const k = `${f.functionName || '(anon)'} ${file}:${f.lineNumber + 1}`
        bytes.set(k, (bytes.get(k) ?? 0) + n.selfSize)
        for (const c of n.children) walk(c)
      }
      walk(h.head)
      const all = [...bytes.values()].reduce((a, b) => a + b, 0)
      console.log(`\nallocated (sampled) ${(all / REQUESTS).toFixed(0)} bytes/req, by function:`)
      for (const [k, v] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
        console.log(`${(v / REQUESTS).toFixed(0).padStart(7)}  ${k}`)
      }
    }
    const { profile } = profiling
      ? ((await session.post('Profiler.stop')) as { profile: Profile })
      : { profile: { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 } }
    session.disconnect()
    if (process.env.BENCH_PROFILE_OUT)
      writeFileSync(process.env.BENCH_PROFILE_OUT, JSON.stringify(profile))

    console.log(
      `hub_cpu=${((used.user + used.system) / REQUESTS).toFixed(0)} hub_loop=${((loop.active * 1000) / REQUESTS).toFixed(0)}`,
    )
    console.log(
      `${ROUTE}: ${result.perSecond.toFixed(0)}/s statuses ${JSON.stringify(result.statuses)}; hub cpu ${((used.user + used.system) / REQUESTS).toFixed(0)} us/req, loop ${((loop.active * 1000) / REQUESTS).toFixed(0)} us/req`,
    )
    // Clock ticks are 10 ms each (USER_HZ 100).
    let main = 0
    let others = 0
    for (const [t, after] of ticksAfter) {
      const used = ((after - (ticks.get(t) ?? 0)) * 10_000) / REQUESTS
      if (t.startsWith(`${process.pid} `)) main += used
      else others += used
      if (used > 0) console.log(`thread ${t}: ${used.toFixed(0)} us/req`)
    }
    console.log(`cpu_main=${main.toFixed(0)} cpu_other=${others.toFixed(0)}`)
    const self = new Map<number, number>()
    for (let i = 0; i < profile.samples.length; i++) {
      const node = profile.samples[i]!
      self.set(node, (self.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0))
    }
    const byFn = new Map<string, number>()
    const byFile = new Map<string, number>()
    let total = 0
    for (const node of profile.nodes) {
      const us = self.get(node.id) ?? 0
      if (us === 0) continue
      total += us
      const f = node.callFrame
      const file =
        f.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*\/packages\//, '') || '(native)'
      const fn = `${f.functionName || '(anon)'} ${file}:${f.lineNumber + 1}`
      byFn.set(fn, (byFn.get(fn) ?? 0) + us)
      byFile.set(file, (byFile.get(file) ?? 0) + us)
    }
    const idle = [...byFn].filter(([k]) => k.startsWith('(idle)')).reduce((s, [, v]) => s + v, 0)
    const busy = total - idle
    const print = (title: string, m: Map<string, number>) => {
      console.log(
        `\n${title} (us per request of busy self time; busy ${(busy / REQUESTS).toFixed(0)} us/req)`,
      )
      for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
        if (k.startsWith('(idle)')) continue
        console.log(
          `${(v / REQUESTS).toFixed(1).padStart(7)}  ${((v / busy) * 100).toFixed(1).padStart(5)}%  ${k}`,
        )
      }
    }
    print('by function', byFn)
    print('by file', byFile)
    // Where the biggest native self times are called from: two callers up.
    const parent = new Map<number, ProfileNode>()
    for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node)
    const name = (n: ProfileNode | undefined) =>
      n
        ? `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\//, '')}:${n.callFrame.lineNumber + 1}`
        : '-'
    const callers = new Map<string, number>()
    for (const node of profile.nodes) {
      const us = self.get(node.id) ?? 0
      if (us === 0 || node.callFrame.url !== '') continue
      const p1 = parent.get(node.id)
      const p2 = p1 && parent.get(p1.id)
      const p3 = p2 && parent.get(p2.id)
      const k = `${name(node)} <- ${name(p1)} <- ${name(p2)} <- ${name(p3)}`
      callers.set(k, (callers.get(k) ?? 0) + us)
    }
    print('native self time by caller chain', callers)
    // Inclusive time by file: each sample counts once for every file on its stack.
    const incl = new Map<string, number>()
    const fileOf = (n: ProfileNode) =>
      n.callFrame.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*\/packages\//, '') ||
      '(native)'
    for (const node of profile.nodes) {
      const us = self.get(node.id) ?? 0
      if (us === 0 || node.callFrame.functionName === '(idle)') continue
      const files = new Set<string>()
      for (let n: ProfileNode | undefined = node; n; n = parent.get(n.id)) files.add(fileOf(n))
      for (const f of files) incl.set(f, (incl.get(f) ?? 0) + us)
    }
    print('inclusive by file', incl)
  } finally {
    await load.close()
    await stop()
  }
}

// A tool run on its own, not a scenario: `npm run bench` imports every bench file, so nothing
// runs on import.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await profileSigned()
