// What the shape of a request body costs the hub's main thread. A built hub runs as its own
// process; each route is sent the costliest bodies that fit its limit (deep, wide, many small
// objects, many distinct keys, long strings, escapes, numbers), one at a time, and the main
// thread's CPU per request is read from /proc (utime + stime of the hub's first thread). Then
// four such requests are kept in flight while /healthz is probed, in windows interleaved with
// idle ones, and the probes' p99 under load is set beside the idle p99 of the same run.
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { contentDigest, createIdentity, type Identity, SignedClient } from '@baton/client'
import { fmt, median, printResults, printTable, quantile, type Result } from './lib.js'
import {
  type Answer,
  closeConnections,
  mainThreadCpuMs,
  probe,
  send,
  signedHeaders,
  startHubProcess,
} from './served.js'

const env = process.env
/** Requests per body when measuring one at a time. */
const REPEATS = Number(env.BENCH_BODY_REPEATS ?? 12)
/** Length of each idle or loaded window of /healthz probes, in ms. */
const WINDOW_MS = Number(env.BENCH_BODY_WINDOW_MS ?? 4000)
/** Loaded and idle windows per route, alternating. */
const WINDOWS = Number(env.BENCH_BODY_WINDOWS ?? 2)
const IN_FLIGHT = 4

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
  /** The body's JSON text around a value of the shape (sent by `principal`), and its room. */
  wrap(value: string, principal: string): string
  room: number
  /** Headers beside the signature (A2A-Version). */
  headers?: Record<string, string>
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
  {
    // A2A SendMessage addressed to the sender itself: the value rides as a data part.
    name: 'A2A SendMessage, signed (1 MiB)',
    method: 'POST',
    path: '/v1/a2a',
    limit: 1024 * 1024,
    wrap: (v, principal) =>
      `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"tenant":"${principal}","message":{"messageId":"bench-bodies","role":"ROLE_USER","parts":[{"data":${v}}]},"configuration":{"returnImmediately":true}}}`,
    room: 1024 * 1024 - 260,
    headers: { 'a2a-version': '1.0' },
    signed: true,
    inFlight: true,
  },
  {
    // A compute job whose input is the value (the hub runs no compute workers here).
    name: 'compute submit, signed (1 MiB)',
    method: 'POST',
    path: '/v1/compute/jobs',
    limit: 1024 * 1024,
    wrap: (v) =>
      `{"language":"json-expr-v1","program":{"var":"a"},"input":{"a":${v}},"idempotencyKey":"bench-bodies-job"}`,
    room: 1024 * 1024 - 120,
    signed: true,
    inFlight: true,
  },
]

function bodyFor(route: Route, shape: string, principal: string): Buffer {
  return Buffer.from(route.wrap(shapes(route.room)[shape]!, principal))
}

/** The headers of one request of `route` as `id`, its body's digest computed once. */
function headersFor(port: number, id: Identity, route: Route, digest: string) {
  if (!route.signed) return route.headers ?? {}
  return signedHeaders(port, id, route.method, route.path, digest, route.headers)
}

export async function run(): Promise<Result[]> {
  const hub = await startHubProcess('bodies')
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
        const body = bodyFor(route, shape, id.principal)
        const digest = contentDigest(body)
        const once = () =>
          send(port, route.method, route.path, body, headersFor(port, id, route, digest))
        for (let i = 0; i < 2; i++) await once()
        const times: number[] = []
        let answer: Answer | undefined
        let cpu = 0
        for (let i = 0; i < REPEATS; i++) {
          const headers = headersFor(port, id, route, digest)
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
      const body = bodyFor(route, shape, id.principal)
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
            const headers = headersFor(port, id, route, digest)
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
    closeConnections()
    await hub.stop()
  }
  return results
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printResults(await run())
}
