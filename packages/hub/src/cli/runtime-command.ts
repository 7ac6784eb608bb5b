import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { SignedClient, TransferClient } from '@baton/client'
import {
  BatonError,
  type ClaimedComputeJobView,
  parseWholeNumber,
  type TransferView,
} from '@baton/protocol'
import { createComputePool } from '../compute/pool.js'
import { ComputeRunner } from '../compute/runner.js'
import type { HandedTrace } from '../telemetry/trace-context.js'
import { type Io, UsageError } from './io.js'
import { continuing, traceHeaders, traceOfCommand, traceOfView } from './trace.js'

const USAGE = `baton runtime --hub URL --identity FILE --tier T --exec "<command>" [options]
baton runtime --hub URL --identity FILE --compute json-expr-v1 [--workers N]

A destination runtime (seed 004): claims provisioned transfers of its tier, pulls the snapshot and
verifies its checksum, pushes, waits for activation, then runs --exec as a child process with the
snapshot in a 0600 file named by BATON_SNAPSHOT_FILE. It meters wall time x rate plus what the
child reports, reports usage every --report-interval ms, and stops the child (SIGTERM, then
SIGKILL) when the transfer turns insolvent or is terminated.

The child may report extra usage by printing lines to stdout:
  BATON_USAGE {"amountMicros": 1500}

Options:
  --report-interval MS   how often usage is reported (default 1000)
  --poll-interval MS     how often a new transfer is looked for (default 1000)
  --state-dir DIR        where snapshot files are written (default: the system temp directory)
  --kill-after MS        SIGKILL this long after SIGTERM (default 3000)
  --once                 exit after the first transfer ends

With --compute LANGUAGES (comma-separated; the hub accepts json-expr-v1) it is a compute runtime
instead (seed 000): it heartbeats so discovery's runtimeAvailability lists it, claims queued
jobs of those languages under a lease, evaluates them on --workers worker threads (default 2)
under every bound, renews the lease while a job runs and sends the result. A runtime that dies
loses its lease; the hub gives the job to another runtime, and a late result is refused.
  --heartbeat-interval MS  how often the runtime says it is live (default 3000)
  --renew-interval MS      how often a running job's lease is renewed (default 5000)
  --timeout-ms MS          wall time of one evaluation (default 1000)
  --memory-mb MB           heap of one worker thread (default 64)

The hub URL may also come from BATON_HUB, the identity file from BATON_IDENTITY.`

interface Options {
  tier: string
  exec: string
  reportIntervalMs: number
  pollIntervalMs: number
  killAfterMs: number
  stateDir: string | undefined
  once: boolean
  hub: string
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t)
        resolve()
      },
      { once: true },
    )
  })

/** `baton runtime`: the destination runtime of session transfers (seed 004). */
export async function runtimeCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      hub: { type: 'string' },
      identity: { type: 'string' },
      tier: { type: 'string' },
      exec: { type: 'string' },
      'report-interval': { type: 'string' },
      'poll-interval': { type: 'string' },
      'kill-after': { type: 'string' },
      'state-dir': { type: 'string' },
      once: { type: 'boolean' },
      compute: { type: 'string' },
      workers: { type: 'string' },
      'heartbeat-interval': { type: 'string' },
      'renew-interval': { type: 'string' },
      'timeout-ms': { type: 'string' },
      'memory-mb': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  if (values.help) {
    io.stdout(USAGE)
    return 0
  }
  const hub = values.hub ?? process.env.BATON_HUB
  const identity = values.identity ?? process.env.BATON_IDENTITY
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  if (!identity) throw new UsageError('--identity FILE is required (or set BATON_IDENTITY)')
  if (values.compute !== undefined) return computeRuntime(hub, identity, values, io)
  if (!values.tier) throw new UsageError('--tier is required')
  if (!values.exec) throw new UsageError('--exec "<command>" is required')
  const ms = (v: string | undefined, name: string, fallback: number) => {
    if (v === undefined) return fallback
    const n = parseWholeNumber(v, { min: 10 })
    if (n === undefined) throw new UsageError(`--${name} must be whole milliseconds, at least 10`)
    return n
  }
  const opts: Options = {
    hub,
    tier: values.tier,
    exec: values.exec,
    reportIntervalMs: ms(values['report-interval'], 'report-interval', 1000),
    pollIntervalMs: ms(values['poll-interval'], 'poll-interval', 1000),
    killAfterMs: ms(values['kill-after'], 'kill-after', 3000),
    stateDir: values['state-dir'],
    once: values.once ?? false,
  }
  const signed = await SignedClient.fromFile(new URL('/.well-known/agent-net', hub).href, identity)
  const runtime = new Runtime(signed, opts, io)
  const stop = () => runtime.shutdown()
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  try {
    await runtime.run()
  } finally {
    process.off('SIGTERM', stop)
    process.off('SIGINT', stop)
  }
  return 0
}

