// What the shape of a request body costs the hub's main thread. A built hub runs as its own
// process; each route is sent the costliest bodies that fit its limit (deep, wide, many small
// objects, many distinct keys, long strings, escapes, numbers), one at a time, and the main
// thread's CPU per request is read from /proc (utime + stime of the hub's first thread). Then
// four such requests are kept in flight while /healthz is probed, in windows interleaved with
// idle ones, and the probes' p99 under load is set beside the idle p99 of the same run.
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import {
  contentDigest,
  createIdentity,
  defaultComponents,
  type Identity,
  SignedClient,
  signMessage,
} from '@baton/client'
import { fmt, median, printResults, printTable, quantile, type Result } from './lib.js'

const env = process.env
/** Requests per body when measuring one at a time. */
const REPEATS = Number(env.BENCH_BODY_REPEATS ?? 12)
/** Length of each idle or loaded window of /healthz probes, in ms. */
const WINDOW_MS = Number(env.BENCH_BODY_WINDOW_MS ?? 4000)
/** Loaded and idle windows per route, alternating. */
const WINDOWS = Number(env.BENCH_BODY_WINDOWS ?? 2)
const IN_FLIGHT = 4
const PROBE_EVERY_MS = 25

const TICK_MS = 1000 / 100 // USER_HZ: /proc reports CPU time in ticks of 10 ms

const log = (line: string) => process.stderr.write(`${line}\n`)

/** A JSON text of about `size` bytes made of `unit` repeated between `open` and `close`. */
function fill(open: string, close: string, size: number, unit: (i: number) => string): string {
  const parts: string[] = []
  let length = open.length + close.length
  for (let i = 0; ; i++) {
    const u = unit(i)
    const add = u.length + (i > 0 ? 1 : 0)
    if (length + add > size) break
    parts.push(u)
    length += add
  }
  return open + parts.join(',') + close
}

/** The costliest values of each shape whose JSON text is at most `size` bytes. */
function shapes(size: number): Record<string, string> {
  return {
    deep: `${'['.repeat(127)}${']'.repeat(127)}`,
    wide: fill('{', '}', size, (i) => `"k${i.toString(36)}":0`),
    'small objects': fill('[', ']', size, () => '{}'),
    'distinct keys': fill('[', ']', size, (i) => `{"k${i.toString(36)}":0}`),
    'long string': `"${'a'.repeat(size - 2)}"`,
    escapes: `"${'\\u00e9'.repeat(Math.floor((size - 2) / 6))}"`,
    numbers: fill('[', ']', size, (i) => `${i}.25e-3`),
  }
}

interface Route {
  name: string
  method: string
  path: string
  limit: number
  /** The body's JSON text around a value of the shape, and its room for the value. */
  wrap(value: string): string
  room: number
  signed: boolean
  /** Whether four of its worst body are kept in flight beside the probes. */
  inFlight: boolean
}

const ROUTES: Route[] = [
  {
    name: 'handoff create (64 KiB)',
    method: 'POST',
    path: '/services/v1/handoff',
    limit: 64 * 1024,
    wrap: (v) => `{"payload":${v}}`,
    room: 64 * 1024 - 13,
    signed: false,
    inFlight: true,
  },
  {
    // refused by its missing signature before the body is parsed
    name: 'any route, unsigned (1 MiB)',
    method: 'POST',
    path: '/v1/resources',
    limit: 1024 * 1024,
    wrap: (v) => `{"namespace":"n","kind":"k","data":${v}}`,
    room: 1024 * 1024 - 40,
    signed: false,
    inFlight: false,
  },
  {
    name: 'resource create, signed (1 MiB)',
    method: 'POST',
    path: '/v1/resources',
    limit: 1024 * 1024,
    wrap: (v) => `{"namespace":"n","kind":"k","data":${v}}`,
    room: 1024 * 1024 - 40,
    signed: true,
    inFlight: true,
  },
]

async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** The CPU time of a process's main thread so far, in ms. */
function mainThreadCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')
  // Fields after the command name (which is in parentheses and may hold spaces): utime is the
  // 14th field of the line, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

