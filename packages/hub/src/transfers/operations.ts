import {
  canonicalJson,
  contracts,
  LeaseView,
  type SnapshotView,
  TransferView,
  UsageView,
} from '@baton/protocol'
import { z } from 'zod'
import { found } from '../ops/found.js'
import { type CompositeTool, type Invoke, toolArg } from '../ops/mcp.js'
import { bind, type Operation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'
import { withProgress } from '../ops/progress.js'
import { checksumOfCanonical, OPERATOR } from './service.js'

export const snapshotState = bind(contracts.snapshotState, (ctx, caller, { body }) =>
  ctx.transfers.create(signer(caller), body, caller.idempotencyKey, caller),
)

export const listTransfers = bind(contracts.listTransfers, (ctx, caller, { query }) =>
  ctx.transfers.list(signer(caller), query),
)

export const claimNextTransfer = bind(contracts.claimNextTransfer, (ctx, caller, { body }) =>
  ctx.transfers.claimNext(signer(caller), body, caller),
)

export const getStatus = bind(contracts.getStatus, (ctx, caller, { params }) =>
  ctx.transfers.get(signer(caller), params.id, caller),
)

export const waitTransfer = bind(contracts.waitTransfer, (ctx, caller, { params, query }) =>
  withProgress(
    caller,
    Math.min(query.seconds ?? 0, ctx.config.transfer.maxWaitSeconds),
    ctx.transfers.wait(
      signer(caller),
      params.id,
      query.seconds ?? 0,
      query.version,
      caller.signal,
      caller.ip,
      caller,
    ),
  ),
)

export const readSnapshot = bind(contracts.readSnapshot, (ctx, caller, { params }) =>
  ctx.transfers.snapshot(signer(caller), params.id),
)

export const provisionRuntime = bind(contracts.provisionRuntime, (ctx, caller, { params, body }) =>
  ctx.transfers.provision(signer(caller), params.id, body, caller),
)

export const claimTransfer = bind(contracts.claimTransfer, (ctx, caller, { params }) =>
  ctx.transfers.claim(signer(caller), params.id, caller),
)

export const pushState = bind(contracts.pushState, (ctx, caller, { params, body }) =>
  ctx.transfers.push(signer(caller), params.id, body, caller),
)

export const activate = bind(contracts.activate, (ctx, caller, { params, body }) =>
  ctx.transfers.activate(signer(caller), params.id, body, caller),
)

export const leaseTransfer = bind(contracts.leaseTransfer, (ctx, caller, { params, body }) =>
  ctx.transfers.lease(signer(caller), params.id, body, caller),
)

export const reportUsage = bind(contracts.reportUsage, (ctx, caller, { params, body }) =>
  ctx.transfers.usage(signer(caller), params.id, body, caller),
)

export const adminGetTransfer = bind(contracts.adminGetTransfer, (ctx, _caller, { params }) =>
  ctx.transfers.get(OPERATOR, params.id),
)

export const mintTransferToken = bind(
  contracts.mintTransferToken,
  (ctx, _caller, { params, body }) => ctx.transfers.mint(params.id, body),
)

export const terminateTransfer = bind(
  contracts.terminateTransfer,
  (ctx, _caller, { params, body }) => ctx.transfers.terminate(params.id, body),
)

export const operatorListTransfers = bind(
  contracts.operatorListTransfers,
  async (ctx, _caller, { query }) => ({
    transfers: await ctx.transfers.operatorList(query.state),
  }),
)

export const operatorReadTransfer = bind(
  contracts.operatorReadTransfer,
  async (ctx, _caller, { params }) =>
    found(await ctx.transfers.operatorRead(params.id), 'transfer'),
)

export const operatorReadTransferSnapshot = bind(
  contracts.operatorReadTransferSnapshot,
  async (ctx, _caller, { params }) =>
    found(await ctx.transfers.operatorSnapshot(params.id), 'transfer snapshot'),
)

/** The transfer id every seed 004 tool names `transferId`, where its route's path says `id`. */
const transferIdOf = (op: Operation) => toolArg(op, 'params', 'id')

/**
 * A seed 004 tool that is one operation whose path's `id` is named `transferId`: its other
 * arguments are the operation's body fields, as the contract declares them.
 */
function transferTool(
  op: Operation,
  tool: Pick<CompositeTool, 'name' | 'title' | 'description' | 'annotations' | 'output'>,
): CompositeTool {
  const body = op.body instanceof z.ZodObject ? Object.keys(op.body.shape) : []
  return {
    ...tool,
    auth: 'signature',
    args: {
      transferId: transferIdOf(op),
      ...Object.fromEntries(body.map((field) => [field, toolArg(op, 'body', field)])),
    },
    ops: [op],
    call: (invoke, args, caller) => {
      const { transferId: id, ...rest } = args
      return invoke(
        op,
        { params: { id }, query: {}, body: body.length > 0 ? rest : undefined },
        caller,
      )
    },
  }
}

const provisionTool = transferTool(provisionRuntime, {
  name: 'provision_runtime',
  title: 'Provision a destination runtime',
  description:
    'Open a budget for a staged transfer on a runtime tier. Requires a transfer-authorization token from the orchestrator, minted for exactly this tier, budget and rate; you cannot mint one. Money is integer micro-units.',
  annotations: { destructiveHint: false, idempotentHint: false },
  output: TransferView,
})

const activateTool = transferTool(activate, {
  name: 'activate',
  title: 'Activate the transfer',
  description:
    'Boot the destination from the pushed snapshot: the one irreversible step. Requires an activate token from the orchestrator.',
  annotations: { destructiveHint: true, idempotentHint: false },
  output: TransferView,
})

const claimTool = transferTool(claimTransfer, {
  name: 'claim_transfer',
  title: 'Claim a transfer',
  description:
    'As a runtime: claim one provisioned transfer. Only the claiming runtime may then push, run and report usage.',
  annotations: { destructiveHint: false, idempotentHint: false },
  output: TransferView,
})

const leaseTool = transferTool(leaseTransfer, {
  name: 'lease_transfer',
  title: 'Take or renew the run lease',
  description:
    'As the claiming runtime of an active transfer: take or renew the lease that lets one runtime process (named by instance) run its agent.',
  annotations: { destructiveHint: false, idempotentHint: true },
  output: LeaseView,
})

const reportUsageTool = transferTool(reportUsage, {
  name: 'report_usage',
  title: 'Report runtime usage',
  description:
    'As the runtime that holds the transfer: report spend in micro-units, idempotent by key. The answer says `stop: true` once the budget is exhausted.',
  annotations: { destructiveHint: false, idempotentHint: true },
  output: UsageView,
})

/** seed 004 push_state: with no checksum given, the tool reads the snapshot and computes it. */
const pushStateTool: CompositeTool = {
  name: 'push_state',
  title: 'Push the snapshot to the runtime',
  description:
    'As the runtime that claimed the transfer: fetch the snapshot, recompute its checksum here and confirm it (or give the checksum you computed); the hub recomputes too and refuses a mismatch.',
  auth: 'signature',
  args: {
    transferId: transferIdOf(pushState),
    checksum: toolArg(pushState, 'body', 'checksum', { optional: true }),
  },
  output: TransferView,
  ops: [readSnapshot, pushState],
  annotations: { destructiveHint: false, idempotentHint: false },
  call: async (invoke: Invoke, args, caller) => {
    const { transferId: id, checksum } = args
    let sum = checksum
    if (sum === undefined) {
      const view = (await invoke(
        readSnapshot,
        { params: { id }, query: {}, body: undefined },
        caller,
      )) as SnapshotView
      sum = checksumOfCanonical(canonicalJson(view.snapshot))
    }
    return invoke(pushState, { params: { id }, query: {}, body: { checksum: sum } }, caller)
  },
}

/** seed 004 get_status: a read, or with `wait_seconds` a wait, in one tool. */
const getStatusTool: CompositeTool = {
  name: 'get_status',
  title: 'Read a transfer',
  description: (config) =>
    `Read the transfer, its budget and its ordered event log. With wait_seconds (at most ${config.transfer.maxWaitSeconds}; longer is clamped) it answers as soon as the version passes the one you have seen.`,
  auth: 'signature',
  args: {
    transferId: transferIdOf(getStatus),
    wait_seconds: toolArg(waitTransfer, 'query', 'seconds'),
    version: toolArg(waitTransfer, 'query', 'version'),
  },
  // A read answers the transfer; a wait adds whether it changed.
  output: TransferView.extend({ changed: z.boolean().optional() }),
  ops: [getStatus, waitTransfer],
  annotations: { readOnlyHint: true },
  call: (invoke, args, caller) => {
    const { transferId: id, wait_seconds, version } = args
    if (wait_seconds === undefined && version === undefined) {
      return invoke(getStatus, { params: { id }, query: {}, body: undefined }, caller)
    }
    return invoke(
      waitTransfer,
      {
        params: { id },
        query: { seconds: wait_seconds ?? 0, ...(version === undefined ? {} : { version }) },
        body: undefined,
      },
      caller,
    )
  },
}

/** Every session-transfer operation, in the order they are documented. */
export const transferOperations = [
  snapshotState,
  listTransfers,
  claimNextTransfer,
  getStatus,
  waitTransfer,
  readSnapshot,
  provisionRuntime,
  claimTransfer,
  pushState,
  activate,
  leaseTransfer,
  reportUsage,
  adminGetTransfer,
  mintTransferToken,
  terminateTransfer,
]

/** Seed 004's tools whose arguments are not one operation's input as it stands. */
export const transferComposites = [
  provisionTool,
  claimTool,
  pushStateTool,
  activateTool,
  leaseTool,
  reportUsageTool,
  getStatusTool,
]

/** The operator's transfer reads. */
export const transferDashboardOperations = [
  operatorListTransfers,
  operatorReadTransfer,
  operatorReadTransferSnapshot,
]
