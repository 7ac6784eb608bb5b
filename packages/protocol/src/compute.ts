import { z } from 'zod'
import { DEFAULT_MAX_WAIT_SECONDS, waitSeconds, wholeNumber } from './codecs.js'
import { jsonValue } from './json.js'
import { handedTrace } from './trace.js'

/** The states of a compute job; `succeeded`, `failed` and `canceled` are final. */
export const COMPUTE_JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const
/** One compute job state. */
export type ComputeJobState = (typeof COMPUTE_JOB_STATES)[number]

const Language = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9.-]*$/, 'a language name such as json-expr-v1')

/** The body of `POST /v1/compute/jobs`: a program, its input (inline or a resource) and a key. */
export const SubmitComputeJobInput = z
  .strictObject({
    language: Language,
    program: jsonValue(),
    input: jsonValue().optional(),
    inputResourceId: z.string().min(1).max(64).optional(),
    idempotencyKey: z
      .string()
      .regex(/^[\x21-\x7e]{8,255}$/, '8 to 255 printable ASCII characters without spaces'),
    output: z
      .strictObject({
        resourceId: z.string().min(1).max(64),
        expectedVersion: z.number().int().min(1),
      })
      .optional(),
  })
  .refine((b) => !(b.input !== undefined && b.inputResourceId !== undefined), {
    message: 'give input or inputResourceId, not both',
    path: ['inputResourceId'],
  })
  .meta({ not: { required: ['input', 'inputResourceId'] } })
/** A parsed submit request. */
export type SubmitComputeJobInput = z.infer<typeof SubmitComputeJobInput>

/** Compute listing defaults: jobs answered per page when `limit` is not given, and at most. */
export const COMPUTE_LIST_LIMITS = { defaultPageSize: 50, maxPageSize: 100 } as const

/** The compute limits a hub publishes by default that its operator may change. */
export const COMPUTE_LIMITS = { maxWaitSeconds: DEFAULT_MAX_WAIT_SECONDS } as const

/** The query of `GET /v1/compute/jobs`. */
export const ListComputeJobsQuery = z.strictObject({
  limit: wholeNumber({ min: 1, max: COMPUTE_LIST_LIMITS.maxPageSize })
    .optional()
    .describe(
      `At most this many, 1 to ${COMPUTE_LIST_LIMITS.maxPageSize} (default ${COMPUTE_LIST_LIMITS.defaultPageSize})`,
    ),
})
/** A parsed compute listing query. */
export type ListComputeJobsQuery = z.output<typeof ListComputeJobsQuery>

/** The path parameters of `GET /v1/compute/jobs/{id}/wait/{seconds}` under a hub's longest wait. */
export function computeWaitParams(limits: { maxWaitSeconds: number }) {
  return z.strictObject({
    id: z.string().max(128).describe('The job id'),
    seconds: waitSeconds().describe(
      `How long to wait; longer than ${limits.maxWaitSeconds} is clamped`,
    ),
  })
}

/** The query of a compute job wait. */
export const ComputeWaitQuery = z.strictObject({
  version: wholeNumber()
    .optional()
    .describe('The version the caller has seen; a later version answers at once'),
})

/** A compute job as its submitter sees it. */
export const ComputeJobView = z.object({
  jobId: z.string(),
  language: z.string(),
  state: z.enum(COMPUTE_JOB_STATES),
  /** Increases by one on every change of the job. */
  version: z.number().int(),
  output: jsonValue().optional(),
  /** The failure, when `failed`: a stable code from the error registry and a message. */
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  steps: z.number().int().optional(),
  /** Where the output was written, with the version it made, when the job asked for it. */
  outputResource: z
    .object({
      resourceId: z.string(),
      expectedVersion: z.number().int(),
      version: z.number().int().optional(),
    })
    .optional(),
  attempts: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().optional(),
  /** True when this answer repeats an earlier submit with the same idempotencyKey. */
  repeated: z.boolean().optional(),
})
/** A compute job view. */
export type ComputeJobView = z.infer<typeof ComputeJobView>

/** A long poll's answer: the job, and whether it changed since the version the caller had. */
export const ComputeJobWaitView = ComputeJobView.extend({ changed: z.boolean() })
/** A compute job wait answer. */
export type ComputeJobWaitView = z.infer<typeof ComputeJobWaitView>

/** The body of a runtime's heartbeat: which process it is and the languages it serves. */
export const ComputeRuntimeInput = z.strictObject({
  runtimeId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, '8 to 64 of A-Z a-z 0-9 _ -'),
  languages: z.array(Language).min(1).max(16),
})
/** A parsed runtime heartbeat. */
export type ComputeRuntimeInput = z.infer<typeof ComputeRuntimeInput>

/** A runtime's registration as the hub holds it. */
export const ComputeRuntimeView = z.object({
  runtimeId: z.string(),
  languages: z.array(z.string()),
  expiresAt: z.string(),
})
/** A compute runtime view. */
export type ComputeRuntimeView = z.infer<typeof ComputeRuntimeView>

/** A job as its runtime receives it: what to run, the lease to hold, and the step bound. */
export const ClaimedComputeJobView = z.object({
  jobId: z.string(),
  language: z.string(),
  program: jsonValue(),
  input: jsonValue(),
  leaseId: z.string(),
  leaseEndsAt: z.string(),
  /** The most steps this run may take: the hub's bound, or less of the owner's daily quota. */
  maxSteps: z.number().int(),
  ...handedTrace('the request that submitted the job'),
})
/** A claimed compute job. */
export type ClaimedComputeJobView = z.infer<typeof ClaimedComputeJobView>

/** The answer of a claim: a job, or none when nothing is queued. */
export const ComputeClaimView = z.object({ job: ClaimedComputeJobView.nullable() })
/** A compute claim answer. */
export type ComputeClaimView = z.infer<typeof ComputeClaimView>

/** The body of a lease renewal. */
export const ComputeLeaseInput = z.strictObject({ leaseId: z.string().min(1).max(64) })
/** A parsed lease renewal. */
export type ComputeLeaseInput = z.infer<typeof ComputeLeaseInput>

/** A runtime's result: the output, or a failure with a registered code. */
export const ComputeResultInput = z.strictObject({
  leaseId: z.string().min(1).max(64),
  ok: z.boolean(),
  output: jsonValue().optional(),
  steps: z.number().int().min(0).optional(),
  error: z
    .strictObject({ code: z.string().min(1).max(64), message: z.string().max(1000) })
    .optional(),
})
/** A parsed compute result. */
export type ComputeResultInput = z.infer<typeof ComputeResultInput>

/**
 * seed 000: live compute availability. `supported` is what the hub accepts; `available` only the
 * languages a live worker serves now, so "supported" is never mistaken for "a worker is there".
 */
export const RuntimeAvailability = z.object({
  ready: z.boolean(),
  available: z.array(
    z.object({
      language: z.string(),
      workers: z.number().int(),
      queued: z.number().int(),
    }),
  ),
  supported: z.array(z.string()),
})
/** Live compute availability. */
export type RuntimeAvailability = z.infer<typeof RuntimeAvailability>
