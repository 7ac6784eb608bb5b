import { z } from 'zod'
import { DEFAULT_MAX_WAIT_SECONDS, waitSeconds, wholeNumber, withCode } from './codecs.js'
import { jsonValue } from './json.js'
import { handedTrace } from './trace.js'

/** Session transfer defaults (seed 004); each is overridable by the hub's configuration. */
export const TRANSFER_LIMITS = {
  /** How long a transfer may stay staged, provisioned or pushed before it expires. */
  ttlMs: 30 * 60 * 1000,
  /** How long an insolvent transfer runs on before the reaper terminates it. */
  graceMs: 60 * 1000,
  /** How long a transfer token is valid after it is minted. */
  tokenTtlMs: 5 * 60 * 1000,
  /** Largest snapshot request body, in bytes. */
  snapshotMaxBytes: 32 * 1024 * 1024,
  /** Longest long-poll wait on a transfer, in seconds; longer waits are clamped. */
  maxWaitSeconds: DEFAULT_MAX_WAIT_SECONDS,
  /** Longest idempotency key of a snapshot or a usage report. */
  maxIdempotencyKeyChars: 200,
} as const

/** The states of a transfer, in lifecycle order (seed 004). */
export const TRANSFER_STATES = [
  'staged',
  'provisioned',
  'pushed',
  'active',
  'insolvent',
  'terminated',
] as const
/** One state of a transfer. */
export type TransferState = (typeof TRANSFER_STATES)[number]

/** The states that expire after the time-to-live (seed 004). */
export const EXPIRING_STATES: readonly TransferState[] = ['staged', 'provisioned', 'pushed']

/** What a transfer token authorizes: one of the two token-gated moves (seed 004). */
export const TransferTokenScope = z.enum(['provision', 'activate'])
/** A transfer token's scope. */
export type TransferTokenScope = z.infer<typeof TransferTokenScope>

/** Money: integer micro-units (1 unit = 1 000 000), never a float. */
export const Micros = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)

/** A tier name, as configured on the hub. */
export const TierName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'lowercase letters, digits, _ and -')

/** An idempotency key of a snapshot or a usage report. */
export const TransferIdempotencyKey = z
  .string()
  .min(1)
  .max(TRANSFER_LIMITS.maxIdempotencyKeyChars)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')

/**
 * A credential reference, never a credential: `vault://<path>[#<field>]` or `env://<NAME>`.
 *
 * @example { credRef: 'vault://kv/agents/github#token' }
 */
export const CredRef = z
  .string()
  .max(512)
  .regex(
    /^(vault:\/\/[A-Za-z0-9._\-/]+(#[A-Za-z0-9._-]+)?|env:\/\/[A-Z_][A-Z0-9_]*)$/,
    'vault://<path>[#<field>] or env://<NAME>',
  )

/** One message of the history: a role and text or structured parts. */
export const SnapshotMessage = z.looseObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(jsonValue())]),
})

/** One MCP server the session used; credentials only as `{ credRef }` objects. */
export const McpServerConfig = z.looseObject({
  name: z.string().min(1).max(200),
})

/**
 * An agent session as snapshotted (seed 004): system prompt, message history, tool state and MCP
 * config. Credentials appear only as `{ "credRef": "vault://…" | "env://…" }`.
 */
export const Snapshot = z.strictObject({
  systemPrompt: z.string(),
  messages: z.array(SnapshotMessage),
  toolState: z.record(z.string(), jsonValue()).default({}),
  mcpConfig: z.strictObject({ servers: z.array(McpServerConfig) }).default({ servers: [] }),
  metadata: z.record(z.string(), jsonValue()).optional(),
})
/** A parsed snapshot. */
export type Snapshot = z.infer<typeof Snapshot>

/** The body of `POST /v1/transfers`: a snapshot, and a key that makes the create safe to repeat. */
export const CreateTransferInput = z.strictObject({
  snapshot: withCode(Snapshot, 'snapshot_invalid', undefined, { within: true }).describe(
    'The session: systemPrompt, messages, toolState, mcpConfig { servers } and optional metadata',
  ),
  idempotencyKey: TransferIdempotencyKey.optional().describe(
    'Makes a retry safe; the Idempotency-Key header is the alternative',
  ),
})
/** A parsed snapshot request. */
export type CreateTransferInput = z.infer<typeof CreateTransferInput>