/** One runtime process: a claim loop and one handler per transfer it holds. */
class Runtime {
  /** This process; a second process of the same runtime has another instance id. */
  readonly instance = `rt-${randomBytes(9).toString('base64url')}`
  private readonly handling = new Map<string, Promise<void>>()
  private readonly children = new Set<ChildProcess>()
  private readonly abort = new AbortController()
  /** With --once: a transfer has been handled to its end. */
  private doneOnce = false

  /** The claim loop's client, in the trace this process was started in (TRACEPARENT), if any. */
  private readonly transfers: TransferClient

  constructor(
    private readonly signed: SignedClient,
    private readonly opts: Options,
    private readonly io: Io,
  ) {
    this.transfers = new TransferClient(continuing(signed, traceOfCommand(undefined)))
  }

  private log(event: string, data: Record<string, unknown> = {}): void {
    this.io.stderr(
      JSON.stringify({ at: new Date().toISOString(), event, instance: this.instance, ...data }),
    )
  }

  shutdown(): void {
    this.abort.abort()
    for (const child of this.children) this.kill(child)
  }

  async run(): Promise<void> {
    this.log('runtime.started', { tier: this.opts.tier })
    const signal = this.abort.signal
    // Resume what this runtime already holds (a restart), then claim new work.
    try {
      for (const state of ['provisioned', 'pushed', 'active'] as const) {
        const { transfers } = await this.transfers.list({ role: 'runtime', state })
        for (const t of transfers) this.handle(t)
      }
      this.log('runtime.resumed', { transfers: this.handling.size })
    } catch (error) {
      this.log('runtime.resume_failed', { error: describe(error) })
    }
    while (!signal.aborted) {
      if (this.opts.once && this.handling.size === 0 && this.doneOnce) break
      try {
        const { transfer } = await this.transfers.claimNext(this.opts.tier)
        if (transfer) {
          this.log('transfer.claimed', { transferId: transfer.transferId })
          this.handle(transfer)
          continue
        }
      } catch (error) {
        this.log('runtime.claim_failed', { error: describe(error) })
      }
      await sleep(this.opts.pollIntervalMs, signal)
    }
    await Promise.allSettled([...this.handling.values()])
    this.log('runtime.stopped')
  }

  private handle(t: TransferView): void {
    if (this.handling.has(t.transferId)) return
    const work = this.runTransfer(t)
      .catch((error) =>
        this.log('transfer.failed', { transferId: t.transferId, error: describe(error) }),
      )
      .finally(() => {
        this.handling.delete(t.transferId)
        this.doneOnce = true
      })
    this.handling.set(t.transferId, work)
  }

