import { z } from 'zod'
import { BudgetView } from './budgets.js'
import { canonicalJson } from './canonical-json.js'
import { wholeNumber } from './codecs.js'
import type { GrantView } from './resources.js'
import { handedTrace } from './trace.js'

/**
 * The `typ` header of a hop receipt: a compact JWS signed with the hub's Ed25519 key, as a
 * message receipt is, over a `HopReceiptPayload`. Verify it with the `hubKey` of discovery.
 */
export const HOP_RECEIPT_TYPE = 'baton-hop-receipt+jws'

/** Limits of what the hub witnesses (seed 003 recommends a chain of at most 16 offers). */
export const HOP_LIMITS = {
  /** Largest signed element, in octets (seed 003: receivers bound element size). */
  maxElementOctets: 16 * 1024,
  /** Most chain elements a request may carry; the checks refuse more than 15 as `too-deep`. */
  maxChainElements: 32,
  /** Hop inbox entries answered per page when `limit` is not given. */
  defaultPageSize: 20,
  /** Most hop inbox entries per page. */
  maxPageSize: 100,
} as const

/**
 * A handoff digest (seed 003): the unpadded base64url SHA-256 of an offer's octets, 43 characters.
 * A well-formed digest of no hop the caller took part in answers `hop_not_found`.
 */
export const HandoffDigest = z
  .string()
  .regex(/^[A-Za-z0-9_-]{43}$/, 'a handoff digest: 43 base64url characters')

/** The path of a hop: its handoff digest. */
export const HopRef = z.strictObject({
  digest: HandoffDigest.describe('The handoff digest of the offer (seed 003)'),
})
/** A parsed hop path. */
export type HopRef = z.output<typeof HopRef>

/** The query of `GET /v1/hops/inbox`: an exclusive sequence and a page size. */
export const HopInboxQuery = z.strictObject({
  after: wholeNumber().optional().describe('Exclusive sequence (default 0)'),
  limit: wholeNumber({ min: 1, max: HOP_LIMITS.maxPageSize })
    .optional()
    .describe(
      `At most this many, 1 to ${HOP_LIMITS.maxPageSize} (default ${HOP_LIMITS.defaultPageSize})`,
    ),
})
/** A parsed hop inbox query. */
export type HopInboxQuery = z.output<typeof HopInboxQuery>

/** A signed element as JSON carries it: the ASCII JWS Compact Serialization. */
const Element = z.string().min(1).max(HOP_LIMITS.maxElementOctets)

/** The Handoff object of seed 003: the signed current offer and, when carried, the chain. */
export const HandoffObject = z.strictObject({
  offer: Element,
  chain: z.array(Element).max(HOP_LIMITS.maxChainElements).optional(),
})

/** The body of `POST /v1/hops`: a Handoff object for the principal `to`, who must be its `aud`. */
export const OfferHandoffInput = z.strictObject({
  to: z.string().min(1).max(200).describe('The delegate: an admitted did:key, the offer aud'),
  handoff: HandoffObject,
})
/** A parsed offer request. */
export type OfferHandoffInput = z.output<typeof OfferHandoffInput>

/** The body of `POST /v1/hops/statuses`: one signed status (seed 003). */
export const AnswerHandoffInput = z.strictObject({
  status: Element.describe('The signed status, as JWS compact text'),
})
/** A parsed status request. */
export type AnswerHandoffInput = z.output<typeof AnswerHandoffInput>

/** A hop's state as the hub witnesses it; `expired` is the offer past exp with no status. */
export const HopState = z.enum([
  'offered',
  'accepted',
  'rejected',
  'completed',
  'failed',
  'canceled',
  'expired',
])

/** What the hub reports for one reference (seed 003: never verified without the check). */
export const RefOutcomeView = z.object({
  ref: z.record(z.string(), z.unknown()),
  outcome: z.enum(['verified', 'mismatch', 'unverifiable', 'not-checked']),
})

/**
 * The octets of a hub grant that an offer's `grant` digests: the RFC 8785 canonical JSON of the
 * grant's terms, which never change once it is issued (its revocation and status are not terms).
 * @example const grant = grantDigest(hubGrantOctets(view))
 */
export function hubGrantOctets(grant: Omit<GrantView, 'revokedAt' | 'status'>): string {
  return canonicalJson({
    id: grant.id,
    resourceId: grant.resourceId,
    issuer: grant.issuer,
    subject: grant.subject,
    actions: grant.actions,
    delegable: grant.delegable,
    expiresAt: grant.expiresAt,
    parentId: grant.parentId,
    createdAt: grant.createdAt,
  })
}

