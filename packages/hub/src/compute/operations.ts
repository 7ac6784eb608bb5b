import {
  ComputeClaimView,
  ComputeJobView,
  ComputeJobWaitView,
  ComputeLeaseInput,
  ComputeResultInput,
  ComputeRuntimeInput,
  ComputeRuntimeView,
  ComputeWaitQuery,
  computeWaitParams,
  ListComputeJobsQuery,
  SubmitComputeJobInput,
} from '@baton/protocol'
import { z } from 'zod'
import { defineOperation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'
import { withProgress } from '../ops/progress.js'
import { depthExceeded } from './json-expr.js'
import { DEFAULT_COMPUTE_LIMITS } from './limits.js'

const tags = ['compute']
const runtimeTags = ['compute runtimes']
const JobId = z.strictObject({ id: z.string().max(128).describe('The job id') })
const RuntimeId = z.strictObject({ runtimeId: z.string().max(128).describe('The runtime id') })
const runtimeErrors = ['compute_runtime_forbidden'] as const

/** seed 000: bounded json-expr-v1 compute, refused at once when no live runtime serves it. */
export const submitComputeJob = defineOperation({
  name: 'submitComputeJob',
  cli: ['compute', 'run'],
  summary: 'Submit a compute job (json-expr-v1): a program, its input and an idempotencyKey',
  description:
    'Check runtimeAvailability in discovery first: a language no live runtime serves answers compute_unavailable. With `output`, the result is written into that resource at expectedVersion.',
  tags,
  method: 'POST',
  path: '/v1/compute/jobs',
  auth: 'signature',
  body: SubmitComputeJobInput,
  output: ComputeJobView,
  status: 201,
  errors: [
    'compute_unavailable',
    'compute_language_unsupported',
    'compute_invalid_program',
    'compute_invalid_input',
    'compute_program_too_large',
    'compute_input_too_large',
    'compute_depth_exceeded',
    'resource_forbidden',
    'idempotency_conflict',
  ],
  // A program or input nested past the hub's JSON guard is far deeper than maxDepth: it answers
  // the documented compute code, like any other nesting past the bound.
  tooDeep: (field) => {
    const where = field.split('.')[0]
    if (where === 'program' || where === 'input') {
      return depthExceeded(where, DEFAULT_COMPUTE_LIMITS.maxDepth)
    }
    return undefined
  },
  tool: {
    name: 'submit_compute_job',
    title: 'Submit a compute job',
    description:
      'Run a bounded json-expr-v1 program (JSON Logic, docs/compute.md) on a JSON input, or on the data of a resource you may read (inputResourceId). Give an idempotencyKey of your own so a repeat answers the same job. Optionally write the output into a resource you may update, at expectedVersion. Answers the job; wait for it with wait_compute_job.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  run: (ctx, caller, { body }) => ctx.compute.submit(signer(caller), body, caller),
})

export const listComputeJobs = defineOperation({
  name: 'listComputeJobs',
  cli: ['compute', 'list'],
  summary: 'The caller’s most recent compute jobs, newest first',
  tags,
  method: 'GET',
  path: '/v1/compute/jobs',
  auth: 'signature',
  query: ListComputeJobsQuery,
  output: z.object({ jobs: z.array(ComputeJobView) }),
  errors: [],
  tool: {
    name: 'list_compute_jobs',
    title: 'List compute jobs',
    description: 'Your most recent compute jobs, newest first.',
    annotations: { readOnlyHint: true },
  },
  run: (ctx, caller, { query }) => ctx.compute.list(signer(caller), query.limit),
})

export const readComputeJob = defineOperation({
  name: 'readComputeJob',
  cli: ['compute', 'read'],
  summary: 'Read a compute job: state, output or failure code',
  tags,
  method: 'GET',
  path: '/v1/compute/jobs/:id',
  auth: 'signature',
  params: JobId,
  output: ComputeJobView,
  errors: ['compute_job_not_found'],
  tool: {
    name: 'read_compute_job',
    title: 'Read a compute job',
    description: 'Read one of your compute jobs: its state, and its output or failure code.',
    annotations: { readOnlyHint: true },
  },
  run: (ctx, caller, { params }) => ctx.compute.get(signer(caller), params.id),
})

export const waitComputeJob = defineOperation({
  name: 'waitComputeJob',
  cli: ['compute', 'wait'],
  summary:
    "Answer as soon as the job changes or ends, within {seconds} (clamped to the hub's longest wait, 25 s by default)",
  tags,
  method: 'GET',
  path: '/v1/compute/jobs/:id/wait/:seconds',
  auth: 'signature',
  params: (config) => computeWaitParams(config.compute),
  query: ComputeWaitQuery,
  output: ComputeJobWaitView,
  errors: ['compute_job_not_found'],
  longPoll: true,
  tool: {
    name: 'wait_compute_job',
    title: 'Wait for a compute job',
    description: (config) =>
      `Answer as soon as one of your compute jobs changes or ends, within \`seconds\` (at most ${config.compute.maxWaitSeconds}; longer is clamped). Pass the version you have seen so a change in between is not missed.`,
    annotations: { readOnlyHint: true },
  },
  run: (ctx, caller, { params, query }) =>
    withProgress(
      caller,
      Math.min(params.seconds, ctx.config.compute.maxWaitSeconds),
      ctx.compute.wait(
        signer(caller),
        params.id,
        params.seconds,
        query.version,
        caller.signal,
        caller.ip,
      ),
    ),
})

export const cancelComputeJob = defineOperation({
  name: 'cancelComputeJob',
  cli: ['compute', 'cancel'],
  summary: 'Cancel a job not yet ended (an ended job answers as it is)',
  tags,
  method: 'POST',
  path: '/v1/compute/jobs/:id/cancel',
  auth: 'signature',
  params: JobId,
  output: ComputeJobView,
  errors: ['compute_job_not_found'],
  tool: {
    name: 'cancel_compute_job',
    title: 'Cancel a compute job',
    description:
      'Cancel one of your compute jobs that is queued or running; an ended job answers as it is.',
    annotations: { destructiveHint: true, idempotentHint: true },
  },
  run: (ctx, caller, { params }) => ctx.compute.cancel(signer(caller), params.id, caller),
})

/** A runtime's heartbeat: it is live in runtimeAvailability for BATON_COMPUTE_RUNTIME_TTL_SECONDS. */
export const computeRuntimeHeartbeat = defineOperation({
  name: 'computeRuntimeHeartbeat',
  cli: ['compute', 'heartbeat'],
  summary: 'Register or renew a compute runtime and the languages it serves',
  tags: runtimeTags,
  method: 'POST',
  path: '/v1/compute/runtimes',
  auth: 'signature',
  body: ComputeRuntimeInput,
  output: ComputeRuntimeView,
  errors: [...runtimeErrors, 'compute_language_unsupported'],
  tool: false,
  run: (ctx, caller, { body }) => ctx.compute.heartbeat(signer(caller), body, caller),
})

export const stopComputeRuntime = defineOperation({
  name: 'stopComputeRuntime',
  cli: ['compute', 'stop-runtime'],
  summary: 'Deregister a compute runtime at once (it stops serving)',
  tags: runtimeTags,
  method: 'DELETE',
  path: '/v1/compute/runtimes/:runtimeId',
  auth: 'signature',
  params: RuntimeId,
  output: z.object({ stopped: z.boolean() }),
  errors: [],
  tool: false,
  run: (ctx, caller, { params }) =>
    ctx.compute.stopRuntime(signer(caller), params.runtimeId, caller),
})

export const claimComputeJob = defineOperation({
  name: 'claimComputeJob',
  cli: ['compute', 'claim'],
  summary: 'Claim the oldest queued job of the runtime’s languages, under a lease',
  tags: runtimeTags,
  method: 'POST',
  path: '/v1/compute/runtimes/:runtimeId/claim',
  auth: 'signature',
  params: RuntimeId,
  output: ComputeClaimView,
  errors: [...runtimeErrors, 'compute_runtime_not_live'],
  tool: false,
  run: async (ctx, caller, { params }) => ({
    job: await ctx.compute.claim(signer(caller), params.runtimeId, caller),
  }),
})

export const renewComputeLease = defineOperation({
  name: 'renewComputeLease',
  cli: ['compute', 'renew'],
  summary: 'Extend the lease of a claimed job',
  tags: runtimeTags,
  method: 'POST',
  path: '/v1/compute/jobs/:id/lease',
  auth: 'signature',
  params: JobId,
  body: ComputeLeaseInput,
  output: z.object({ leaseEndsAt: z.string() }),
  errors: [...runtimeErrors, 'compute_lease_lost'],
  tool: false,
  run: (ctx, caller, { params, body }) =>
    ctx.compute.renew(signer(caller), params.id, body, caller),
})

export const completeComputeJob = defineOperation({
  name: 'completeComputeJob',
  cli: ['compute', 'complete'],
  summary: 'Send a claimed job’s result; refused unless the lease is still held',
  tags: runtimeTags,
  method: 'POST',
  path: '/v1/compute/jobs/:id/result',
  auth: 'signature',
  params: JobId,
  body: ComputeResultInput,
  output: ComputeJobView,
  errors: [...runtimeErrors, 'compute_lease_lost'],
  tool: false,
  run: (ctx, caller, { params, body }) =>
    ctx.compute.complete(signer(caller), params.id, body, caller),
})

/** Every compute operation, in the order they are documented. */
export const computeOperations = [
  submitComputeJob,
  listComputeJobs,
  readComputeJob,
  waitComputeJob,
  cancelComputeJob,
  computeRuntimeHeartbeat,
  stopComputeRuntime,
  claimComputeJob,
  renewComputeLease,
  completeComputeJob,
]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

export const operatorComputeOverview = defineOperation({
  name: 'operatorComputeOverview',
  summary:
    'Compute runtimes and jobs: who runs what, what waits and what ran lately (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/compute',
  auth: 'operator',
  output: z.looseObject({}),
  errors: [],
  tool: false,
  cli: ['dashboard', 'compute'],
  run: (ctx) => ctx.compute.dashboard(),
})

/** The operator's compute reads. */
export const computeDashboardOperations = [operatorComputeOverview]