  private async runTransfer(initial: TransferView): Promise<void> {
    const id = initial.transferId
    const signal = this.abort.signal
    // Everything this runtime sends about the transfer continues the trace the hub handed it
    // (the provisioning's, else the staging's), so the owner's work and ours are one trace. A
    // listing (a restart's resume) carries no events and so no trace: the transfer read has it.
    const handed =
      traceOfView(initial) ?? traceOfView(await this.transfers.get(id).catch(() => undefined))
    const transfers = new TransferClient(continuing(this.signed, handed))
    let t = initial
    let snapshotFile: string | undefined
    let dir: string | undefined
    try {
      if (t.state === 'provisioned' || t.state === 'pushed' || t.state === 'active') {
        // Pull the snapshot and recompute its checksum here (seed 004: both sides re-hash).
        const pulled = await transfers.fetchSnapshot(id)
        this.log('snapshot.pulled', { transferId: id, verified: pulled.verified })
        if (t.state === 'provisioned') {
          // A mismatch is pushed as computed, so the hub refuses it and records the refusal.
          t = await transfers.push(id, pulled.computed)
          this.log('transfer.pushed', { transferId: id })
        }
        if (!pulled.verified) return
        dir = await mkdtemp(path.join(this.opts.stateDir ?? tmpdir(), 'baton-transfer-'))
        snapshotFile = path.join(dir, 'snapshot.json')
        await writeFile(snapshotFile, JSON.stringify(pulled.snapshot), { mode: 0o600 })
      }
      while (t.state === 'pushed' && !signal.aborted) {
        t = await transfers.wait(id, 20, t.version)
      }
      if (t.state !== 'active' || signal.aborted || !snapshotFile) {
        this.log('transfer.not_started', { transferId: id, state: t.state })
        return
      }
      try {
        await transfers.lease(id, this.instance)
      } catch (error) {
        if (error instanceof BatonError && error.code === 'transfer_lease_held') {
          // seed 004: started twice, the runtime does not run a transfer twice.
          this.log('transfer.lease_held', { transferId: id })
          return
        }
        throw error
      }
      await this.meter(transfers, t, snapshotFile)
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true })
    }
  }

  /** Runs the agent and meters it until it exits, the budget runs out or the transfer ends. */
  private async meter(
    transfers: TransferClient,
    t: TransferView,
    snapshotFile: string,
  ): Promise<void> {
    const id = t.transferId
    const rate = BigInt(t.rateMicrosPerSecond ?? 0)
    const child = spawn(this.opts.exec, {
      shell: true,
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        BATON_SNAPSHOT_FILE: snapshotFile,
        BATON_TRANSFER_ID: id,
        BATON_HUB: this.opts.hub,
      },
    })
    this.children.add(child)
    const startedAt = Date.now()
    this.log('agent.started', { transferId: id, pid: child.pid })
    let childReported = 0n
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /^BATON_USAGE\s+(\{.*\})\s*$/.exec(line)
      if (!m) {
        this.io.stdout(line)
        return
      }
      try {
        const amount = (JSON.parse(m[1]!) as { amountMicros?: unknown }).amountMicros
        if (typeof amount === 'number' && Number.isSafeInteger(amount) && amount >= 0) {
          childReported += BigInt(amount)
        }
      } catch {
        this.log('agent.bad_usage_line', { transferId: id })
      }
    })
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    let running = true
    void exited.then(() => {
      running = false
    })
    // Watch the transfer so a termination stops the child without waiting for a report.
    const watch = new AbortController()
    let version = t.version
    let ended = false
    const watcher = (async () => {
      while (running && !watch.signal.aborted) {
        try {
          const w = await transfers.wait(id, 10, version)
          version = w.version
          if (w.state === 'insolvent' || w.state === 'terminated') {
            ended = true
            this.log('transfer.stop', { transferId: id, state: w.state })
            this.kill(child)
            return
          }
        } catch (error) {
          this.log('transfer.wait_failed', { transferId: id, error: describe(error) })
          await sleep(this.opts.reportIntervalMs, watch.signal)
        }
      }
    })()
    let wallReported = 0n
    let childCharged = 0n
    let seq = 0
    const report = async (): Promise<boolean> => {
      // seed 004: wall time x rate in integers (micro-units per second x ms / 1000).
      const wallOwed = (BigInt(Date.now() - startedAt) * rate) / 1000n
      const childNow = childReported
      const amount = wallOwed - wallReported + (childNow - childCharged)
      if (amount <= 0n) return false
      seq++
      const key = `${id}:${this.instance}:${seq}`
      for (let attempt = 0; ; attempt++) {
        try {
          const answer = await transfers.reportUsage(id, {
            idempotencyKey: key,
            amountMicros: Number(amount),
          })
          wallReported = wallOwed
          childCharged = childNow
          this.log('usage.reported', {
            transferId: id,
            amountMicros: Number(amount),
            spentMicros: answer.spentMicros,
            state: answer.state,
          })
          return answer.stop
        } catch (error) {
          // The same key on retry: a lost answer never charges twice.
          if (error instanceof BatonError && error.status < 500) {
            this.log('usage.refused', { transferId: id, code: error.code })
            return true
          }
          if (attempt >= 5) throw error
          await sleep(200 * (attempt + 1))
        }
      }
    }
    try {
      while (running && !ended && !this.abort.signal.aborted) {
        await Promise.race([sleep(this.opts.reportIntervalMs), exited])
        if (await report()) {
          this.log('transfer.stop', { transferId: id, reason: 'usage answer' })
          break
        }
        if (running) {
          await transfers.lease(id, this.instance).catch((error) => {
            this.log('lease.renew_failed', { transferId: id, error: describe(error) })
          })
        }
      }
      this.kill(child)
      await exited
      await report().catch(() => false)
      this.log('agent.stopped', {
        transferId: id,
        pid: child.pid,
        code: child.exitCode,
        signal: child.signalCode,
      })
    } finally {
      watch.abort()
      this.children.delete(child)
      await watcher
    }
  }

  /** SIGTERM to the child's process group, then SIGKILL if it is still there. */
  private kill(child: ChildProcess): void {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
    const pid = child.pid
    const send = (sig: NodeJS.Signals) => {
      try {
        process.kill(-pid, sig)
      } catch {
        // already gone
      }
    }
    send('SIGTERM')
    const timer = setTimeout(() => send('SIGKILL'), this.opts.killAfterMs)
    timer.unref()
    child.once('exit', () => clearTimeout(timer))
  }
}

