// 10,000 long-poll waiters woken by one move, (a) all on one handoff and (b) spread over 100
// handoffs, beside a bare fastify wait server (a route that parks each request until an in-memory
// move and then answers a small JSON) driven by the same raw-socket client. Each pass runs its
// server in a fresh child process, so the hub's resident memory with every wait open, at its peak
// while they are answered and some seconds after is its own (read from /proc). Rounds interleave
// the servers; figures are medians. Run alone: node --conditions=source --import tsx bench/waits.ts
import { type ChildProcess, execSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median, printResults, printTable, type Result } from './lib.js'

type Store = 'sqlite' | 'postgres'
type Kind = 'bare' | 'hub'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)
const WAITERS = intEnv('BENCH_WAITERS', 10_000)
const SPREAD = intEnv('BENCH_WAIT_TOPICS', 100)
const ROUNDS = intEnv('BENCH_ROUNDS', 5)
const SETTLE_MS = intEnv('BENCH_WAITS_SETTLE_MS', 10_000)
const WAIT_SECONDS = 600
/** Connections opened at once, within the listen backlog. */
const OPEN_BATCH = 250
const log = (msg: string) => process.stderr.write(`[waits] ${msg}\n`)
const self = fileURLToPath(import.meta.url)

// ---- the servers (child processes) ---------------------------------------------------------

interface Ready {
  port: number
}
type Command = { cmd: 'waiting' } | { cmd: 'stop' }

/** The bare wait server: parked replies per topic, answered by `POST /move/:topic`. */
async function serveBare(): Promise<Ready & { waiting: () => number; stop: () => Promise<void> }> {
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ logger: false })
  const parked = new Map<string, Set<{ send: (body: unknown) => unknown }>>()
  const versions = new Map<string, number>()
  let waiting = 0
  app.get<{ Params: { topic: string } }>('/wait/:topic', (req, reply) => {
    const { topic } = req.params
    let set = parked.get(topic)
    if (!set) {
      set = new Set()
      parked.set(topic, set)
    }
    const entry = { send: (body: unknown) => reply.send(body) }
    set.add(entry)
    waiting++
    reply.raw.once('close', () => {
      if (set.delete(entry)) waiting--
    })
  })
  app.post<{ Params: { topic: string } }>('/move/:topic', async (req) => {
    const { topic } = req.params
    const version = (versions.get(topic) ?? 1) + 1
    versions.set(topic, version)
    const set = parked.get(topic)
    parked.delete(topic)
    for (const entry of set ?? []) {
      waiting--
      entry.send({ topic, version, changed: true })
    }
    return { topic, version }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address() as net.AddressInfo
  return { port: address.port, waiting: () => waiting, stop: () => app.close() }
}

async function serveHub(
  store: Store,
): Promise<Ready & { waiting: () => number; stop: () => Promise<void> }> {
  const { loadConfig, startHub } = await import('@baton/hub')
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-bench-waits-'))
  let dropDb: (() => Promise<void>) | undefined
  let url: string | undefined
  if (store === 'postgres') {
    const base = env.BENCH_PG_URL ?? env.DATABASE_URL
    if (!base) throw new Error('postgres needs BENCH_PG_URL or DATABASE_URL')
    const { default: pg } = await import('pg')
    const name = `bench_waits_${randomBytes(6).toString('hex')}`
    const admin = new pg.Client({ connectionString: base })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    const u = new URL(base)
    u.pathname = `/${name}`
    url = u.toString()
    dropDb = async () => {
      const c = new pg.Client({ connectionString: base })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    }
  }
  const hub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: path.join(dir, 'hub'),
      BATON_LOG_LEVEL: 'silent',
      BATON_HANDOFF_DAILY_QUOTA: '1000000000',
      BATON_WAIT_MAX_PER_TOPIC: String(WAITERS),
      BATON_WAIT_MAX_PER_ADDRESS: String(WAITERS + 100),
      BATON_MAX_CONNECTIONS_PER_ADDRESS: '0',
      // Opening 10,000 waits takes a while on a loaded machine; none may time out before the move.
      BATON_HANDOFF_MAX_WAIT_SECONDS: String(WAIT_SECONDS),
      // The embedded compute runtime is not what this measures (and its workers cost memory).
      BATON_COMPUTE_EMBEDDED: 'false',
      ...(url
        ? { DATABASE_URL: url, BATON_HUB_KEY_SECRET: 'the hub key secret of bench hubs' }
        : {}),
    }),
  )
  return {
    port: Number(new URL(hub.url).port),
    waiting: () => hub.ctx.waits.waiting,
    stop: async () => {
      await hub.stop()
      await dropDb?.()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

async function serveChild(kind: Kind, store: Store): Promise<void> {
  const server = kind === 'bare' ? await serveBare() : await serveHub(store)
  process.on('message', (msg: Command) => {
    if (msg.cmd === 'waiting') process.send?.({ waiting: server.waiting() })
    else if (msg.cmd === 'stop') void server.stop().then(() => process.exit(0))
  })
  process.send?.({ port: server.port } satisfies Ready)
}

// ---- the parent: client, passes, figures ---------------------------------------------------

/** A server child: its port, its pid (for /proc) and its count of parked waits. */
interface Child {
  port: number
  pid: number
  waiting(): Promise<number>
  stop(): Promise<void>
}

async function startChild(kind: Kind, store: Store): Promise<Child> {
  // Each child holds one socket per waiter; its soft descriptor limit is raised to the hard one.
  const args = ['--conditions=source', '--import', 'tsx', self, '--serve', kind, store]
  const child: ChildProcess = spawn(
    '/bin/sh',
    ['-c', 'ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"', process.execPath, ...args],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
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
  openRss: number
  peakRss: number
  afterRss: number
}

/** One pass: a fresh server, `WAITERS` waiters over `topics` topics, the moves, the answers. */
async function pass(kind: Kind, store: Store, topics: number): Promise<Pass> {
  const child = await startChild(kind, store)
  try {
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
    return { openMs, wakeMs, openRss, peakRss, afterRss }
  } finally {
    await child.stop()
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

export async function run(): Promise<Result[]> {
  checkDescriptors()
  const stores = (env.BENCH_STORES?.split(',') as Store[] | undefined) ?? ['sqlite']
  const results: Result[] = []
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
        for (const kind of ['bare', 'hub'] as const) {
          const p = await pass(kind, store, shape.topics)
          const key = `${kind}|${shape.label}`
          samples.set(key, [...(samples.get(key) ?? []), p])
          log(
            `${store} round ${round} ${shape.label} ${kind}: open ${p.openMs.toFixed(0)} ms, wake ${p.wakeMs.toFixed(0)} ms, rss open ${p.openRss.toFixed(0)} peak ${p.peakRss.toFixed(0)} after ${p.afterRss.toFixed(0)} MiB`,
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
          open: Math.round(of('hub', 'openRss')),
          peak: Math.round(of('hub', 'peakRss')),
          after: Math.round(of('hub', 'afterRss')),
          bareOpen: Math.round(of('bare', 'openRss')),
          bareAfter: Math.round(of('bare', 'afterRss')),
        },
      })
      for (const kind of ['bare', 'hub'] as const) {
        rows.push({
          store,
          shape: shape.label,
          server: kind,
          'open ms': Math.round(of(kind, 'openMs')),
          'wake ms': Math.round(of(kind, 'wakeMs')),
          'rss open': Math.round(of(kind, 'openRss')),
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

if (process.argv[2] === '--serve') {
  await serveChild(process.argv[3] as Kind, (process.argv[4] ?? 'sqlite') as Store)
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
