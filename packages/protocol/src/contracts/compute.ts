import { z } from 'zod'
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
} from '../compute.js'
import { defineContract } from '../contract.js'

const tags = ['compute']
const runtimeTags = ['compute runtimes']
const JobId = z.strictObject({ id: z.string().max(128).describe('The job id') })
const RuntimeId = z.strictObject({ runtimeId: z.string().max(128).describe('The runtime id') })
const runtimeErrors = ['compute_runtime_forbidden'] as const

/** seed 000: bounded json-expr-v1 compute, refused at once when no live runtime serves it. */
export const submitComputeJob = defineContract({
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
  tool: {
    name: 'submit_compute_job',
    title: 'Submit a compute job',
    description:
      'Run a bounded json-expr-v1 program (JSON Logic, docs/compute.md) on a JSON input, or on the data of a resource you may read (inputResourceId). Give an idempotencyKey of your own so a repeat answers the same job. Optionally write the output into a resource you may update, at expectedVersion. Answers the job; wait for it with wait_compute_job.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

export const listComputeJobs = defineContract({
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
})

export const readComputeJob = defineContract({
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
})

export const waitComputeJob = defineContract({
  name: 'waitComputeJob',
  cli: ['compute', 'wait'],
  summary:
    "Answer as soon as the job changes or ends, within {seconds} (clamped to the hub's longest wait)",
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
})

export const cancelComputeJob = defineContract({
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
})

/** A runtime's heartbeat: it is live in runtimeAvailability for BATON_COMPUTE_RUNTIME_TTL_SECONDS. */
export const computeRuntimeHeartbeat = defineContract({
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
})

export const stopComputeRuntime = defineContract({
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
})

export const claimComputeJob = defineContract({
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
})

export const renewComputeLease = defineContract({
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
})

export const completeComputeJob = defineContract({
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
})

/** Every compute operation, in the order they are documented. */
export const computeContracts = [
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

export const operatorComputeOverview = defineContract({
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
})

/** The operator's compute reads. */
export const computeDashboardContracts = [operatorComputeOverview]
