import { randomBytes } from 'node:crypto'
import {
  BatonError,
  type ClaimedComputeJobView,
  COMPUTE_LIST_LIMITS,
  type ComputeJobView,
  type ComputeJobWaitView,
  type ComputeLeaseInput,
  type ComputeResultInput,
  type ComputeRuntimeInput,
  type ComputeRuntimeView,
  isErrorCode,
  type RuntimeAvailability,
  type SubmitComputeJobInput,
} from '@baton/protocol'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { ComputeConfig } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { WaitRegistry, WaitSignal } from '../events/wait.js'
import type { GrantService } from '../grants/service.js'
import type { ResourceService } from '../resources/service.js'
import type { Database } from '../store/database.js'
import { requestHash } from '../store/idempotency.js'
import { countStates } from '../store/operator-reads.js'
import { consumeDailyQuota, quotaExceeded, utcDayStart } from '../store/quota.js'
import type { ComputeJobRow } from '../store/schema.js'
import type { Carrying, Tx, WriteBatcher } from '../store/transaction.js'
import { traceColumns, traceFields } from '../telemetry/trace-context.js'
import { checkJsonInput, compileJsonExpr, JSON_EXPR_V1 } from './json-expr.js'
import { DEFAULT_COMPUTE_LIMITS } from './limits.js'
import * as store from './store.js'

/** The languages this hub accepts; it never hands a runtime anything else. */
export const SUPPORTED_LANGUAGES: readonly string[] = [JSON_EXPR_V1]

/** The principal the embedded runtime runs as; never a did:key, so no signed caller is it. */
export const EMBEDDED_RUNTIME = 'hub'

const STEPS_SCOPE = 'compute_steps'
const FINAL = ['succeeded', 'failed', 'canceled'] as const
const newJobId = () => `cj_${randomBytes(16).toString('base64url')}`
const newLeaseId = () => randomBytes(18).toString('base64url')
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Claimable jobs a claim reads at once: each is claimable when read, so more than one is needed
 * only when concurrent claims (on any instance) take the first ones first.
 */
const CLAIM_CANDIDATES = 4
/** Reads of claimable jobs one claim makes at most before it answers that none waits. */
const CLAIM_READS = 4

/** Thrown to roll a claim back: the owner's steps are all reserved by jobs still running. */
class StepsPending extends Error {}

/** The topic of one job's changes. */
export const jobTopic = (id: string) => `compute-job:${id}`
/** The topic runtimes listen on for new work. */
export const QUEUE_TOPIC = 'compute-queue'

export interface ComputeDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  waits: WaitRegistry
  config: ComputeConfig
  resources: ResourceService
  grants: GrantService
  log: Logger
}

const JOB_ID_RE = /^cj_[A-Za-z0-9_-]{22}$/

/** One job long poll: whose wait it is and what it has seen. */
interface JobWaiter {
  owner: string
  id: string
  seen: number | undefined
  waitMs: number
}

/** One read of a job, shared by every waiter on it; undefined when there is no such job. */
type SharedJob = { row: ComputeJobRow; view: ComputeJobView } | undefined

/** Whether the job moved past what the waiter had seen (the version given, else its first read). */
function jobChanged(w: JobWaiter, v: ComputeJobView, first: ComputeJobView): boolean {
  return v.version > (w.seen ?? first.version)
}

function notFound(id: string): BatonError {
  return new BatonError('compute_job_not_found', `No compute job ${JSON.stringify(id)}`)
}

function leaseLost(): BatonError {
  return new BatonError('compute_lease_lost', 'This runtime no longer holds the job')
}

