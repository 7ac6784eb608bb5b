import { z } from 'zod'
import { defineContract } from '../contract.js'
import type { ErrorCode } from '../errors.js'
import {
  ActivateInput,
  ClaimNextInput,
  ClaimNextView,
  CreatedTransferView,
  CreateTransferInput,
  LeaseInput,
  LeaseView,
  ListTransfersQuery,
  MintedTokenView,
  MintTokenInput,
  ProvisionInput,
  PushInput,
  SnapshotView,
  TerminateInput,
  TransferListView,
  TransferView,
  TransferWaitView,
  transferWaitQuery,
  UsageInput,
  UsageView,
} from '../transfers.js'

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

/** seed 004 snapshot_state: stage a transfer owned by the caller. */
export const snapshotState = defineContract({
  name: 'snapshotState',
  summary: 'Snapshot a session: stage a transfer owned by the caller (seed 004 snapshot_state)',
  tags,
  method: 'POST',
  path: '/v1/transfers',
  auth: 'signature',
  body: CreateTransferInput,
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
})

/** Transfers the caller owns or runs. */
export const listTransfers = defineContract({
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
})

/** A runtime claims the oldest waiting transfer of a tier. */
export const claimNextTransfer = defineContract({
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
})

/** seed 004 get_status: the transfer, its budget and its event log. */
export const getStatus = defineContract({
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
})

/** Answers as soon as the transfer passes `version` or ends. */
export const waitTransfer = defineContract({
  name: 'waitTransfer',
  summary:
    "Answer as soon as the transfer passes `version` or ends, within `seconds` (clamped to the hub's longest wait)",
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
})

/** The snapshot, for the owner and the claiming runtime. */
export const readSnapshot = defineContract({
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
})

/** seed 004 provision_runtime: staged → provisioned, with a provision token. */
export const provisionRuntime = defineContract({
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
})

/** A runtime claims one provisioned transfer. */
export const claimTransfer = defineContract({
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
})

/** seed 004 push_state: provisioned → pushed, confirming the checksum. */
export const pushState = defineContract({
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
})

/** seed 004 activate: pushed → active, the one irreversible step. */
export const activate = defineContract({
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
})

/** The claiming runtime takes or renews the lease to run the agent. */
export const leaseTransfer = defineContract({
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
})

/** seed 004 report_usage: spend, idempotent by key. */
export const reportUsage = defineContract({
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
})

/** The orchestrator reads any transfer. */
export const adminGetTransfer = defineContract({
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
})

/** seed 004: tokens come only from the orchestrator, never from an MCP tool. */
export const mintTransferToken = defineContract({
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
})

/** The orchestrator terminates a transfer in any state. */
export const terminateTransfer = defineContract({
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
})

/** Every session-transfer operation, in the order they are documented. */
export const transferContracts = [
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

export const operatorListTransfers = defineContract({
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
})

export const operatorReadTransfer = defineContract({
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
})

export const operatorReadTransferSnapshot = defineContract({
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
})

/** The operator's transfer reads. */
export const transferDashboardContracts = [
  operatorListTransfers,
  operatorReadTransfer,
  operatorReadTransferSnapshot,
]
