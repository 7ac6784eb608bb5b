import { z } from 'zod'
import { fromBase64url, toBase64url } from './base64.js'
import { withCode } from './codecs.js'
import { RuntimeAvailability } from './compute.js'
import { ContractLimits } from './contract.js'
import { AGENT_LABEL_MAX_CHARS, AGENT_LABEL_PATTERN, JWK_KEY_MEMBER } from './identity-file.js'
import { handedTrace } from './trace.js'

export {
  BODY_COMPONENTS,
  DEFAULT_SKEW_SECONDS,
  DISCOVERY_PATH,
  PRESENT_COMPONENTS,
  PROTOCOL_VERSION,
  REQUIRED_COMPONENTS,
  SIGNATURE_AGENT_FIELD,
  SIGNATURE_ALGORITHM,
  SIGNATURE_DIRECTORY_MEDIA_TYPE,
  SIGNATURE_DIRECTORY_PATH,
  SIGNATURE_DIRECTORY_TAG,
  SIGNATURE_LABEL,
  thumbprintInput,
  WEB_BOT_AUTH_COMPONENTS,
  WEB_BOT_AUTH_TAG,
} from './constants.js'

/** Admission states of a principal: enrolled as pending, then decided by an operator. */
export const AdmissionState = z.enum(['pending', 'approved', 'rejected', 'suspended'])

/** One admission state. */
export type AdmissionState = z.infer<typeof AdmissionState>

/** How a hub admits new keys: `approval` waits for an operator, `open` approves at once. */
export const AdmissionMode = z.enum(['approval', 'open'])

/** One admission mode. */
export type AdmissionMode = z.infer<typeof AdmissionMode>

/** An operator's decision on a principal. */
export const AdmissionDecision = z.enum(['approve', 'reject', 'suspend'])

/** One operator decision. */
export type AdmissionDecision = z.infer<typeof AdmissionDecision>

/**
 * An agent's display label: 1 to 64 characters, no control, format or line-separator characters,
 * and no space at either end. It names an agent for people; it is never used for authorization.
 *
 * @example AgentLabel.parse('planner')
 */
export const AgentLabel = z
  .string()
  .min(1)
  .max(AGENT_LABEL_MAX_CHARS)
  .regex(AGENT_LABEL_PATTERN, {
    message: 'a label is printable text without control characters or spaces at either end',
  })
  .describe('A display label, 1 to 64 printable characters; never used for authorization')

/** An agent's display label. */
export type AgentLabel = z.infer<typeof AgentLabel>

/** The labels of a principal: the one shown (the operator's when set), and each one's own. */
const labels = {
  label: z
    .string()
    .nullable()
    .describe("The display label shown: the operator's when one is set, else the agent's own"),
  agentLabel: z.string().nullable().describe('The label the agent gave itself; null when none'),
  operatorLabel: z.string().nullable().describe('The label an operator set; null when none'),
}

const DID_KEY = 'did:key:z[1-9A-HJ-NP-Za-km-z]{1,128}'

/**
 * Up to 100 principals (did:keys), comma-separated, as a query parameter (or a tool argument)
 * takes them. Answers the list.
 *
 * @example PrincipalList.parse('did:key:z6Mk…,did:key:z6Mk…') // ['did:key:z6Mk…', 'did:key:z6Mk…']
 */
export const PrincipalList = z
  .string()
  .regex(new RegExp(`^${DID_KEY}(?:,${DID_KEY}){0,99}$`), 'comma-separated did:keys, at most 100')
  .transform((text) => text.split(','))

/** The display labels of principals, by did:key: only those that have one. */
export const LabelsView = z.object({
  labels: z
    .record(z.string(), z.string())
    .describe("Each principal's label shown (the operator's when set, else its own), by did:key"),
})
/** Labels by did:key. */
export type LabelsView = z.infer<typeof LabelsView>

/** The body that sets a display label, replacing any before it. */
export const SetLabelInput = z.strictObject({ label: AgentLabel })

/** A parsed label write. */
export type SetLabelInput = z.infer<typeof SetLabelInput>

/** An Ed25519 public key as a JWK (RFC 8037). */
export const PublicJwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().regex(JWK_KEY_MEMBER),
  kid: z.string().optional(),
  alg: z.string().optional(),
  use: z.string().optional(),
})

/** An Ed25519 public key as a JWK. */
export type PublicJwk = z.infer<typeof PublicJwk>

/** An Ed25519 private key as a JWK (RFC 8037): the public `x` and the secret `d`. */
export const PrivateJwk = PublicJwk.extend({ d: z.string().regex(JWK_KEY_MEMBER) })

/** An Ed25519 private key as a JWK. */
export type PrivateJwk = z.infer<typeof PrivateJwk>

/** The identity file an agent keeps: its principal, its hub and its key pair. */
export const IdentityFile = z.object({
  principal: z.string().startsWith('did:key:z'),
  hub: z.string(),
  publicKeyJwk: PublicJwk,
  privateKeyJwk: PrivateJwk,
  createdAt: z.string(),
  /** The display label the agent means to give itself (absent when none was chosen). */
  name: AgentLabel.optional(),
})

