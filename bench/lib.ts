// Shared bench tools: an HTTP load generator (in this process or in a child process), medians,
// and a table printer. Run as a child (`fork` with `--import tsx`) it serves load jobs over IPC.
import { type ChildProcess, fork } from 'node:child_process'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { type Identity, signRequest } from '@baton/client'

/** One line of a scenario's result: the scenario's figure beside its same-run baseline. */
export interface Result {
  name: string
  baseline: number
  value: number
  /** value / baseline; above 1 means better than the baseline when `unit` is a rate. */
  ratio: number
  unit: string
  /** Extra medians worth printing (latencies, batch sizes), by label. */
  detail?: Record<string, number | string>
}

/** A scenario module: `bench/<name>.ts` exports this and the runner calls it. */
export type Scenario = (opts?: Record<string, unknown>) => Promise<Result[]>

/** One HTTP request of a load job; the body is already serialized. */
export interface LoadRequest {
  method: string
  path: string
  headers?: Record<string, string>
  body?: string
}

/** A load job: every request is sent once, at most `concurrency` at a time. */
export interface LoadJob {
  origin: string
  requests: LoadRequest[]
  concurrency: number
  /** Answer every response body (in request order), e.g. to read created tokens. */
  keepBodies?: boolean
}

/** What a load job measured. Latencies are in milliseconds. */
export interface LoadResult {
  count: number
  elapsedMs: number
  perSecond: number
  p50: number
  p99: number
  /** How many responses had each status code. */
  statuses: Record<string, number>
  /** Requests that failed without a response (connection errors). */
  errors: number
  bodies?: string[]
}

/** Sends every request of `job` over keep-alive connections and measures throughput. */
export async function runLoad(job: LoadJob): Promise<LoadResult> {
  const url = new URL(job.origin)
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency })
  const n = job.requests.length
  const latencies = new Float64Array(n)
  const bodies: string[] | undefined = job.keepBodies ? new Array<string>(n) : undefined
  const statuses: Record<string, number> = {}
  let errors = 0
  let next = 0

  const send = (req: LoadRequest, i: number) =>
    new Promise<void>((resolve) => {
      const started = performance.now()
      const headers: Record<string, string | number> = { ...req.headers }
      if (req.body !== undefined) {
        headers['content-type'] ??= 'application/json'
        headers['content-length'] = Buffer.byteLength(req.body)
      }
      const cr = http.request(
        { agent, host: url.hostname, port: url.port, method: req.method, path: req.path, headers },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => {
            if (bodies) chunks.push(c)
          })
          res.on('end', () => {
            latencies[i] = performance.now() - started
            const code = String(res.statusCode)
            statuses[code] = (statuses[code] ?? 0) + 1
            if (bodies) bodies[i] = Buffer.concat(chunks).toString('utf8')
            resolve()
          })
        },
      )
      cr.on('error', () => {
        latencies[i] = performance.now() - started
        errors++
        resolve()
      })
      cr.end(req.body)
    })

  const worker = async () => {
    while (next < n) {
      const i = next++
      await send(job.requests[i]!, i)
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: Math.min(job.concurrency, n) }, worker))
  const elapsedMs = performance.now() - started
  agent.destroy()
  latencies.sort()
  return {
    count: n,
    elapsedMs,
    perSecond: (n / elapsedMs) * 1000,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    statuses,
    errors,
    ...(bodies ? { bodies } : {}),
  }
}

/** Runs load jobs somewhere: in this process, or in a child so it does not share the event loop. */
export interface LoadClient {
  where: 'inline' | 'child'
  run(job: LoadJob): Promise<LoadResult>
  close(): Promise<void>
}

/**
 * Starts a load client. `child` (the default) forks this file as a separate Node process, so the
 * client's CPU is not taken from the server's event loop; `inline` runs in this process.
 */