function toView(row: ComputeJobRow): ComputeJobView {
  const view: ComputeJobView = {
    jobId: row.id,
    language: row.language,
    // a result accepted but not yet written into its resource is still running to its submitter
    state: (row.state === 'finishing' ? 'running' : row.state) as ComputeJobView['state'],
    version: row.version,
    attempts: row.attempts,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  }
  if (row.state === 'succeeded' && row.output !== null) view.output = JSON.parse(row.output)
  if (row.error_code !== null) {
    view.error = { code: row.error_code, message: row.error_message ?? '' }
  }
  if (row.steps !== null) view.steps = Number(row.steps)
  if (row.output_resource_id !== null) {
    view.outputResource = {
      resourceId: row.output_resource_id,
      expectedVersion: row.output_expected_version ?? 0,
      ...(row.output_version !== null ? { version: row.output_version } : {}),
    }
  }
  if (row.finished_at !== null) view.finishedAt = iso(row.finished_at)
  return view
}

/**
 * Compute jobs (seed 000 json-expr-v1): durable, claimed by exactly one runtime under a lease,
 * ended exactly once. Runtimes are rows kept alive by heartbeats, so availability is the same
 * answer on every instance.
 */
export class ComputeService {
  constructor(private readonly deps: ComputeDeps) {}

  private get db() {
    return this.deps.database.db
  }

  /** seed 000: what a client checks before it submits compute. */
  async availability(): Promise<RuntimeAvailability> {
    const now = this.deps.clock.now()
    const [live, queued] = await Promise.all([
      store.liveRuntimes(this.db, now),
      store.queuedCounts(this.db),
    ])
    const workers = new Map<string, number>()
    for (const r of live) {
      for (const language of JSON.parse(r.languages) as string[]) {
        if (SUPPORTED_LANGUAGES.includes(language)) {
          workers.set(language, (workers.get(language) ?? 0) + 1)
        }
      }
    }
    return {
      ready: workers.size > 0,
      available: [...workers].map(([language, n]) => ({
        language,
        workers: n,
        queued: queued.get(language) ?? 0,
      })),
      supported: [...SUPPORTED_LANGUAGES],
    }
  }

  /**
   * The operator dashboard's compute page: the queue per language, the runtimes live now with
   * their last heartbeat, and the most recent jobs (states, steps, durations and codes; never
   * programs, inputs or outputs).
   */
  async dashboard(): Promise<{
    queue: { language: string; queued: number; running: number }[]
    workers: { runtimeId: string; principal: string; languages: string[]; lastHeartbeat: string }[]
    jobs: {
      jobId: string
      owner: string
      language: string
      state: string
      steps: number | null
      attempts: number
      durationMs: number | null
      errorCode: string | null
      createdAt: string
    }[]
  }> {
    const now = this.deps.clock.now()
    const [counts, live, recent] = await Promise.all([
      store.activeCounts(this.db),
      store.liveRuntimes(this.db, now),
      store.recentJobs(this.db, 50),
    ])
    const queue = new Map<string, { language: string; queued: number; running: number }>()
    for (const language of SUPPORTED_LANGUAGES)
      queue.set(language, { language, queued: 0, running: 0 })
    for (const c of counts) {
      const q = queue.get(c.language) ?? { language: c.language, queued: 0, running: 0 }
      if (c.state === 'queued') q.queued += c.n
      else q.running += c.n
      queue.set(c.language, q)
    }
    return {
      queue: [...queue.values()],
      workers: live.map((r) => ({
        runtimeId: r.id,
        principal: r.principal,
        languages: JSON.parse(r.languages) as string[],
        lastHeartbeat: iso(r.expires_at - this.deps.config.runtimeTtlMs),
      })),
      jobs: recent.map((j) => ({
        jobId: j.id,
        owner: j.owner,
        language: j.language,
        state: j.state === 'finishing' ? 'running' : j.state,
        steps: j.steps === null ? null : Number(j.steps),
        attempts: j.attempts,
        durationMs: j.finished_at === null ? null : j.finished_at - j.created_at,
        errorCode: j.error_code,
        createdAt: iso(j.created_at),
      })),
    }
  }

