// 10,000 long-poll waiters woken by one move, (a) all on one handoff and (b) spread over 100
// handoffs, beside a bare fastify wait server (a route that parks each request until an in-memory
// move and then answers a small JSON) driven by the same raw-socket client. Each pass runs its
// server in a fresh child process (waits-server.mjs under plain node: the built hub, as a user runs
// it, and the bare server the same way), so the hub's resident memory before the first wait, with
// every wait open, at its peak while they are answered and some seconds after is its own (read
// from /proc). Rounds interleave the servers; figures are medians. The packages are built first.
// Run alone: node --import tsx bench/waits.ts
import { type ChildProcess, execSync, spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { median, printResults, printTable, type Result } from './lib.js'

type Store = 'sqlite' | 'postgres'
/** `other`: a second built hub (`BENCH_WAITS_OTHER_HUB`), e.g. one built from a parent commit. */
type Kind = 'bare' | 'hub' | 'other'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)
const WAITERS = intEnv('BENCH_WAITERS', 10_000)
const SPREAD = intEnv('BENCH_WAIT_TOPICS', 100)
const ROUNDS = intEnv('BENCH_ROUNDS', 5)
const SETTLE_MS = intEnv('BENCH_WAITS_SETTLE_MS', 10_000)
const OTHER_HUB = env.BENCH_WAITS_OTHER_HUB
const KINDS: readonly Kind[] = OTHER_HUB ? ['bare', 'hub', 'other'] : ['bare', 'hub']
const WAIT_SECONDS = 600
/** Connections opened at once, within the listen backlog. */
const OPEN_BATCH = 250
const log = (msg: string) => process.stderr.write(`[waits] ${msg}\n`)
const root = path.resolve(import.meta.dirname, '..')
const server = path.join(import.meta.dirname, 'waits-server.mjs')

// ---- the servers (child processes, in waits-server.mjs) ---------------------------------

interface Ready {
  port: number
}
type Command = { cmd: 'waiting' } | { cmd: 'memory' } | { cmd: 'stop' }

// ---- the parent: client, passes, figures ---------------------------------------------------

/** A server child: its port, its pid (for /proc) and its count of parked waits. */
interface Child {
  port: number
  pid: number
  waiting(): Promise<number>
  /** The child's V8 heap in use and its memory outside the heap (buffers), in MiB. */
  memory(): Promise<{ heap: number; external: number }>
  stop(): Promise<void>
}

async function startChild(kind: Kind, store: Store): Promise<Child> {
  // Each child holds one socket per waiter; its soft descriptor limit is raised to the hard one.
  // Plain node, no loader and no source condition: the built hub, as a user runs it.
  // BENCH_WAITS_PROFILE_DIR: each server writes a CPU profile of its whole run there.
  const profile = env.BENCH_WAITS_PROFILE_DIR
    ? [
        '--cpu-prof',
        `--cpu-prof-dir=${env.BENCH_WAITS_PROFILE_DIR}`,
        `--cpu-prof-name=${kind}.cpuprofile`,
      ]
    : []
  const args = [...profile, server, kind === 'other' ? 'hub' : kind, store]
  const child: ChildProcess = spawn(
    '/bin/sh',
    ['-c', 'ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"', process.execPath, ...args],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...env,
        BENCH_WAITERS: String(WAITERS),
        BENCH_WAIT_SECONDS: String(WAIT_SECONDS),
        ...(kind === 'other' && OTHER_HUB ? { BENCH_WAITS_HUB: OTHER_HUB } : {}),
      },
    },
  )
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready))
    child.once('exit', (code) => reject(new Error(`${kind} server exited early with ${code}`)))
  })
  const ask = <T>(cmd: Command) =>
    new Promise<T>((resolve) => {
      child.once('message', (m) => resolve(m as T))
      child.send(cmd)
    })
  return {
    port: ready.port,
    pid: child.pid!,
    waiting: async () => (await ask<{ waiting: number }>({ cmd: 'waiting' })).waiting,
    memory: async () => {
      const m = await ask<{ heapUsed: number; external: number }>({ cmd: 'memory' })
      return { heap: m.heapUsed / 2 ** 20, external: m.external / 2 ** 20 }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.removeAllListeners('exit')
        child.once('exit', () => resolve())
        child.send({ cmd: 'stop' })
      }),
  }
}