function describe(error: unknown): string {
  if (error instanceof BatonError) return `${error.code}: ${error.message}`
  return (error as Error)?.message ?? String(error)
}

const count = (v: string | undefined, name: string, fallback: number, min = 1) => {
  if (v === undefined) return fallback
  const n = parseWholeNumber(v, { min })
  if (n === undefined) throw new UsageError(`--${name} must be a whole number, at least ${min}`)
  return n
}

/** `baton runtime --compute`: a remote compute runtime over the signed API (seed 000). */
async function computeRuntime(
  hub: string,
  identity: string,
  values: Record<string, string | boolean | undefined>,
  io: Io,
): Promise<number> {
  const str = (name: string) => values[name] as string | undefined
  const languages = String(values.compute)
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean)
  if (languages.length === 0) throw new UsageError('--compute needs a language, e.g. json-expr-v1')
  const workers = count(str('workers'), 'workers', 2)
  const signed = await SignedClient.fromFile(new URL('/.well-known/agent-net', hub).href, identity)
  const own = traceOfCommand(undefined)
  // A job's lease renewals and its result continue the trace of its submit, which its claim
  // handed on; the runtime's own heartbeats and claims, the trace it was started in.
  const jobTraces = new Map<string, HandedTrace | undefined>()
  const send = async <T>(
    method: string,
    path: string,
    body?: object,
    trace: HandedTrace | undefined = own,
  ): Promise<T> => {
    const res = await signed.request<T>(method, path, body, traceHeaders(trace))
    if (res.status >= 400) throw BatonError.fromBody(res.body, res.status)
    return res.body as T
  }
  const pool = createComputePool({
    size: workers,
    worker: {
      timeoutMs: count(str('timeout-ms'), 'timeout-ms', 1000),
      memoryMb: count(str('memory-mb'), 'memory-mb', 64, 16),
    },
  })
  const log = (event: string, data: Record<string, unknown> = {}) =>
    io.stderr(JSON.stringify({ at: new Date().toISOString(), event, ...data }))
  const runner = new ComputeRunner(
    {
      heartbeat: (runtimeId, langs) =>
        send('POST', '/v1/compute/runtimes', { runtimeId, languages: langs }).then(() => {}),
      claim: (runtimeId) =>
        send<{ job: ClaimedComputeJobView | null }>(
          'POST',
          `/v1/compute/runtimes/${runtimeId}/claim`,
        ).then(({ job }) => {
          if (job) jobTraces.set(job.jobId, traceOfView(job) ?? own)
          return job
        }),
      renew: (jobId, leaseId) =>
        send('POST', `/v1/compute/jobs/${jobId}/lease`, { leaseId }, jobTraces.get(jobId)).then(
          () => {},
        ),
      complete: (jobId, result) =>
        send('POST', `/v1/compute/jobs/${jobId}/result`, result, jobTraces.get(jobId))
          .then(() => {})
          .finally(() => jobTraces.delete(jobId)),
      stop: (runtimeId) => send('DELETE', `/v1/compute/runtimes/${runtimeId}`).then(() => {}),
    },
    pool,
    {
      languages,
      concurrency: workers,
      heartbeatMs: count(str('heartbeat-interval'), 'heartbeat-interval', 3000, 10),
      pollMs: count(str('poll-interval'), 'poll-interval', 1000, 10),
      renewMs: count(str('renew-interval'), 'renew-interval', 5000, 10),
      log,
    },
  )
  // runner.stop() runs once however many signals come; it deregisters, so availability drops now.
  const stopped = new Promise<void>((resolve) => {
    const stop = () => void runner.stop().finally(resolve)
    process.once('SIGTERM', stop)
    process.once('SIGINT', stop)
  })
  // The runner's timers do not hold a process open (the hub embeds it); this command must.
  const keepAlive = setInterval(() => {}, 60_000)
  try {
    await runner.start()
    await stopped
  } finally {
    clearInterval(keepAlive)
    await pool.close()
  }
  return 0
}