interface Answer {
  status: number
  code?: string
  ms: number
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

function send(
  port: number,
  method: string,
  p: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method,
        path: p,
        headers: {
          ...(body ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const ms = performance.now() - started
          let code: string | undefined
          try {
            code = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code?: string }).code
          } catch {}
          resolve({ status: res.statusCode ?? 0, ...(code ? { code } : {}), ms })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function startHubProcess(): Promise<{
  child: ChildProcess
  port: number
  stop(): Promise<void>
}> {
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-bench-bodies-'))
  const port = await freePort()
  const bin = fileURLToPath(new URL('../packages/hub/bin/baton.mjs', import.meta.url))
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: {
      PATH: env.PATH ?? '',
      BATON_HOST: '127.0.0.1',
      BATON_PORT: String(port),
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'open',
      BATON_QUOTA_REQUESTS_PER_DAY: String(1e9),
      BATON_HANDOFF_DAILY_QUOTA: String(1e9),
      BATON_LOG_LEVEL: 'silent',
      BATON_COMPUTE_EMBEDDED: 'false',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (let i = 0; ; i++) {
    try {
      if ((await send(port, 'GET', '/healthz')).status === 200) break
    } catch {}
    if (i > 200) throw new Error('the hub did not start')
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    child,
    port,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
      await rm(dir, { recursive: true, force: true })
    },
  }
}

function bodyFor(route: Route, shape: string): Buffer {
  return Buffer.from(route.wrap(shapes(route.room)[shape]!))
}

/** Signs one request for `body`, whose Content-Digest is computed once by the caller. */
function signedHeaders(port: number, id: Identity, route: Route, digest: string) {
  const headers: Record<string, string> = {
    accept: 'application/json',
    'content-type': 'application/json',
    'content-digest': digest,
  }
  const signed = signMessage(
    { method: route.method, targetUri: `http://127.0.0.1:${port}${route.path}`, headers },
    {
      privateKey: id.privateKey,
      keyid: id.principal,
      components: defaultComponents(true, headers),
    },
  )
  return { ...headers, 'signature-input': signed.signatureInput, signature: signed.signature }
}

/** Probes /healthz every PROBE_EVERY_MS until `until` resolves; answers the latencies, sorted. */
async function probe(port: number, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = []
  let done = false
  void until.then(() => {
    done = true
  })
  while (!done) {
    const started = performance.now()
    latencies.push((await send(port, 'GET', '/healthz')).ms)
    const rest = PROBE_EVERY_MS - (performance.now() - started)
    if (rest > 0) await new Promise((r) => setTimeout(r, rest))
  }
  return latencies.sort((a, b) => a - b)
}

export async function run(): Promise<Result[]> {
  const hub = await startHubProcess()
  const { port } = hub
  const pid = hub.child.pid!
  const results: Result[] = []
  try {
    const discoveryUrl = `http://127.0.0.1:${port}/.well-known/agent-net`
    const id = createIdentity(discoveryUrl)
    await (await SignedClient.connect(discoveryUrl, id)).me()

    // One body at a time: the main thread's CPU and the answer time per body.
    const rows: Record<string, unknown>[] = []
    const worst = new Map<string, { shape: string; cpuMs: number }>()
    for (const route of ROUTES) {
      for (const shape of Object.keys(shapes(1024))) {
        const body = bodyFor(route, shape)
        const digest = contentDigest(body)
        const once = () =>
          send(
            port,
            route.method,
            route.path,
            body,
            route.signed ? signedHeaders(port, id, route, digest) : {},
          )
        for (let i = 0; i < 2; i++) await once()
        const times: number[] = []
        let answer: Answer | undefined
        let cpu = 0
        for (let i = 0; i < REPEATS; i++) {
          const headers = route.signed ? signedHeaders(port, id, route, digest) : {}
          const before = mainThreadCpuMs(pid)
          answer = await send(port, route.method, route.path, body, headers)
          cpu += mainThreadCpuMs(pid) - before
          times.push(answer.ms)
        }
        const cpuMs = cpu / REPEATS
        rows.push({
          route: route.name,
          body: shape,
          bytes: body.length,
          answer: `${answer!.status} ${answer!.code ?? ''}`.trim(),
          'main thread ms': cpuMs,
          'answer ms p50': median(times),
        })
        if (cpuMs >= (worst.get(route.name)?.cpuMs ?? -1)) worst.set(route.name, { shape, cpuMs })
      }
    }
    console.log('')
    printTable(['route', 'body', 'bytes', 'answer', 'main thread ms', 'answer ms p50'], rows)

    // Four of each route's worst body in flight, in windows interleaved with idle ones.
    for (const route of ROUTES) {
      if (!route.inFlight) continue
      const { shape, cpuMs } = worst.get(route.name)!
      const body = bodyFor(route, shape)
      const digest = contentDigest(body)
      const idle: number[] = []
      const loaded: number[] = []
      const loads: number[] = []
      let sent = 0
      for (let w = 0; w < WINDOWS; w++) {
        idle.push(...(await probe(port, new Promise((r) => setTimeout(r, WINDOW_MS)))))
        const deadline = performance.now() + WINDOW_MS
        const loop = async () => {
          while (performance.now() < deadline) {
            const headers = route.signed ? signedHeaders(port, id, route, digest) : {}
            await send(port, route.method, route.path, body, headers)
            sent++
          }
        }
        const load = Promise.all(Array.from({ length: IN_FLIGHT }, loop))
        loaded.push(...(await probe(port, load)))
        loads.push(loadavg()[0]!)
      }
      idle.sort((a, b) => a - b)
      loaded.sort((a, b) => a - b)
      const idleP99 = quantile(idle, 0.99)
      const loadedP99 = quantile(loaded, 0.99)
      results.push({
        name: `bodies: /healthz p99, ${IN_FLIGHT} x ${shape} in flight, ${route.name}`,
        baseline: idleP99,
        value: loadedP99,
        ratio: loadedP99 / idleP99,
        unit: 'ms',
        detail: {
          idle_p50: quantile(idle, 0.5),
          loaded_p50: quantile(loaded, 0.5),
          probes: loaded.length,
          bodies_per_s: sent / ((WINDOWS * WINDOW_MS) / 1000),
          body_main_thread_ms: cpuMs,
          load1: loads.map((l) => fmt(l)).join('/'),
        },
      })
      log(
        `${route.name}: ${shape} in flight: /healthz p50 ${fmt(quantile(loaded, 0.5))} ms, p99 ${fmt(loadedP99)} ms (idle ${fmt(quantile(idle, 0.5))} / ${fmt(idleP99)} ms), load ${loads.map((l) => fmt(l)).join('/')}`,
      )
    }
  } finally {
    agent.destroy()
    await hub.stop()
  }
  return results
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printResults(await run())
}