/**
 * What the hub reports for an offer's `grant` (seed 003: never verified without the check):
 * `verified` when it is the digest of a hub grant the delegator issued or holds, with that grant's
 * status now; `unverifiable` when it digests no such grant (another system's credential, a grant
 * the delegator may not see, or none at all answer alike); `not-checked` when the hub checks none.
 */
export const GrantOutcomeView = z.object({
  digest: z.string(),
  outcome: z.enum(['verified', 'mismatch', 'unverifiable', 'not-checked']),
  status: z.enum(['active', 'expired', 'revoked']).optional(),
})
/** A grant outcome. */
export type GrantOutcomeView = z.infer<typeof GrantOutcomeView>

/** One status the hub accepted for a hop. */
export const HopStatusView = z.object({
  digest: z.string(),
  iss: z.string(),
  state: z.string(),
  reason: z.string().nullable(),
  status: z.string().describe('The signed status exactly as received'),
  receipt: z.string(),
  receivedAt: z.string(),
})

/** A hop as its delegator and delegate see it. */
export const HopView = z.object({
  digest: z.string().describe('The handoff digest of the offer'),
  hop: z.string(),
  iss: z.string(),
  aud: z.string(),
  dialog: z.string(),
  task: z.string().nullable(),
  prev: z.string().nullable(),
  state: HopState,
  outcome: z
    .enum(['completed', 'failed'])
    .nullable()
    .describe(
      "The delegate's outcome, once reported; beside `canceled` it arrived after the delegator's cancel (seed 003: a cancel does not show that the work took no effect)",
    ),
  flags: z.array(z.string()),
  offer: z.string().describe('The signed offer exactly as received'),
  chain: z.array(z.string()).describe('The carried chain, oldest first, verbatim'),
  refs: z.array(RefOutcomeView),
  grant: GrantOutcomeView.nullable().describe(
    "The offer's grant member as checked; null when none",
  ),
  receipt: z.string().describe('The hub receipt for the delivery of the offer'),
  statuses: z.array(HopStatusView),
  lastStatus: z.string().nullable().describe('The last status, to resend as identical octets'),
  budget: BudgetView.nullable().describe(
    "The hop's budget ledger, when its offer carries a budget member; null when none",
  ),
  iat: z.number(),
  exp: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  ...handedTrace('the request that offered the hop'),
})
/** A hop view. */
export type HopView = z.infer<typeof HopView>

/** The answer to an offer: the hop, and whether it was a retransmission of identical octets. */
export const OfferedHopView = z.object({ hop: HopView, retransmission: z.boolean() })
/** An offer answer. */
export type OfferedHopView = z.infer<typeof OfferedHopView>

/**
 * The answer to a status: the hop after it, whether the status changed the hop's state or outcome,
 * and which hops a cancel reached down the chain.
 */
export const AnsweredHopView = z.object({
  hop: HopView,
  retransmission: z.boolean(),
  changed: z
    .boolean()
    .describe(
      "Whether this status moved the hop's state or outcome; false for a retransmission and for a status recorded and delivered that changed neither",
    ),
  propagated: z.array(z.string()).describe('Digests of downstream offers told of a cancel'),
})
/** A status answer. */
export type AnsweredHopView = z.infer<typeof AnsweredHopView>

/** A delegation chain: the hops the caller took part in, linked by prev, oldest first. */
export const HopChainView = z.object({ hops: z.array(HopView) })
/** A chain view. */
export type HopChainView = z.infer<typeof HopChainView>

/** One entry of a hop inbox. */
export const HopDeliveryView = z.object({
  sequence: z.number(),
  kind: z.enum(['offer', 'status', 'equivocation', 'upstream-canceled', 'budget-crossing']),
  offer: z.string().describe('The handoff digest of the hop it concerns'),
  element: z
    .string()
    .describe(
      "The signed offer or status, verbatim; for a budget crossing, the crossing's canonical JSON, which the receipt's elementDigest covers",
    ),
  chain: z.array(z.string()).optional(),
  receipt: z.string(),
  createdAt: z.string(),
  ...handedTrace('the request that caused the delivery'),
})
/** One hop inbox entry. */
export type HopDeliveryView = z.infer<typeof HopDeliveryView>

/** A page of the hop inbox. */
export const HopInboxView = z.object({
  deliveries: z.array(HopDeliveryView),
  nextAfter: z.number(),
})
/** A hop inbox page. */
export type HopInboxView = z.infer<typeof HopInboxView>
