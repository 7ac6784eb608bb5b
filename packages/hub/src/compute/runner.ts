import { randomBytes } from 'node:crypto'
import { BatonError, type ClaimedComputeJobView, type ComputeResultInput } from '@baton/protocol'
import type { ComputePool } from './pool.js'

/** What a runtime needs of the hub: in-process calls for the embedded one, signed HTTP remotely. */
export interface ComputeRuntimeApi {
  heartbeat(runtimeId: string, languages: string[]): Promise<void>
  claim(runtimeId: string): Promise<ClaimedComputeJobView | null>
  renew(jobId: string, leaseId: string): Promise<void>
  complete(jobId: string, result: ComputeResultInput): Promise<void>
  stop(runtimeId: string): Promise<void>
}

export interface ComputeRunnerOptions {
  languages: string[]
  /** Jobs run at once (the pool's size is the natural choice). */
  concurrency: number
  heartbeatMs: number
  /** How often an idle slot looks for work when no wake-up comes. */
  pollMs: number
  /** How often a running job's lease is renewed. */
  renewMs: number
  /** Subscribes to "new work" hints; the answer unsubscribes. */
  onWork?: (wake: () => void) => () => void
  log?: (event: string, data?: Record<string, unknown>) => void
}

/**
 * One runtime process: heartbeats that keep it live in discovery, and `concurrency` slots that
 * claim a job under a lease, evaluate it on the worker pool while renewing the lease, and send
 * the result. A result the hub refuses (the lease was lost) is dropped: the job is someone else's.
 */
export class ComputeRunner {
  readonly runtimeId = `rt_${randomBytes(12).toString('base64url')}`
  private readonly abort = new AbortController()
  private readonly wakers = new Set<() => void>()
  private loops: Promise<void>[] = []
  private heartbeat: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined

  constructor(
    private readonly api: ComputeRuntimeApi,
    private readonly pool: ComputePool,
    private readonly opts: ComputeRunnerOptions,
  ) {}

  /**
   * Registers the runtime (so it is live before it answers) and starts its slots. An eager pool's
   * workers must have started first; a lazy one starts them for the first job it claims, and the
   * runtime is live meanwhile (seed 000: live runtime availability from the start).
   */
  async start(): Promise<void> {
    // The pool's threads are unref'd; while they start, nothing else may hold the process open.
    const starting = setInterval(() => {}, 60_000)
    try {
      if (!this.pool.lazy) await this.pool.ready()
      await this.api.heartbeat(this.runtimeId, this.opts.languages)
    } finally {
      clearInterval(starting)
    }
    this.heartbeat = setInterval(() => {
      this.api
        .heartbeat(this.runtimeId, this.opts.languages)
        .catch((error) => this.log('runtime.heartbeat_failed', { error: describe(error) }))
    }, this.opts.heartbeatMs)
    this.heartbeat.unref()
    this.unsubscribe = this.opts.onWork?.(() => this.wake())
    for (let i = 0; i < this.opts.concurrency; i++) this.loops.push(this.slot())
    this.log('runtime.started', { runtimeId: this.runtimeId, languages: this.opts.languages })
  }

  /** Stops claiming, lets running jobs finish, and deregisters so availability drops at once. */
  async stop(): Promise<void> {
    if (this.abort.signal.aborted) return
    this.abort.abort()
    this.unsubscribe?.()
    clearInterval(this.heartbeat)
    this.wake()
    await Promise.allSettled(this.loops)
    await this.api.stop(this.runtimeId).catch(() => {})
    this.log('runtime.stopped', { runtimeId: this.runtimeId })
  }

  private log(event: string, data: Record<string, unknown> = {}): void {
    this.opts.log?.(event, data)
  }

  private wake(): void {
    for (const w of [...this.wakers]) w()
  }

  private idle(): Promise<void> {
    // A slot whose claim was in flight when the runner stopped must not then wait on its
    // unref'd timer: with nothing else left, the process would end with the stop unsettled.
    if (this.abort.signal.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, this.opts.pollMs)
      timer.unref()
      this.wakers.add(done)
    })
  }

  private async slot(): Promise<void> {
    const signal = this.abort.signal
    while (!signal.aborted) {
      let job: ClaimedComputeJobView | null = null
      try {
        job = await this.api.claim(this.runtimeId)
      } catch (error) {
        this.log('runtime.claim_failed', { error: describe(error) })
      }
      if (!job) {
        await this.idle()
        continue
      }
      await this.run(job)
    }
  }

  private async run(job: ClaimedComputeJobView): Promise<void> {
    this.log('job.claimed', { jobId: job.jobId })
    const renew = setInterval(() => {
      this.api.renew(job.jobId, job.leaseId).catch((error) => {
        this.log('job.renew_failed', { jobId: job.jobId, error: describe(error) })
      })
    }, this.opts.renewMs)
    let result: ComputeResultInput
    try {
      const evaluation = await this.pool.evaluate(job.program, job.input, {
        limits: { maxSteps: job.maxSteps },
      })
      result = {
        leaseId: job.leaseId,
        ok: true,
        output: evaluation.output,
        steps: evaluation.steps,
      }
    } catch (error) {
      const e =
        error instanceof BatonError ? error : new BatonError('internal', 'Evaluation failed')
      // every failure of an evaluation tells the steps it used, so its reservation settles to them
      const steps = e.context.steps
      result = {
        leaseId: job.leaseId,
        ok: false,
        error: { code: e.code, message: e.message },
        ...(typeof steps === 'number' && Number.isSafeInteger(steps) && steps >= 0
          ? { steps }
          : {}),
      }
    } finally {
      clearInterval(renew)
    }
    try {
      await this.api.complete(job.jobId, result)
      this.log('job.completed', { jobId: job.jobId, ok: result.ok })
    } catch (error) {
      this.log('job.result_refused', { jobId: job.jobId, error: describe(error) })
    }
  }
}

function describe(error: unknown): string {
  if (error instanceof BatonError) return error.code
  return error instanceof Error ? error.message : String(error)
}
