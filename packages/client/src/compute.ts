import {
  type ComputeJobView,
  type ComputeJobWaitView,
  contracts,
  DEFAULT_MAX_WAIT_SECONDS,
  type RuntimeAvailability,
  type SubmitComputeJobInput,
} from '@baton/protocol'
import type { RequestOptions, SignedClient } from './signed-client.js'

/** The states a compute job ends in. */
const ENDED: readonly string[] = ['succeeded', 'failed', 'canceled']

/** What `ComputeClient.wait` and `run` accept. */
export interface ComputeWaitOptions {
  /** Each long-poll asks the hub to hold the request this long (default: a hub's default longest wait; the hub clamps). */
  pollSeconds?: number
  /** Called with each change of the job seen while waiting. */
  onChange?: (job: ComputeJobWaitView) => void
  /** Stops waiting (the pending long-poll is aborted) when signalled. */
  signal?: AbortSignal
}

/**
 * Bounded compute jobs (seed 000 json-expr-v1) through a hub: check `availability()` before
 * submitting, then submit, wait, read or cancel. Every call is signed by the client's identity.
 * @example
 * const compute = new ComputeClient(client)
 * const job = await compute.run({ language: 'json-expr-v1', program: { '+': [1, 2] }, idempotencyKey: 'sum-0001' })
 * job.output // 3
 */
export class ComputeClient {
  constructor(private readonly client: SignedClient) {}

  /** Submits a job; the same idempotencyKey with the same request answers the first job. */
  submit(input: SubmitComputeJobInput, options: RequestOptions = {}): Promise<ComputeJobView> {
    return this.client.call(contracts.submitComputeJob, { body: input }, options)
  }

  /** Reads one of the caller's jobs. */
  get(jobId: string, options: RequestOptions = {}): Promise<ComputeJobView> {
    return this.client.call(contracts.readComputeJob, { params: { id: jobId } }, options)
  }

  /** The caller's most recent jobs, newest first. */
  async list(limit?: number): Promise<ComputeJobView[]> {
    const query = limit === undefined ? {} : { limit }
    return (await this.client.call(contracts.listComputeJobs, { query })).jobs
  }

  /** Cancels a job not yet ended; an ended job answers as it is. */
  cancel(jobId: string): Promise<ComputeJobView> {
    return this.client.call(contracts.cancelComputeJob, { params: { id: jobId } })
  }

  /** Long-polls the job until it ends (succeeded, failed or canceled) and answers it. */
  async wait(jobId: string, options: ComputeWaitOptions = {}): Promise<ComputeJobView> {
    const seconds = options.pollSeconds ?? DEFAULT_MAX_WAIT_SECONDS
    let seen: number | undefined
    for (;;) {
      const job = await this.client.call(
        contracts.waitComputeJob,
        { params: { id: jobId, seconds }, query: seen === undefined ? {} : { version: seen } },
        options.signal ? { signal: options.signal } : {},
      )
      if (job.changed || seen === undefined) options.onChange?.(job)
      seen = job.version
      if (ENDED.includes(job.state)) {
        const { changed: _, ...view } = job
        return view
      }
    }
  }

  /** Submits a job and waits until it ends. */
  async run(
    input: SubmitComputeJobInput,
    options: ComputeWaitOptions = {},
  ): Promise<ComputeJobView> {
    const job = await this.submit(input)
    if (ENDED.includes(job.state)) return job
    return this.wait(job.jobId, options)
  }

  /** seed 000: the hub's live `runtimeAvailability`, read from discovery afresh. */
  async availability(): Promise<RuntimeAvailability> {
    const doc = await this.client.refreshDiscovery()
    return doc.runtimeAvailability ?? { ready: false, available: [], supported: [] }
  }
}