/** The identity file an agent keeps. */
export type IdentityFile = z.infer<typeof IdentityFile>

/** One quota with its limit and what the principal used of it. */
export const QuotaUsage = z.object({ limit: z.number().int(), used: z.number().int() })
/** One quota's use. */
export type QuotaUsage = z.infer<typeof QuotaUsage>

/** The answer of `GET /v1/me`. */
export const MeView = z.object({
  principal: z.string(),
  ...labels,
  state: AdmissionState,
  enrolledAt: z.iso.datetime(),
  decidedAt: z.iso.datetime().nullable(),
  ...handedTrace('the request that decided the admission state (or enrolled the key)'),
  quotas: z.object({
    requestsPerDay: QuotaUsage.extend({ resetsAt: z.iso.datetime() }),
    storedBytes: QuotaUsage,
    messagesPerDay: QuotaUsage.extend({ resetsAt: z.iso.datetime() }),
  }),
})
/** The signing principal as `GET /v1/me` answers it. */
export type MeView = z.infer<typeof MeView>

/** A principal as the admin API shows it. */
export const PrincipalView = z.object({
  principal: z.string(),
  ...labels,
  state: AdmissionState,
  enrolledAt: z.iso.datetime(),
  decidedAt: z.iso.datetime().nullable(),
  ...handedTrace('the request that decided the admission state (or enrolled the key)'),
})
/** A principal as the admin API shows it. */
export type PrincipalView = z.infer<typeof PrincipalView>

/** One page of enrolled principals; `next_cursor` is null on the last page. */
export const PrincipalPageView = z.object({
  principals: z.array(PrincipalView),
  next_cursor: z.string().nullable(),
})
/** One page of principals. */
export type PrincipalPageView = z.infer<typeof PrincipalPageView>

/** The discovery document a hub serves at `/.well-known/agent-net`. */
export const DiscoveryDocument = z.object({
  name: z.string(),
  protocolVersion: z.string(),
  hubVersion: z.string(),
  /** The origin that request paths such as `/v1/me` are appended to. */
  apiBase: z.string(),
  openapi: z.string(),
  signatures: z.object({
    scheme: z.literal('rfc9421'),
    algorithm: z.literal('ed25519'),
    label: z.string(),
    keyid: z.literal('did:key'),
    components: z.array(z.string()).readonly(),
    bodyComponents: z.array(z.string()).readonly(),
    /** Fields covered whenever the request carries them (absent from older hubs). */
    presentComponents: z.array(z.string()).readonly().optional(),
    parameters: z.array(z.string()).readonly(),
    contentDigest: z.literal('sha-256'),
    skewSeconds: z.number(),
  }),
  admission: z.object({ mode: AdmissionMode }),
  limits: z.object({
    bodyLimitBytes: z.number().int(),
    /** The limits the hub's contracts hold, so a client publishes them (absent from older hubs). */
    contracts: ContractLimits.optional(),
  }),
  quotas: z.object({
    requestsPerDay: z.number().int(),
    storedBytes: z.number().int(),
    messagesPerDay: z.number().int(),
  }),
  hubKey: PublicJwk.extend({ kid: z.string() }),
  /** seed 000: live compute availability (absent from older hubs). */
  runtimeAvailability: RuntimeAvailability.optional(),
})
/** The discovery document. */
export type DiscoveryDocument = z.infer<typeof DiscoveryDocument>

/** The default and the largest page of the admin principal list. */
export const PRINCIPAL_PAGE = { defaultLimit: 100, maxLimit: 500 } as const

/** A position in the enrolled principals: after this enrolment time and principal. */
export interface PrincipalPosition {
  enrolledAt: number
  principal: string
}

const PositionJson = z.tuple([
  z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  z.string().max(200),
])

// A cursor is opaque to callers: `v1.` and the base64url JSON of [enrolled_at, principal].
/** The `next_cursor` that continues the principal list after `position`. */
export function toPrincipalCursor(position: PrincipalPosition): string {
  const json = JSON.stringify([position.enrolledAt, position.principal])
  return `v1.${toBase64url(new TextEncoder().encode(json))}`
}

/**
 * A page cursor as the list answered it (`v1.` and base64url text), answering the position it
 * names; a cursor of that form that names none is refused too (`cursor_invalid`), as no page
 * answered it.
 */
export const PrincipalCursor = withCode(
  z
    .string()
    .max(400)
    .regex(/^v1\.[A-Za-z0-9_-]+$/, 'a next_cursor this list answered')
    .transform((raw, ctx): PrincipalPosition => {
      let value: unknown
      try {
        const bytes = fromBase64url(raw.slice(3))
        value = bytes && JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
      } catch {
        value = undefined
      }
      const position = PositionJson.safeParse(value)
      if (!position.success) {
        ctx.issues.push({ code: 'custom', message: 'a next_cursor this list answered', input: raw })
        return z.NEVER
      }
      return { enrolledAt: position.data[0], principal: position.data[1] }
    }),
  'cursor_invalid',
)
