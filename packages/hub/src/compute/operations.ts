import { contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { signer } from '../ops/principal.js'
import { withProgress } from '../ops/progress.js'
import { depthExceeded } from './json-expr.js'
import { DEFAULT_COMPUTE_LIMITS } from './limits.js'

export const submitComputeJob = bind(
  contracts.submitComputeJob,
  (ctx, caller, { body }) => ctx.compute.submit(signer(caller), body, caller),
  {
    // A program or input nested past the hub's JSON guard is far deeper than maxDepth: it
    // answers the documented compute code, like any other nesting past the bound.
    tooDeep: (field) => {
      const where = field.split('.')[0]
      if (where === 'program' || where === 'input') {
        return depthExceeded(where, DEFAULT_COMPUTE_LIMITS.maxDepth)
      }
      return undefined
    },
  },
)

export const listComputeJobs = bind(contracts.listComputeJobs, (ctx, caller, { query }) =>
  ctx.compute.list(signer(caller), query.limit),
)

export const readComputeJob = bind(contracts.readComputeJob, (ctx, caller, { params }) =>
  ctx.compute.get(signer(caller), params.id),
)

export const waitComputeJob = bind(contracts.waitComputeJob, (ctx, caller, { params, query }) =>
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
)

export const cancelComputeJob = bind(contracts.cancelComputeJob, (ctx, caller, { params }) =>
  ctx.compute.cancel(signer(caller), params.id, caller),
)

export const computeRuntimeHeartbeat = bind(
  contracts.computeRuntimeHeartbeat,
  (ctx, caller, { body }) => ctx.compute.heartbeat(signer(caller), body, caller),
)

export const stopComputeRuntime = bind(contracts.stopComputeRuntime, (ctx, caller, { params }) =>
  ctx.compute.stopRuntime(signer(caller), params.runtimeId, caller),
)

export const claimComputeJob = bind(contracts.claimComputeJob, async (ctx, caller, { params }) => ({
  job: await ctx.compute.claim(signer(caller), params.runtimeId, caller),
}))

export const renewComputeLease = bind(
  contracts.renewComputeLease,
  (ctx, caller, { params, body }) => ctx.compute.renew(signer(caller), params.id, body, caller),
)

export const completeComputeJob = bind(
  contracts.completeComputeJob,
  (ctx, caller, { params, body }) => ctx.compute.complete(signer(caller), params.id, body, caller),
)

export const operatorComputeOverview = bind(contracts.operatorComputeOverview, (ctx) =>
  ctx.compute.dashboard(),
)

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

/** The operator's compute reads. */
export const computeDashboardOperations = [operatorComputeOverview]
