import {
  ActivateInput,
  BatonError,
  ClaimNextInput,
  ClaimNextView,
  CreatedTransferView,
  canonicalJson,
  type ErrorCode,
  LeaseInput,
  LeaseView,
  ListTransfersQuery,
  MintedTokenView,
  MintTokenInput,
  ProvisionInput,
  PushInput,
  SnapshotView,
  TerminateInput,
  TransferIdempotencyKey,
  TransferListView,
  TransferView,
  TransferWaitView,
  transferWaitQuery,
  UsageInput,
  UsageView,
} from '@baton/protocol'
import { z } from 'zod'
import { found } from '../ops/found.js'
import type { CompositeTool, Invoke } from '../ops/mcp.js'
import { type Caller, defineOperation, type Operation } from '../ops/operation.js'
import { withProgress } from '../ops/progress.js'
import { checksumOfCanonical, OPERATOR } from './service.js'

const tags = ['session transfer']
const adminTags = ['admin']
// The path parameter keeps its name `id`: metrics label routes by their path template.
const params = z.strictObject({ id: z.string().max(128).describe('The transfer id (tr_…)') })
const notFound: ErrorCode[] = ['transfer_not_found']
const tokenErrors: ErrorCode[] = [
  'transfer_token_malformed',
  'transfer_token_unknown_key',
  'transfer_token_bad_signature',
  'transfer_token_expired',
  'transfer_token_wrong_transfer',
  'transfer_token_wrong_scope',
  'transfer_token_params_mismatch',
  'transfer_token_replayed',
  'transfer_state_conflict',
  'transfer_expired',
]

/** The signing principal's did:key; `signature` auth has already verified and admitted it. */
function principalOf(caller: Caller): string {
  if (!caller.principal) throw new BatonError('signature_missing', 'The request is not signed')
  return caller.principal.principal
}