export async function startLoadClient(where: 'inline' | 'child' = 'child'): Promise<LoadClient> {
  if (where === 'inline') return { where, run: runLoad, close: async () => {} }
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve-load'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`load client exited early with ${code}`)))
  })
  let queue = Promise.resolve()
  return {
    where,
    run(job) {
      const answer = queue.then(
        () =>
          new Promise<LoadResult>((resolve, reject) => {
            const onExit = (code: number | null) => reject(new Error(`load client exited: ${code}`))
            child.once('exit', onExit)
            child.once('message', (msg) => {
              child.off('exit', onExit)
              const m = msg as { ok: true; result: LoadResult } | { ok: false; error: string }
              if (m.ok) resolve(m.result)
              else reject(new Error(m.error))
            })
            child.send(job)
          }),
      )
      queue = answer.then(
        () => {},
        () => {},
      )
      return answer
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.removeAllListeners('exit')
        child.once('exit', () => resolve())
        child.disconnect()
      }),
  }
}

/** The q-quantile of ascending `sorted` values (nearest rank). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[i]!
}

/** The median of some values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Rounds for display: three significant figures below 100, whole numbers above. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  if (Math.abs(n) >= 100) return Math.round(n).toString()
  return Number(n.toPrecision(3)).toString()
}

/** Prints rows as an aligned text table with the given column order. */
export function printTable(columns: string[], rows: Record<string, unknown>[]): void {
  const cell = (v: unknown) => (typeof v === 'number' ? fmt(v) : v === undefined ? '' : String(v))
  const cells = rows.map((r) => columns.map((c) => cell(r[c])))
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)))
  const line = (parts: string[]) =>
    parts.map((p, i) => (i === 0 ? p.padEnd(widths[i]!) : p.padStart(widths[i]!))).join('  ')
  console.log(line(columns))
  console.log(line(widths.map((w) => '-'.repeat(w))))
  for (const r of cells) console.log(line(r))
}

/** Prints scenario results as one table, with each result's details after it. */
export function printResults(results: Result[]): void {
  printTable(
    ['scenario', 'baseline', 'baton', 'ratio', 'unit'],
    results.map((r) => ({
      scenario: r.name,
      baseline: r.baseline,
      baton: r.value,
      ratio: r.ratio.toFixed(2),
      unit: r.unit,
    })),
  )
  for (const r of results) {
    if (!r.detail) continue
    const parts = Object.entries(r.detail).map(
      ([k, v]) => `${k}=${typeof v === 'number' ? fmt(v) : v}`,
    )
    console.log(`  ${r.name}: ${parts.join(' ')}`)
  }
}

// As a forked child: answer each load job sent over IPC with its result.
if (process.argv.includes('--serve-load') && process.send) {
  process.on('message', (job: LoadJob) => {
    runLoad(job).then(
      (result) => process.send?.({ ok: true, result }),
      (error: unknown) => process.send?.({ ok: false, error: String(error) }),
    )
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ ready: true })
}

/** Throws unless every request of a load answered `status` with no connection error. */
export function assertAllAnswered(what: string, load: LoadResult, status: number): void {
  const ok = load.statuses[String(status)] ?? 0
  if (ok !== load.count || load.errors > 0) {
    throw new Error(
      `${what}: ${ok}/${load.count} answered ${status}; statuses ${JSON.stringify(load.statuses)}, ` +
        `${load.errors} connection errors`,
    )
  }
}

/** One request signed now as `id` (RFC 9421), in the shape the load client sends. */
export function signedLoadRequest(
  origin: string,
  id: Identity,
  method: string,
  p: string,
  body?: unknown,
): LoadRequest {
  const req = signRequest({
    method,
    url: origin + p,
    body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
    headers: { accept: 'application/json' },
    privateKey: id.privateKey,
    keyid: id.principal,
  })
  return {
    method,
    path: p,
    headers: req.headers,
    ...(req.body ? { body: Buffer.from(req.body).toString('utf8') } : {}),
  }
}