  /** Submits a job; the same idempotencyKey with the same request answers the first job. */
  async submit(
    owner: string,
    body: SubmitComputeJobInput,
    { carry, trace }: Carrying = {},
  ): Promise<ComputeJobView> {
    const hash = requestHash({
      language: body.language,
      program: body.program,
      input: body.input,
      inputResourceId: body.inputResourceId,
      output: body.output,
    })
    const prior = await store.findByKey(this.db, owner, body.idempotencyKey)
    if (prior) return this.repeat(prior, hash)
    if (!SUPPORTED_LANGUAGES.includes(body.language)) {
      throw new BatonError(
        'compute_language_unsupported',
        `The hub does not accept ${JSON.stringify(body.language)}`,
        { supported: [...SUPPORTED_LANGUAGES] },
      )
    }
    // seed 000: a language no live worker serves is refused now, never left to wait forever.
    const availability = await this.availability()
    if (!availability.available.some((a) => a.language === body.language)) {
      throw new BatonError(
        'compute_unavailable',
        `No live runtime serves ${body.language} now; see runtimeAvailability in discovery`,
        { runtimeAvailability: availability },
        { 'retry-after': '5' },
      )
    }
    let jobInput: unknown = body.input ?? null
    if (body.inputResourceId !== undefined) {
      jobInput = (await this.deps.resources.get(owner, body.inputResourceId)).data
    }
    compileJsonExpr(body.program, DEFAULT_COMPUTE_LIMITS)
    checkJsonInput(jobInput, DEFAULT_COMPUTE_LIMITS)
    if (body.output) {
      await this.deps.grants.assertAllowed(
        this.db,
        owner,
        body.output.resourceId,
        'resource:update',
      )
    }
    const now = this.deps.clock.now()
    const { quotas } = this.deps.config
    if ((await this.stepsUsed(owner, now)) >= quotas.stepsPerDay) {
      throw quotaExceeded('compute steps', quotas.stepsPerDay, now)
    }
    const row: ComputeJobRow = {
      id: newJobId(),
      owner,
      idempotency_key: body.idempotencyKey,
      request_hash: hash,
      language: body.language,
      program: JSON.stringify(body.program),
      input: JSON.stringify(jobInput),
      output_resource_id: body.output?.resourceId ?? null,
      output_expected_version: body.output?.expectedVersion ?? null,
      output_version: null,
      state: 'queued',
      version: 1,
      output: null,
      error_code: null,
      error_message: null,
      steps: null,
      attempts: 0,
      runtime_id: null,
      lease_id: null,
      lease_until: null,
      created_at: now,
      updated_at: now,
      finished_at: null,
      ...traceColumns(trace),
    }
    try {
      return await this.deps.batcher.carrying(carry).run(async (tx) => {
        const again = await store.findByKey(tx.db, owner, body.idempotencyKey)
        if (again) return this.repeat(again, hash)
        await consumeDailyQuota(tx.db, {
          scope: 'compute_jobs',
          subject: owner,
          limit: quotas.jobsPerDay,
          now,
        })
        if (
          !(await store.changeActive(tx.db, {
            principal: owner,
            delta: 1,
            limit: quotas.concurrent,
          }))
        ) {
          throw new BatonError(
            'rate_limited',
            `At most ${quotas.concurrent} compute jobs may be queued or running at once`,
            { limit: quotas.concurrent, retry_after: 1 },
            { 'retry-after': '1' },
          )
        }
        await store.insertJob(tx.db, row)
        this.published(tx, row, 'compute.job.queued')
        return toView(row)
      })
    } catch (error) {
      // Two submits of one key raced: the loser answers the winner's job.
      const winner = await store.findByKey(this.db, owner, body.idempotencyKey)
      if (winner && winner.id !== row.id) return this.repeat(winner, hash)
      throw error
    }
  }

  private repeat(row: ComputeJobRow, hash: string): ComputeJobView {
    if (row.request_hash !== hash) {
      throw new BatonError(
        'idempotency_conflict',
        'This idempotencyKey was already used with a different job',
        { jobId: row.id },
      )
    }
    return { ...toView(row), repeated: true }
  }