/** The body of `POST /v1/transfers/{id}/provision`; the token must authorize these exact values. */
export const ProvisionInput = z.strictObject({
  tier: TierName,
  budgetMicros: Micros.min(1).describe('The allocated budget in micro-units (1 unit = 1000000)'),
  rateMicrosPerSecond: Micros.describe('The price of wall time, micro-units per second'),
  token: z.string().min(1).max(4096).describe('The provision token the orchestrator gave you'),
})
/** A parsed provision request. */
export type ProvisionInput = z.infer<typeof ProvisionInput>

/** The body of `POST /v1/transfers/{id}/activate`. */
export const ActivateInput = z.strictObject({
  token: z.string().min(1).max(4096).describe('The activate token the orchestrator gave you'),
})
/** A parsed activate request. */
export type ActivateInput = z.infer<typeof ActivateInput>

/** The body of `POST /v1/transfers/claim`: the next provisioned transfer of a tier. */
export const ClaimNextInput = z.strictObject({ tier: TierName })
/** A parsed claim-next request. */
export type ClaimNextInput = z.infer<typeof ClaimNextInput>

/** The body of `POST /v1/transfers/{id}/push`: the checksum the runtime computed itself. */
export const PushInput = z.strictObject({ checksum: z.string().min(1).max(200) })
/** A parsed push request. */
export type PushInput = z.infer<typeof PushInput>

/** The body of `POST /v1/transfers/{id}/lease`: one runtime process takes or renews the run. */
export const LeaseInput = z.strictObject({
  instance: z
    .string()
    .min(8)
    .max(100)
    .regex(/^[\x21-\x7e]+$/),
})
/** A parsed lease request. */
export type LeaseInput = z.infer<typeof LeaseInput>

/** The body of `POST /v1/transfers/{id}/usage` (seed 004 report_usage). */
export const UsageInput = z.strictObject({
  idempotencyKey: TransferIdempotencyKey,
  amountMicros: Micros,
})
/** A parsed usage report. */
export type UsageInput = z.infer<typeof UsageInput>

const TokenTtlSeconds = z.number().int().min(1).max(3600)

/**
 * The body of `POST /admin/v1/transfers/{id}/tokens`: what the token authorizes. seed 004: a
 * provision token binds the tier, budget and rate the runtime must provision under; an activate
 * token binds none of them.
 */
export const MintTokenInput = z.discriminatedUnion('scope', [
  z.strictObject({
    scope: z.literal('provision'),
    tier: TierName,
    budgetMicros: Micros.min(1),
    rateMicrosPerSecond: Micros,
    ttlSeconds: TokenTtlSeconds.optional(),
  }),
  z.strictObject({
    scope: z.literal('activate'),
    ttlSeconds: TokenTtlSeconds.optional(),
  }),
])
/** A parsed mint request. */
export type MintTokenInput = z.infer<typeof MintTokenInput>

/** Whose transfers a listing answers: those the caller owns, or those it runs. */
export const TransferRole = z.enum(['owner', 'runtime'])
/** A listing's role. */
export type TransferRole = z.infer<typeof TransferRole>

/** The query of `GET /v1/transfers`. */
export const ListTransfersQuery = z.strictObject({
  role: TransferRole.optional().describe('owner (default) or runtime'),
  state: z.enum(TRANSFER_STATES).optional().describe('Only transfers in this state'),
})
/** A parsed listing query. */
export type ListTransfersQuery = z.output<typeof ListTransfersQuery>

/** The query of `GET /v1/transfers/{id}/wait` under a hub's longest wait. */
export function transferWaitQuery(
  limits: { maxWaitSeconds: number } = { maxWaitSeconds: TRANSFER_LIMITS.maxWaitSeconds },
) {
  return z.strictObject({
    seconds: waitSeconds()
      .optional()
      .describe(`How long to wait (default 0); longer than ${limits.maxWaitSeconds} is clamped`),
    version: wholeNumber()
      .optional()
      .describe('The version the caller has seen; a later version answers at once'),
  })
}
/** The query of a transfer wait under the default limits. */
export const TransferWaitQuery = transferWaitQuery()
/** A parsed transfer wait query. */
export type TransferWaitQuery = z.output<typeof TransferWaitQuery>