/** Resident and peak resident memory of a process, in MiB. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN)
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 }
}

/** One waiter on its own raw socket: the request is written once, the answer parsed by hand. */
interface Waiter {
  socket: net.Socket
  done: Promise<{ status: number; body: string; at: number }>
}

function openWaiter(port: number, request: string): Waiter {
  const socket = net.connect({ host: '127.0.0.1', port })
  socket.setNoDelay(true)
  const done = new Promise<{ status: number; body: string; at: number }>((resolve, reject) => {
    let text = ''
    socket.setEncoding('utf8')
    socket.on('connect', () => socket.write(request))
    socket.on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\r\n\r\n')
      if (end < 0) return
      const length = Number(/content-length:\s*(\d+)/i.exec(text.slice(0, end))?.[1] ?? -1)
      if (length < 0 || Buffer.byteLength(text.slice(end + 4)) < length) return
      const status = Number(text.slice(9, 12))
      resolve({ status, body: text.slice(end + 4), at: performance.now() })
    })
    socket.on('error', reject)
    socket.on('close', () => reject(new Error('closed before an answer')))
  })
  return { socket, done }
}

async function httpJson(
  port: number,
  method: string,
  pathname: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${pathname}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/** What one pass measured. Times in ms, memory in MiB. */
interface Pass {
  /** From the first connection to the last wait parked. */
  openMs: number
  wakeMs: number
  /** Before the first wait, once the server is ready (and the bench's handoffs are made). */
  startRss: number
  openRss: number
  /** The child's V8 heap in use with every wait open. */
  openHeap: number
  peakRss: number
  afterRss: number
}

/** One pass: a fresh server, `WAITERS` waiters over `topics` topics, the moves, the answers. */
async function pass(kind: Kind, store: Store, topics: number): Promise<Pass> {
  const child = await startChild(kind, store)
  try {
    return await round(child, kind, topics)
  } finally {
    await child.stop()
  }
}

/** `WAITERS` waiters over `topics` topics on a running server, the moves, the answers. */
async function round(child: Child, kind: Kind, topics: number): Promise<Pass> {
  {
    // Targets: what each waiter asks for, and what moves them.
    const targets: { wait: string; token: string; move: () => Promise<number> }[] = []
    for (let t = 0; t < topics; t++) {
      if (kind === 'bare') {
        const topic = `t${t}`
        targets.push({
          wait: `/wait/${topic}`,
          token: 'x',
          move: async () => (await httpJson(child.port, 'POST', `/move/${topic}`)).status,
        })
      } else {
        const made = await httpJson(child.port, 'POST', '/services/v1/handoff', {
          payload: { t },
        })
        if (made.status !== 201) throw new Error(`create answered ${made.status}`)
        const h = made.body as { handoff_id: string; owner_token: string; receiver_token: string }
        const H = `/services/v1/handoff/${h.handoff_id}`
        targets.push({
          wait: `${H}/wait/${WAIT_SECONDS}?version=1`,
          token: h.owner_token,
          move: async () =>
            (
              await httpJson(
                child.port,
                'POST',
                `${H}/accepted`,
                { from: 'offered' },
                h.receiver_token,
              )
            ).status,
        })
      }
    }
    const startRss = memoryOf(child.pid).rss
    const opening = performance.now()
    const waiters: Waiter[] = []
    let early: { status: number; body: string } | undefined
    while (waiters.length < WAITERS) {
      for (let i = 0; i < OPEN_BATCH && waiters.length < WAITERS; i++) {
        const t = targets[waiters.length % topics]!
        const request = `GET ${t.wait} HTTP/1.1\r\nhost: 127.0.0.1:${child.port}\r\nauthorization: Bearer ${t.token}\r\n\r\n`
        const w = openWaiter(child.port, request)
        w.done.then(
          (a) => {
            early ??= a
          },
          (e: Error) => {
            early ??= { status: 0, body: e.message }
          },
        )
        waiters.push(w)
      }
      const opened = waiters.length
      while ((await child.waiting()) < opened) {
        // A wait answered before any move (a cap, a refusal) would keep this loop waiting.
        if (early) throw new Error(`${kind}: a wait answered early: ${early.status} ${early.body}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    }
    const openMs = performance.now() - opening
    const openRss = memoryOf(child.pid).rss
    const openHeap = (await child.memory()).heap
    let sampled = openRss
    const sampler = setInterval(() => {
      sampled = Math.max(sampled, memoryOf(child.pid).rss)
    }, 20)

    const started = performance.now()
    const moved = await Promise.all(targets.map((t) => t.move()))
    if (moved.some((s) => s !== 200)) throw new Error(`a move answered ${moved.join(',')}`)
    const answers = await Promise.all(waiters.map((w) => w.done))
    const wakeMs = Math.max(...answers.map((a) => a.at)) - started
    clearInterval(sampler)
    for (const a of answers) {
      if (a.status !== 200 || !/"version":2\b/.test(a.body)) {
        throw new Error(`${kind}: a waiter answered ${a.status} ${a.body.slice(0, 200)}`)
      }
    }
    const peakRss = Math.max(sampled, memoryOf(child.pid).hwm)
    for (const w of waiters) w.socket.destroy()
    await new Promise((r) => setTimeout(r, SETTLE_MS))
    const afterRss = memoryOf(child.pid).rss
    return { openMs, wakeMs, startRss, openRss, openHeap, peakRss, afterRss }
  }
}

/**
 * `rounds` rounds of `WAITERS` waits on one handoff on ONE hub (issue 27: memory a finished wait
 * leaves behind): its peak in each round, and its resident memory `SETTLE_MS` after each.
 */
async function sameHub(store: Store, rounds: number): Promise<Result[]> {
  const child = await startChild('hub', store)
  const passes: Pass[] = []
  try {
    for (let r = 1; r <= rounds; r++) {
      // Each round's peak is its own: the kernel's high-water mark is reset between rounds.
      resetPeak(child.pid)
      const p = await round(child, 'hub', 1)
      passes.push(p)
      const heap = (await child.memory()).heap
      log(
        `${store} same hub, round ${r}: peak ${p.peakRss.toFixed(0)} MiB, after ${p.afterRss.toFixed(0)} MiB (heap ${heap.toFixed(0)} MiB)`,
      )
    }
  } finally {
    await child.stop()
  }
  const first = passes[0]!.afterRss
  const last = passes.at(-1)!.afterRss
  return [
    {
      name: `hub RSS ${SETTLE_MS / 1000} s after the last of ${rounds} rounds of ${WAITERS} waits on one hub ÷ after the first (goal <= 1.2, ${store})`,
      baseline: first,
      value: last,
      ratio: last / first,
      unit: 'MiB',
      detail: {
        peaks_mib: passes.map((p) => p.peakRss.toFixed(0)).join(' '),
        after_mib: passes.map((p) => p.afterRss.toFixed(0)).join(' '),
        loadavg1: Number(os.loadavg()[0]!.toFixed(2)),
      },
    },
  ]
}

/** Resets a process's VmHWM to its current RSS (Linux: writing 5 to clear_refs). */
function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {
    // Without it the peaks are the run's, not each round's.
  }
}

function checkDescriptors(): void {
  const soft = Number(execSync('ulimit -n', { shell: '/bin/sh' }).toString().trim())
  if (Number.isFinite(soft) && soft < WAITERS + 500) {
    throw new Error(
      `this process may open ${soft} descriptors; ${WAITERS} waiters need more (ulimit -n ${WAITERS + 1000})`,
    )
  }
}

/** Builds the packages (incremental), so the children run the hub as the sources are now. */
function build(): void {
  const built = spawnSync(process.execPath, [path.join(root, 'scripts/build.mjs')], {
    stdio: 'inherit',
  })
  if (built.status !== 0) throw new Error(`the build failed (${built.status})`)
}

export async function run(): Promise<Result[]> {
  checkDescriptors()
  build()
  const stores = (env.BENCH_STORES?.split(',') as Store[] | undefined) ?? ['sqlite']
  const results: Result[] = []
  // BENCH_WAITS_SAME_HUB=5: that many rounds on one hub instead (its memory across rounds).
  const sameHubRounds = intEnv('BENCH_WAITS_SAME_HUB', 0)
  if (sameHubRounds > 0) {
    for (const store of stores) results.push(...(await sameHub(store, sameHubRounds)))
    return results
  }
  for (const store of stores) {
    const shapes = [
      { label: 'one handoff', topics: 1 },
      { label: `${SPREAD} handoffs`, topics: SPREAD },
    ].filter(
      (s) =>
        !env.BENCH_WAITS_SHAPES || env.BENCH_WAITS_SHAPES.split(',').includes(String(s.topics)),
    )
    const samples = new Map<string, Pass[]>()
    const loads: number[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      for (const shape of shapes) {
        for (const kind of KINDS) {
          const p = await pass(kind, store, shape.topics)
          const key = `${kind}|${shape.label}`
          samples.set(key, [...(samples.get(key) ?? []), p])
          log(
            `${store} round ${round} ${shape.label} ${kind}: open ${p.openMs.toFixed(0)} ms, wake ${p.wakeMs.toFixed(0)} ms, rss start ${p.startRss.toFixed(0)} open ${p.openRss.toFixed(0)} (heap ${p.openHeap.toFixed(0)}) peak ${p.peakRss.toFixed(0)} after ${p.afterRss.toFixed(0)} MiB`,
          )
        }
      }
      loads.push(os.loadavg()[0]!)
    }
    const load = median(loads)
    const rows: Record<string, unknown>[] = []
    for (const shape of shapes) {
      const of = (kind: Kind, f: keyof Pass) =>
        median((samples.get(`${kind}|${shape.label}`) ?? []).map((p) => p[f]))
      const bare = of('bare', 'wakeMs')
      const hub = of('hub', 'wakeMs')
      results.push({
        name: `${WAITERS} waiters woken on ${shape.label}: ms move to last answer (${store})`,
        baseline: bare,
        value: hub,
        ratio: hub / bare,
        unit: 'ms (ratio: time ÷ bare, lower is better)',
        detail: { rounds: ROUNDS, loadavg1: Number(load.toFixed(2)) },
      })
      results.push({
        name: `hub peak RSS, ${WAITERS} waits on ${shape.label} (${store})`,
        baseline: of('bare', 'peakRss'),
        value: of('hub', 'peakRss'),
        ratio: of('hub', 'peakRss') / of('bare', 'peakRss'),
        unit: 'MiB',
        detail: {
          start: Math.round(of('hub', 'startRss')),
          open: Math.round(of('hub', 'openRss')),
          heapOpen: Math.round(of('hub', 'openHeap')),
          peak: Math.round(of('hub', 'peakRss')),
          after: Math.round(of('hub', 'afterRss')),
          bareStart: Math.round(of('bare', 'startRss')),
          bareOpen: Math.round(of('bare', 'openRss')),
          bareHeapOpen: Math.round(of('bare', 'openHeap')),
          bareAfter: Math.round(of('bare', 'afterRss')),
        },
      })
      for (const kind of KINDS) {
        rows.push({
          store,
          shape: shape.label,
          server: kind,
          'open ms': Math.round(of(kind, 'openMs')),
          'wake ms': Math.round(of(kind, 'wakeMs')),
          'rss start': Math.round(of(kind, 'startRss')),
          'rss open': Math.round(of(kind, 'openRss')),
          'heap open': Math.round(of(kind, 'openHeap')),
          'rss peak': Math.round(of(kind, 'peakRss')),
          [`rss +${SETTLE_MS / 1000}s`]: Math.round(of(kind, 'afterRss')),
        })
      }
    }
    console.log(
      `\nwaits (${store}): medians of ${ROUNDS} interleaved rounds, load average ${load.toFixed(2)}`,
    )
    printTable(Object.keys(rows[0]!), rows)
  }
  return results
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