/** seed 004 snapshot_state: stage a transfer owned by the caller. */
export const snapshotState = defineOperation({
  name: 'snapshotState',
  summary: 'Snapshot a session: stage a transfer owned by the caller (seed 004 snapshot_state)',
  tags,
  method: 'POST',
  path: '/v1/transfers',
  auth: 'signature',
  // The snapshot's shape is checked by the service, which answers `snapshot_invalid` for it.
  body: z.strictObject({
    snapshot: z
      .unknown()
      .describe(
        'The session: systemPrompt, messages, toolState, mcpConfig { servers } and optional metadata',
      ),
    idempotencyKey: TransferIdempotencyKey.optional().describe(
      'Makes a retry safe; the Idempotency-Key header is the alternative',
    ),
  }),
  output: CreatedTransferView,
  status: 201,
  bodyLimit: (config) => config.transfer.snapshotMaxBytes,
  idempotencyKey: true,
  errors: ['snapshot_invalid', 'snapshot_contains_secret', 'snapshot_too_large'],
  tool: {
    name: 'snapshot_state',
    title: 'Snapshot the session state',
    description:
      'Stage a transfer of this session: system prompt, message history, tool state and MCP config. Credentials only as { "credRef": "vault://path#field" } or { "credRef": "env://NAME" }; raw secrets are refused. Answers the transfer id and the SHA-256 checksum of the canonical snapshot. Give an idempotencyKey to make a retry safe.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  cli: { name: ['transfer', 'snapshot'], aliases: { file: '@snapshot' } },
  run: (ctx, caller, { body }) =>
    ctx.transfers.create(principalOf(caller), body, caller.idempotencyKey, caller),
})

/** Transfers the caller owns or runs. */
export const listTransfers = defineOperation({
  name: 'listTransfers',
  summary: 'Transfers the caller owns (role=owner) or runs (role=runtime), newest first',
  tags,
  method: 'GET',
  path: '/v1/transfers',
  auth: 'signature',
  query: ListTransfersQuery,
  output: TransferListView,
  errors: [],
  tool: {
    name: 'list_transfers',
    title: 'List transfers',
    description:
      'Transfers you own (role "owner", the default) or run (role "runtime"), newest first, without their event logs; optionally only those in one state.',
    annotations: { readOnlyHint: true },
  },
  cli: ['transfer', 'list'],
  run: (ctx, caller, { query }) => ctx.transfers.list(principalOf(caller), query),
})

/** A runtime claims the oldest waiting transfer of a tier. */
export const claimNextTransfer = defineOperation({
  name: 'claimNextTransfer',
  summary: 'A runtime claims the oldest provisioned, unclaimed transfer of a tier',
  tags,
  method: 'POST',
  path: '/v1/transfers/claim',
  auth: 'signature',
  body: ClaimNextInput,
  output: ClaimNextView,
  errors: ['tier_unknown', 'transfer_forbidden'],
  tool: {
    name: 'claim_next_transfer',
    title: 'Claim the next transfer of a tier',
    description:
      'As a runtime: claim the oldest provisioned, unclaimed transfer of a tier; answers { transfer: null } when none waits. Only the claiming runtime may then push, run and report usage.',
    annotations: { destructiveHint: false, idempotentHint: false },
  },
  cli: ['transfer', 'claim-next'],
  run: (ctx, caller, { body }) => ctx.transfers.claimNext(principalOf(caller), body, caller),
})

/** seed 004 get_status: the transfer, its budget and its event log. */
export const getStatus = defineOperation({
  name: 'getStatus',
  summary: 'The transfer, its budget and its ordered event log (owner or runtime)',
  tags,
  method: 'GET',
  path: '/v1/transfers/:id',
  auth: 'signature',
  params,
  output: TransferView,
  errors: notFound,
  tool: false,
  cli: ['transfer', 'status'],
  run: (ctx, caller, { params }) => ctx.transfers.get(principalOf(caller), params.id, caller),
})

/** Answers as soon as the transfer passes `version` or ends. */
export const waitTransfer = defineOperation({
  name: 'waitTransfer',
  summary:
    "Answer as soon as the transfer passes `version` or ends, within `seconds` (clamped to the hub's longest wait, 25 s by default)",
  tags,
  method: 'GET',
  path: '/v1/transfers/:id/wait',
  auth: 'signature',
  params,
  query: (config) => transferWaitQuery(config.transfer),
  output: TransferWaitView,
  errors: notFound,
  longPoll: true,
  tool: false,
  cli: ['transfer', 'wait'],
  run: (ctx, caller, { params, query }) =>
    withProgress(
      caller,
      Math.min(query.seconds ?? 0, ctx.config.transfer.maxWaitSeconds),
      ctx.transfers.wait(
        principalOf(caller),
        params.id,
        query.seconds ?? 0,
        query.version,
        caller.signal,
        caller.ip,
        caller,
      ),
    ),
})

/** The snapshot, for the owner and the claiming runtime. */
export const readSnapshot = defineOperation({
  name: 'readSnapshot',
  summary: 'The snapshot content and checksum (owner, or the runtime after its claim)',
  tags,
  method: 'GET',
  path: '/v1/transfers/:id/snapshot',
  auth: 'signature',
  params,
  output: SnapshotView,
  errors: [...notFound, 'transfer_forbidden'],
  tool: false,
  cli: ['transfer', 'snapshot-read'],
  run: (ctx, caller, { params }) => ctx.transfers.snapshot(principalOf(caller), params.id),
})

/** seed 004 provision_runtime: staged → provisioned, with a provision token. */
export const provisionRuntime = defineOperation({
  name: 'provisionRuntime',
  summary: 'staged → provisioned with a provision token bound to tier, budget and rate',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/provision',
  auth: 'signature',
  params,
  body: ProvisionInput,
  output: TransferView,
  errors: [...notFound, 'tier_unknown', 'tier_limit_exceeded', ...tokenErrors],
  tool: false,
  cli: {
    name: ['transfer', 'provision'],
    aliases: { budget: 'budgetMicros', rate: 'rateMicrosPerSecond' },
  },
  run: (ctx, caller, { params, body }) =>
    ctx.transfers.provision(principalOf(caller), params.id, body, caller),
})

/** A runtime claims one provisioned transfer. */
export const claimTransfer = defineOperation({
  name: 'claimTransfer',
  summary: 'A runtime claims a provisioned transfer; only it may then push, run and report',
  description:
    'transfer_claimed and transfer_state_conflict are answered to the owner; any other caller gets transfer_not_found unless the transfer is provisioned, unclaimed and live.',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/claim',
  auth: 'signature',
  params,
  output: TransferView,
  errors: [
    ...notFound,
    'transfer_forbidden',
    'transfer_claimed',
    'transfer_state_conflict',
    'transfer_expired',
  ],
  tool: false,
  cli: ['transfer', 'claim'],
  run: (ctx, caller, { params }) => ctx.transfers.claim(principalOf(caller), params.id, caller),
})

/** seed 004 push_state: provisioned → pushed, confirming the checksum. */
export const pushState = defineOperation({
  name: 'pushState',
  summary: 'provisioned → pushed: the claiming runtime confirms the checksum it computed',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/push',
  auth: 'signature',
  params,
  body: PushInput,
  output: TransferView,
  errors: [
    ...notFound,
    'transfer_forbidden',
    'transfer_state_conflict',
    'transfer_expired',
    'checksum_mismatch',
  ],
  tool: false,
  cli: ['transfer', 'push'],
  run: (ctx, caller, { params, body }) =>
    ctx.transfers.push(principalOf(caller), params.id, body, caller),
})

/** seed 004 activate: pushed → active, the one irreversible step. */
export const activate = defineOperation({
  name: 'activate',
  summary: 'pushed → active with an activate token: the one irreversible step',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/activate',
  auth: 'signature',
  params,
  body: ActivateInput,
  output: TransferView,
  errors: [...notFound, ...tokenErrors],
  tool: false,
  cli: ['transfer', 'activate'],
  run: (ctx, caller, { params, body }) =>
    ctx.transfers.activate(principalOf(caller), params.id, body, caller),
})

/** The claiming runtime takes or renews the lease to run the agent. */
export const leaseTransfer = defineOperation({
  name: 'leaseTransfer',
  summary: 'The claiming runtime takes or renews the lease to run the active agent',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/lease',
  auth: 'signature',
  params,
  body: LeaseInput,
  output: LeaseView,
  errors: [...notFound, 'transfer_forbidden', 'transfer_lease_held', 'transfer_state_conflict'],
  tool: false,
  cli: ['transfer', 'lease'],
  run: (ctx, caller, { params, body }) =>
    ctx.transfers.lease(principalOf(caller), params.id, body, caller),
})

/** seed 004 report_usage: spend, idempotent by key. */
export const reportUsage = defineOperation({
  name: 'reportUsage',
  summary: 'The claiming runtime reports spend, idempotent by key; answers `stop` once insolvent',
  tags,
  method: 'POST',
  path: '/v1/transfers/:id/usage',
  auth: 'signature',
  params,
  body: UsageInput,
  output: UsageView,
  errors: [...notFound, 'transfer_forbidden', 'transfer_state_conflict', 'idempotency_conflict'],
  tool: false,
  cli: { name: ['transfer', 'usage'], aliases: { key: 'idempotencyKey', amount: 'amountMicros' } },
  run: (ctx, caller, { params, body }) =>
    ctx.transfers.usage(principalOf(caller), params.id, body, caller),
})

/** The orchestrator reads any transfer. */
export const adminGetTransfer = defineOperation({
  name: 'adminGetTransfer',
  summary: 'The transfer and its event log (orchestrator)',
  tags: adminTags,
  method: 'GET',
  path: '/admin/v1/transfers/:id',
  auth: 'operator',
  params,
  output: TransferView,
  errors: notFound,
  tool: false,
  cli: ['transfer', 'status'],
  run: (ctx, _caller, { params }) => ctx.transfers.get(OPERATOR, params.id),
})

/** seed 004: tokens come only from the orchestrator, never from an MCP tool. */
export const mintTransferToken = defineOperation({
  name: 'mintTransferToken',
  summary: 'Mint a single-use provision or activate token (orchestrator only, never MCP)',
  tags: adminTags,
  method: 'POST',
  path: '/admin/v1/transfers/:id/tokens',
  auth: 'operator',
  params,
  body: MintTokenInput,
  output: MintedTokenView,
  status: 201,
  errors: [...notFound, 'tier_unknown', 'tier_limit_exceeded'],
  tool: false,
  cli: {
    name: ['transfer', 'token'],
    aliases: { budget: 'budgetMicros', rate: 'rateMicrosPerSecond', ttl: 'ttlSeconds' },
    // A shell wants the token alone, to pass on: `--json` answers the whole minted view.
    text: (out) => (out as MintedTokenView).token,
  },
  run: (ctx, _caller, { params, body }) => ctx.transfers.mint(params.id, body),
})

/** The orchestrator terminates a transfer in any state. */
export const terminateTransfer = defineOperation({
  name: 'terminateTransfer',
  summary: 'Terminate a transfer in any state (orchestrator); repeating it is answered',
  tags: adminTags,
  method: 'POST',
  path: '/admin/v1/transfers/:id/terminate',
  auth: 'operator',
  params,
  body: TerminateInput.optional(),
  output: TransferView,
  errors: notFound,
  tool: false,
  cli: ['transfer', 'terminate'],
  run: (ctx, _caller, { params, body }) => ctx.transfers.terminate(params.id, body),
})

const transferId = z.string().max(128).describe('The transfer id (tr_…)')

/**
 * Seed 004's tools name the transfer `transferId`, where the route's path names it `id`: each
 * tool below keeps the tool's argument and sends the rest of its arguments as the body.
 */
function transferTool(
  op: Operation,
  tool: Pick<CompositeTool, 'name' | 'title' | 'description' | 'annotations' | 'output'>,
  body: z.ZodRawShape,
): CompositeTool {
  return {
    ...tool,
    auth: 'signature',
    input: { transferId, ...body },
    ops: [op],
    call: (invoke, args, caller) => {
      const { transferId: id, ...rest } = args as { transferId: string }
      return invoke(op, { params: { id }, query: {}, body: rest }, caller)
    },
  }
}

const provisionTool = transferTool(
  provisionRuntime,
  {
    name: 'provision_runtime',
    title: 'Provision a destination runtime',
    description:
      'Open a budget for a staged transfer on a runtime tier. Requires a transfer-authorization token from the orchestrator, minted for exactly this tier, budget and rate; you cannot mint one. Money is integer micro-units.',
    annotations: { destructiveHint: false, idempotentHint: false },
    output: TransferView,
  },
  {
    tier: ProvisionInput.shape.tier,
    budgetMicros: ProvisionInput.shape.budgetMicros.describe(
      'The allocated budget in micro-units (1 unit = 1000000)',
    ),
    rateMicrosPerSecond: ProvisionInput.shape.rateMicrosPerSecond.describe(
      'The price of wall time, micro-units per second',
    ),
    token: ProvisionInput.shape.token.describe('The provision token the orchestrator gave you'),
  },
)

const activateTool = transferTool(
  activate,
  {
    name: 'activate',
    title: 'Activate the transfer',
    description:
      'Boot the destination from the pushed snapshot: the one irreversible step. Requires an activate token from the orchestrator.',
    annotations: { destructiveHint: true, idempotentHint: false },
    output: TransferView,
  },
  { token: ActivateInput.shape.token.describe('The activate token the orchestrator gave you') },
)

const claimTool = transferTool(
  claimTransfer,
  {
    name: 'claim_transfer',
    title: 'Claim a transfer',
    description:
      'As a runtime: claim one provisioned transfer. Only the claiming runtime may then push, run and report usage.',
    annotations: { destructiveHint: false, idempotentHint: false },
    output: TransferView,
  },
  {},
)

const leaseTool = transferTool(
  leaseTransfer,
  {
    name: 'lease_transfer',
    title: 'Take or renew the run lease',
    description:
      'As the claiming runtime of an active transfer: take or renew the lease that lets one runtime process (named by instance) run its agent.',
    annotations: { destructiveHint: false, idempotentHint: true },
    output: LeaseView,
  },
  LeaseInput.shape,
)

const reportUsageTool = transferTool(
  reportUsage,
  {
    name: 'report_usage',
    title: 'Report runtime usage',
    description:
      'As the runtime that holds the transfer: report spend in micro-units, idempotent by key. The answer says `stop: true` once the budget is exhausted.',
    annotations: { destructiveHint: false, idempotentHint: true },
    output: UsageView,
  },
  UsageInput.shape,
)

/** seed 004 push_state: with no checksum given, the tool reads the snapshot and computes it. */
const pushStateTool: CompositeTool = {
  name: 'push_state',
  title: 'Push the snapshot to the runtime',
  description:
    'As the runtime that claimed the transfer: fetch the snapshot, recompute its checksum here and confirm it; the hub recomputes too and refuses a mismatch.',
  auth: 'signature',
  input: {
    transferId,
    checksum: PushInput.shape.checksum
      .optional()
      .describe('A checksum you computed; else computed now'),
  },
  output: TransferView,
  ops: [readSnapshot, pushState],
  annotations: { destructiveHint: false, idempotentHint: false },
  call: async (invoke: Invoke, args, caller) => {
    const { transferId: id, checksum } = args as { transferId: string; checksum?: string }
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
    `Read the transfer, its budget and its ordered event log. With wait_seconds (at most ${config.transfer.maxWaitSeconds}) it answers as soon as the version passes the one you have seen.`,
  auth: 'signature',
  input: (config) => ({
    transferId,
    wait_seconds: z.number().int().min(0).max(config.transfer.maxWaitSeconds).optional(),
    version: z.number().int().min(0).optional(),
  }),
  output: TransferView.extend({ changed: z.boolean().optional() }),
  ops: [getStatus, waitTransfer],
  annotations: { readOnlyHint: true },
  call: (invoke, args, caller) => {
    const {
      transferId: id,
      wait_seconds,
      version,
    } = args as { transferId: string; wait_seconds?: number; version?: number }
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

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

const OperatorTransferView = z.looseObject({
  id: z.string(),
  owner: z.string(),
  state: z.string(),
  version: z.number(),
  tier: z.string().nullable(),
  budgetMicros: z.number().nullable(),
  spentMicros: z.number(),
})

export const operatorListTransfers = defineOperation({
  name: 'operatorListTransfers',
  summary:
    'Session transfers, most recently changed first, optionally in one state (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/transfers',
  auth: 'operator',
  query: z.object({ state: z.string().max(500).optional().describe('One transfer state') }),
  output: z.object({ transfers: z.array(OperatorTransferView) }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'transfers'],
  run: async (ctx, _caller, { query }) => ({
    transfers: await ctx.transfers.operatorList(query.state),
  }),
})

export const operatorReadTransfer = defineOperation({
  name: 'operatorReadTransfer',
  summary:
    'One session transfer with its event log and recent usage; never its snapshot (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/transfers/:id',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: OperatorTransferView.extend({
    events: z.array(z.looseObject({ seq: z.number(), type: z.string() })),
    usage: z.array(z.looseObject({ amountMicros: z.number() })),
  }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'transfer'],
  run: async (ctx, _caller, { params }) =>
    found(await ctx.transfers.operatorRead(params.id), 'transfer'),
})

export const operatorReadTransferSnapshot = defineOperation({
  name: 'operatorReadTransferSnapshot',
  summary:
    'The snapshot of one session transfer, when the operator deliberately opens it (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/transfers/:id/snapshot',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: z.object({ id: z.string(), snapshot: z.unknown() }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'transfer-snapshot'],
  run: async (ctx, _caller, { params }) =>
    found(await ctx.transfers.operatorSnapshot(params.id), 'transfer snapshot'),
})

/** The operator's transfer reads. */
export const transferDashboardOperations = [
  operatorListTransfers,
  operatorReadTransfer,
  operatorReadTransferSnapshot,
]