  private async stepsUsed(owner: string, now: number): Promise<number> {
    const row = await this.db
      .selectFrom('quota_counters')
      .select('count')
      .where('scope', '=', STEPS_SCOPE)
      .where('subject', '=', owner)
      .where('window_start', '=', utcDayStart(now))
      .executeTakeFirst()
    return Number(row?.count ?? 0)
  }

  private async visible(owner: string, id: string): Promise<ComputeJobRow> {
    if (!JOB_ID_RE.test(id)) throw notFound(id)
    const row = await store.findJob(this.db, id)
    // Another principal's job answers exactly like a missing one.
    if (!row || row.owner !== owner) throw notFound(id)
    return row
  }

  async get(owner: string, id: string): Promise<ComputeJobView> {
    return toView(await this.visible(owner, id))
  }

  async list(
    owner: string,
    limit: number = COMPUTE_LIST_LIMITS.defaultPageSize,
  ): Promise<{ jobs: ComputeJobView[] }> {
    return { jobs: (await store.listJobs(this.db, owner, limit)).map(toView) }
  }

  /** Waits up to `seconds` (clamped) for the job to pass `seen` or to end. */
  async wait(
    owner: string,
    id: string,
    seconds: number,
    seen?: number,
    signal?: WaitSignal,
    address?: string,
  ): Promise<ComputeJobWaitView> {
    const waitMs = Math.min(seconds, this.deps.config.maxWaitSeconds) * 1000
    if (!JOB_ID_RE.test(id)) throw notFound(id)
    const data: JobWaiter = { owner, id, seen, waitMs }
    const { first, last } = await this.deps.waits.wait({
      key: jobTopic(id),
      topics: [jobTopic(id)],
      ...this.waitFns,
      // Only its owner sees a job: one visibility check per read for all of the owner's waiters.
      viewKey: owner,
      // Every change of what a job's view shows moves its version and publishes on its topic.
      changesOnlyWithEvents: true,
      data,
      address,
      signal,
    })
    return { ...last, changed: jobChanged(data, last, first) }
  }

  // The functions of every job wait, made once: a waiter is only its `JobWaiter` record.
  private readonly waitFns = {
    // One read per change for every waiter of the job; a job still at the version last read is
    // that read again, so every waiter holds the same view.
    read: async ({ id }: JobWaiter, previous: SharedJob | undefined) => {
      const row = await store.findJob(this.db, id)
      if (!row) return undefined
      if (previous && previous.row.version === row.version) return previous
      return { row, view: toView(row) }
    },
    view: (shared: SharedJob | undefined, w: JobWaiter) => {
      // Another principal's job answers exactly like a missing one.
      if (!shared || shared.row.owner !== w.owner) throw notFound(w.id)
      return shared.view
    },
    ready: (v: ComputeJobView, first: ComputeJobView, w: JobWaiter) =>
      jobChanged(w, v, first) || (FINAL as readonly string[]).includes(v.state),
    timeoutMs: (_first: ComputeJobView, w: JobWaiter) => w.waitMs,
  }