/** The body of `POST /admin/v1/transfers/{id}/terminate`. */
export const TerminateInput = z.strictObject({
  reason: z.string().max(200).optional(),
})
/** A parsed terminate request. */
export type TerminateInput = z.infer<typeof TerminateInput>

/** One entry of a transfer's ordered event log. */
export const TransferEventView = z.object({
  seq: z.number().int(),
  type: z.string(),
  from: z.enum(TRANSFER_STATES).nullable(),
  to: z.enum(TRANSFER_STATES),
  actor: z.string(),
  at: z.iso.datetime(),
  data: z.record(z.string(), z.unknown()),
})
/** One entry of a transfer's event log. */
export type TransferEventView = z.infer<typeof TransferEventView>

/** A transfer with its budget and ordered event log (seed 004 get_status). */
export const TransferView = z.object({
  transferId: z.string(),
  state: z.enum(TRANSFER_STATES),
  version: z.number().int(),
  owner: z.string(),
  runtime: z.string().nullable(),
  tier: z.string().nullable(),
  budgetMicros: z.number().int().nullable(),
  rateMicrosPerSecond: z.number().int().nullable(),
  spentMicros: z.number().int(),
  remainingMicros: z.number().int().nullable(),
  checksum: z.string(),
  snapshotBytes: z.number().int(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  /** When a staged, provisioned or pushed transfer expires; null once active or ended. */
  expiresAt: z.iso.datetime().nullable(),
  graceEndsAt: z.iso.datetime().nullable(),
  /** Why a terminated transfer ended: `expired`, `insolvent` or `orchestrator`. */
  endReason: z.string().nullable(),
  events: z.array(TransferEventView),
  ...handedTrace('the request that staged or, later, provisioned the transfer'),
})
/** A transfer as read. */
export type TransferView = z.infer<typeof TransferView>

/** The answer to a snapshot: the transfer, and whether it repeats an earlier create. */
export const CreatedTransferView = TransferView.extend({ repeated: z.boolean() })
/** A snapshot's answer. */
export type CreatedTransferView = z.infer<typeof CreatedTransferView>

/** A waited-for transfer: `changed` tells whether its version passed the one seen. */
export const TransferWaitView = TransferView.extend({ changed: z.boolean() })
/** A wait's answer. */
export type TransferWaitView = z.infer<typeof TransferWaitView>

/** The transfers a caller owns or runs, newest first, without their event logs. */
export const TransferListView = z.object({ transfers: z.array(TransferView) })
/** A transfer listing. */
export type TransferListView = z.infer<typeof TransferListView>

/** The answer to a claim of the next transfer of a tier: null when none waits. */
export const ClaimNextView = z.object({ transfer: TransferView.nullable() })
/** A claim-next answer. */
export type ClaimNextView = z.infer<typeof ClaimNextView>

/** The answer to a usage report: where the budget stands and whether the runtime must stop. */
export const UsageView = z.object({
  transferId: z.string(),
  state: z.enum(TRANSFER_STATES),
  spentMicros: z.number().int(),
  budgetMicros: z.number().int(),
  remainingMicros: z.number().int(),
  /** True once the transfer is insolvent or terminated: the runtime must stop its agent. */
  stop: z.boolean(),
  graceEndsAt: z.iso.datetime().nullable(),
  /** True when this key was already reported; nothing was charged again. */
  repeated: z.boolean(),
})
/** A usage report's answer. */
export type UsageView = z.infer<typeof UsageView>

/** A snapshot's content with its checksum, for the owner and the claiming runtime. */
export const SnapshotView = z.object({
  transferId: z.string(),
  checksum: z.string(),
  snapshot: Snapshot,
})
/** A snapshot as read. */
export type SnapshotView = z.infer<typeof SnapshotView>

/** A minted transfer token, shown once. */
export const MintedTokenView = z.object({
  token: z.string(),
  transferId: z.string(),
  scope: TransferTokenScope,
  kid: z.string(),
  jti: z.string(),
  expiresAt: z.iso.datetime(),
})
/** A minted token. */
export type MintedTokenView = z.infer<typeof MintedTokenView>

/** A lease on running a transfer's agent, held by one runtime process. */
export const LeaseView = z.object({
  transferId: z.string(),
  instance: z.string(),
  leaseEndsAt: z.iso.datetime(),
  /** True when this instance already held the lease (a renewal). */
  renewed: z.boolean(),
})
/** A lease's answer. */
export type LeaseView = z.infer<typeof LeaseView>