  /** Cancels a job not yet ended; an ended job answers as it is. A running result is refused. */
  async cancel(owner: string, id: string, { carry }: Carrying = {}): Promise<ComputeJobView> {
    await this.visible(owner, id)
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const row = (await store.findJob(tx.db, id))!
      if (row.state !== 'queued' && row.state !== 'running') return toView(row)
      const version = await store.casMove(tx.db, {
        id,
        from: ['queued', 'running'],
        to: 'canceled',
        now,
        patch: { finished_at: now, lease_id: null, lease_until: null },
      })
      const after = (await store.findJob(tx.db, id))!
      if (version === undefined) return toView(after)
      await store.changeActive(tx.db, { principal: owner, delta: -1 })
      // A job canceled while running reported no steps: its whole reservation goes back.
      await this.releaseReservation(tx, after, 0)
      this.published(tx, after, 'compute.job.canceled')
      return toView(after)
    })
  }

  private assertRuntime(principal: string): void {
    // A runtime reads the programs and inputs (perhaps a private resource's data) of its jobs,
    // so remote runtimes are opt-in: listed principals, or any admitted one with `*`.
    const allowed = this.deps.config.runtimes
    if (principal !== EMBEDDED_RUNTIME && !allowed.includes('*') && !allowed.includes(principal)) {
      throw new BatonError('compute_runtime_forbidden', 'This principal may not serve compute')
    }
  }

  /** A runtime's heartbeat: registers or renews it as live for the languages it serves. */
  async heartbeat(
    principal: string,
    body: ComputeRuntimeInput,
    { carry }: Carrying = {},
  ): Promise<ComputeRuntimeView> {
    this.assertRuntime(principal)
    const unsupported = body.languages.filter((l) => !SUPPORTED_LANGUAGES.includes(l))
    if (unsupported.length > 0) {
      throw new BatonError(
        'compute_language_unsupported',
        `The hub does not accept ${unsupported.join(', ')}`,
        { supported: [...SUPPORTED_LANGUAGES] },
      )
    }
    const now = this.deps.clock.now()
    const expiresAt = now + this.deps.config.runtimeTtlMs
    const languages = [...new Set(body.languages)]
    await this.deps.batcher.carrying(carry).run(async (tx) => {
      const existing = await store.findRuntime(tx.db, body.runtimeId)
      // A runtime id is its process's; another principal's id is refused like an unknown one.
      if (existing && existing.principal !== principal) {
        throw new BatonError(
          'compute_runtime_forbidden',
          'This runtime id belongs to another principal',
        )
      }
      await store.upsertRuntime(tx.db, {
        id: body.runtimeId,
        principal,
        languages: JSON.stringify(languages),
        started_at: now,
        expires_at: expiresAt,
      })
    })
    return { runtimeId: body.runtimeId, languages, expiresAt: iso(expiresAt) }
  }

  /** A runtime stops: it is no longer counted as live, at once. */
  async stopRuntime(
    principal: string,
    runtimeId: string,
    { carry }: Carrying = {},
  ): Promise<{ stopped: boolean }> {
    const now = this.deps.clock.now()
    const n = await this.deps.batcher
      .carrying(carry)
      .run((tx) => store.expireRuntime(tx.db, { id: runtimeId, principal, now }))
    return { stopped: n > 0 }
  }

  /**
   * Claims a job of the runtime's languages under a lease, none when nothing waits: the oldest
   * of an owner with no job running, else the oldest.
   */
  async claim(
    principal: string,
    runtimeId: string,
    { carry }: Carrying = {},
  ): Promise<ClaimedComputeJobView | null> {
    this.assertRuntime(principal)
    const runtime = await store.findRuntime(this.db, runtimeId)
    const now = this.deps.clock.now()
    if (!runtime || runtime.principal !== principal || runtime.expires_at <= now) {
      throw new BatonError(
        'compute_runtime_not_live',
        'No live runtime of yours has this runtimeId: send a heartbeat for it before claiming',
        { field: 'runtimeId' },
      )
    }
    const languages = (JSON.parse(runtime.languages) as string[]).filter((l) =>
      SUPPORTED_LANGUAGES.includes(l),
    )
    if (languages.length === 0) return null
    const { maxAttempts, quotas } = this.deps.config
    const read = (idleOwners: boolean) =>
      store.claimable(this.db, {
        languages,
        now,
        maxAttempts,
        steps: { scope: STEPS_SCOPE, limit: quotas.stepsPerDay },
        limit: CLAIM_CANDIDATES,
        idleOwners,
      })
    // Fair across principals: the oldest job of an owner with nothing running goes first, so one
    // principal's queue of long programs never holds up another's first job; then the oldest.
    // Every candidate read is claimable when read; one is lost only to a concurrent claim (on
    // any instance) that took it first, and then a fresh read finds the ones still waiting.
    for (let attempt = 0; attempt < CLAIM_READS; attempt++) {
      const first = await read(true)
      const ids = new Set(first.map((r) => r.id))
      const candidates = [...first, ...(await read(false)).filter((r) => !ids.has(r.id))]
      if (candidates.length === 0) return null
      for (const row of candidates) {
        const claimed = await this.claimOne(row, runtimeId, now, carry)
        if (claimed) return claimed
      }
    }
    return null
  }

  /** Claims one job read as claimable, or answers null when it was taken or cannot run. */
  private async claimOne(
    row: ComputeJobRow,
    runtimeId: string,
    now: number,
    carry: Carrying['carry'],
  ): Promise<ClaimedComputeJobView | null> {
    const { leaseMs, quotas } = this.deps.config
    const leaseId = newLeaseId()
    const until = now + leaseMs
    let maxSteps: number
    try {
      maxSteps = await this.deps.batcher.carrying(carry).run(async (tx) => {
        const ok = await store.casClaim(tx.db, {
          id: row.id,
          version: row.version,
          runtimeId,
          leaseId,
          now,
          until,
        })
        if (!ok) return 0
        // A reclaim after a lost lease: the lost runtime reported no steps, so its
        // reservation goes back before the new one is taken.
        await this.releaseReservation(tx, row, 0)
        // The job's step bound is reserved from the owner's daily steps as it is claimed, so
        // jobs running at once never together pass the quota; its result gives back the rest.
        const reserved = await store.reserveSteps(tx.db, {
          scope: STEPS_SCOPE,
          owner: row.owner,
          jobId: row.id,
          want: DEFAULT_COMPUTE_LIMITS.maxSteps,
          limit: quotas.stepsPerDay,
          now,
        })
        if (reserved > 0) {
          this.published(tx, { ...row, version: row.version + 1 }, 'compute.job.running')
          return reserved
        }
        // No steps left today. While the owner's other jobs run, their unused steps may come
        // back: leave this one queued (the claim rolls back). Otherwise it cannot run today.
        if (await store.othersRunning(tx.db, row.owner, row.id)) throw new StepsPending()
        await this.failJob(tx, row, row.version + 1, now, {
          error_code: 'rate_limited',
          error_message: `The quota of ${quotas.stepsPerDay} compute steps per UTC day is used up`,
        })
        return 0
      })
    } catch (error) {
      if (error instanceof StepsPending) return null
      throw error
    }
    if (maxSteps === 0) return null
    return {
      jobId: row.id,
      language: row.language,
      program: JSON.parse(row.program),
      input: JSON.parse(row.input),
      leaseId,
      leaseEndsAt: iso(until),
      maxSteps,
      ...traceFields(row),
    }
  }

  /** Fails a job still at `version` (queued or running) with its code; frees its active slot. */
  private async failJob(
    tx: Tx,
    row: ComputeJobRow,
    version: number,
    now: number,
    error: { error_code: string; error_message: string },
  ): Promise<boolean> {
    const moved = await store.casMove(tx.db, {
      id: row.id,
      from: ['queued', 'running'],
      to: 'failed',
      now,
      version,
      patch: { ...error, finished_at: now, lease_id: null, lease_until: null },
    })
    if (moved === undefined) return false
    await store.changeActive(tx.db, { principal: row.owner, delta: -1 })
    await this.releaseReservation(tx, row, 0)
    this.published(tx, { ...row, version: moved, state: 'failed' }, 'compute.job.failed')
    return true
  }

  /** Extends the lease of a job the runtime still holds. */
  async renew(
    principal: string,
    jobId: string,
    body: ComputeLeaseInput,
    { carry }: Carrying = {},
  ): Promise<{ leaseEndsAt: string }> {
    this.assertRuntime(principal)
    const now = this.deps.clock.now()
    const until = now + this.deps.config.leaseMs
    const ok = await this.deps.batcher
      .carrying(carry)
      .run((tx) => store.casRenew(tx.db, { id: jobId, leaseId: body.leaseId, now, until }))
    if (!ok) throw leaseLost()
    return { leaseEndsAt: iso(until) }
  }

  /**
   * A runtime's result. It commits only under the live lease it was claimed with, so of a lost
   * runtime and the one that reclaimed the job exactly one result ends it; the other is refused.
   */
  async complete(
    principal: string,
    jobId: string,
    body: ComputeResultInput,
    { carry }: Carrying = {},
  ): Promise<ComputeJobView> {
    this.assertRuntime(principal)
    const row = await store.findJob(this.db, jobId)
    if (!row || row.lease_id !== body.leaseId) throw leaseLost()
    const now = this.deps.clock.now()
    let patch: Partial<ComputeJobRow>
    let to: string
    const steps = body.steps ?? 0
    const outputText = body.ok ? JSON.stringify(body.output ?? null) : undefined
    if (
      outputText !== undefined &&
      Buffer.byteLength(outputText) <= DEFAULT_COMPUTE_LIMITS.maxOutputBytes
    ) {
      to = row.output_resource_id !== null ? 'finishing' : 'succeeded'
      patch = { output: outputText, steps }
    } else {
      const code =
        outputText !== undefined
          ? 'compute_output_too_large'
          : isErrorCode(body.error?.code) && body.error.code.startsWith('compute_')
            ? body.error.code
            : 'internal'
      to = 'failed'
      patch = {
        error_code: code,
        error_message: body.error?.message ?? 'The output is larger than the hub accepts',
        steps,
      }
    }
    if (to !== 'finishing') patch.finished_at = now
    const after = await this.deps.batcher.carrying(carry).run(async (tx) => {
      const version = await store.casMove(tx.db, {
        id: jobId,
        from: ['running'],
        to,
        now,
        leaseId: body.leaseId,
        patch: { ...patch, lease_until: now },
      })
      if (version === undefined) throw leaseLost()
      // A failure that reports no steps keeps its whole reservation counted.
      await this.releaseReservation(tx, row, body.steps ?? (body.ok ? 0 : Number.MAX_SAFE_INTEGER))
      if (to !== 'finishing') await store.changeActive(tx.db, { principal: row.owner, delta: -1 })
      const moved = (await store.findJob(tx.db, jobId))!
      this.published(tx, moved, `compute.job.${to}`)
      return moved
    })
    if (after.state === 'finishing') return toView(await this.writeOutput(after))
    return toView(after)
  }

  /**
   * Writes a succeeded job's output into its resource through the resource service, at the
   * version the submitter stated (seed 000 compare-and-set). The resource service answers a
   * repeat of the identical write as done, so a retry after a crash writes it once.
   */
  private async writeOutput(row: ComputeJobRow): Promise<ComputeJobRow> {
    let patch: Partial<ComputeJobRow>
    let to: 'succeeded' | 'failed'
    try {
      const written = await this.deps.resources.update(row.owner, row.output_resource_id!, {
        expectedVersion: row.output_expected_version!,
        data: JSON.parse(row.output!),
      })
      to = 'succeeded'
      patch = { output_version: written.version }
    } catch (error) {
      if (!(error instanceof BatonError)) throw error
      to = 'failed'
      patch = { error_code: error.code, error_message: error.message }
    }
    return this.deps.batcher.run(async (tx) => {
      const now = this.deps.clock.now()
      const version = await store.casMove(tx.db, {
        id: row.id,
        from: ['finishing'],
        to,
        now,
        patch: { ...patch, finished_at: now },
      })
      const after = (await store.findJob(tx.db, row.id))!
      if (version === undefined) return after
      await store.changeActive(tx.db, { principal: row.owner, delta: -1 })
      this.published(tx, after, `compute.job.${to}`)
      return after
    })
  }

  /**
   * seed 000: a job never waits forever. A queued job (or a claimed one whose lease ran out)
   * whose language has had no live runtime for the whole grace ends `failed` with
   * `compute_unavailable`, the code a submit gets when no runtime serves its language. A runtime
   * live within the grace keeps its jobs waiting: it may be busy, or about to reclaim them.
   */
  private async failStranded(now: number): Promise<number> {
    const since = now - this.deps.config.unavailableGraceMs
    const served = new Set<string>()
    for (const r of await store.liveRuntimes(this.db, since)) {
      for (const language of JSON.parse(r.languages) as string[]) served.add(language)
    }
    const gone = SUPPORTED_LANGUAGES.filter((l) => !served.has(l))
    if (gone.length === 0) return 0
    let count = 0
    for (const row of await store.stranded(this.db, gone, since)) {
      const done = await this.deps.batcher.run((tx) =>
        this.failJob(tx, row, row.version, now, {
          error_code: 'compute_unavailable',
          error_message: `No live runtime served ${row.language} for ${this.deps.config.unavailableGraceMs / 1000} s; see runtimeAvailability in discovery`,
        }),
      )
      if (done) count++
    }
    return count
  }

  /**
   * Timed work: fails jobs every runtime gave up on, finishes output writes a crash left, and
   * forgets runtimes long gone. Every write is conditional, so many instances may run it at once.
   */
  async reap(): Promise<number> {
    const now = this.deps.clock.now()
    let count = 0
    for (const row of await store.exhausted(this.db, now, this.deps.config.maxAttempts)) {
      const done = await this.deps.batcher.run(async (tx) => {
        const version = await store.casMove(tx.db, {
          id: row.id,
          from: ['running'],
          to: 'failed',
          now,
          expiredLease: true,
          patch: {
            error_code: 'compute_runtime_lost',
            error_message: `Every runtime that claimed the job stopped (${row.attempts} claims)`,
            finished_at: now,
            lease_id: null,
          },
        })
        if (version === undefined) return false
        await store.changeActive(tx.db, { principal: row.owner, delta: -1 })
        await this.releaseReservation(tx, row, 0)
        this.published(tx, { ...row, version, state: 'failed' }, 'compute.job.failed')
        return true
      })
      if (done) count++
    }
    count += await this.failStranded(now)
    for (const row of await store.finishing(this.db, now - this.deps.config.leaseMs)) {
      await this.writeOutput(row)
      count++
    }
    count += await this.deps.batcher.run((tx) => store.pruneRuntimes(tx.db, now - 24 * 3600 * 1000))
    return count
  }

  /**
   * Settles a job's step reservation to the `used` steps its runtime reported, in the
   * transaction of the job's end (or of its reclaim), and gives the rest back to the owner's
   * day. Every way a job ends calls it once after its compare-and-set move; the release itself
   * is one conditional delete, so a repeated end gives nothing back twice.
   */
  private async releaseReservation(tx: Tx, row: ComputeJobRow, used: number): Promise<void> {
    const refunded = await store.releaseSteps(tx.db, {
      scope: STEPS_SCOPE,
      owner: row.owner,
      jobId: row.id,
      used,
    })
    if (refunded > 0) this.queueHint(tx, row.language)
  }

  /** Wakes runtimes: work of `language` may be claimable now (steps came back). */
  private queueHint(tx: Tx, language: string): void {
    const at = this.deps.clock.now()
    tx.afterCommit(() => {
      this.deps.bus.publish({
        topic: QUEUE_TOPIC,
        type: 'compute.steps.released',
        at,
        data: { language },
      })
    })
  }

  private published(tx: Tx, row: ComputeJobRow, type: string): void {
    const at = this.deps.clock.now()
    const event = { jobId: row.id, state: row.state, version: row.version }
    tx.afterCommit(() => {
      this.deps.bus.publish({ topic: jobTopic(row.id), type, at, data: event })
      if (row.state === 'queued') {
        this.deps.bus.publish({ topic: QUEUE_TOPIC, type, at, data: { language: row.language } })
      }
    })
  }

  /** How many compute jobs are in each state, for the operator's overview. */
  async operatorCounts(): Promise<Record<string, number>> {
    return countStates(this.deps.database.db, 'compute_jobs')
  }
}
