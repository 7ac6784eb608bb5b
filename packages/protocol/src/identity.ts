import { z } from 'zod'
import { fromBase64url, toBase64url } from './base64.js'
import { withCode } from './codecs.js'
import { RuntimeAvailability } from './compute.js'
import { ContractLimits } from './contract.js'
import { handedTrace } from './trace.js'

/** The protocol version a hub announces in discovery and a client expects. */
export const PROTOCOL_VERSION = 'baton/1'

/** Seed 000's discovery path: where a hub describes itself. */
export const DISCOVERY_PATH = '/.well-known/agent-net'

/** The label of Baton's request signature in Signature-Input and Signature (RFC 9421 §4). */
export const SIGNATURE_LABEL = 'sig1'

/** The one signature algorithm Baton accepts (RFC 9421 §3.3.6). */
export const SIGNATURE_ALGORITHM = 'ed25519'

/** Default seconds a signature's `created` may be away from the hub's clock, either way. */
export const DEFAULT_SKEW_SECONDS = 60

/** Components every signed request covers (RFC 9421 §2.2); a request with a body adds DIGEST_COMPONENTS. */
export const REQUIRED_COMPONENTS = ['@method', '@target-uri'] as const

/** Components a signed request with a body covers too (RFC 9530 §2, RFC 9421 §2.1). */
export const BODY_COMPONENTS = ['content-digest', 'content-type'] as const

/** Fields a signed request covers whenever it carries them, so none can be added after signing. */
export const PRESENT_COMPONENTS = ['idempotency-key'] as const

/**
 * The `tag` of a signature under the Web Bot Auth profile (draft-ietf-webbotauth-httpsig-protocol):
 * its keyid is the JWK thumbprint (RFC 7638) of an enrolled key, and it carries `expires`.
 */
export const WEB_BOT_AUTH_TAG = 'web-bot-auth'

/** Components a Web Bot Auth signature covers besides Baton's own. */
export const WEB_BOT_AUTH_COMPONENTS = ['@authority'] as const

/** The field where a Web Bot Auth agent names its key directory; covered whenever it is sent. */
export const SIGNATURE_AGENT_FIELD = 'signature-agent'

/** Where a hub serves its own keys as an HTTP Message Signatures directory (a JWKS). */
export const SIGNATURE_DIRECTORY_PATH = '/.well-known/http-message-signatures-directory'

/** The media type of that directory. */
export const SIGNATURE_DIRECTORY_MEDIA_TYPE = 'application/http-message-signatures-directory+json'

/** The `tag` of the signature over a directory response. */
export const SIGNATURE_DIRECTORY_TAG = 'http-message-signatures-directory'

/**
 * The text whose SHA-256 is the RFC 7638 thumbprint of an Ed25519 public key (RFC 8037 §A.3):
 * the required members in lexicographic order, no white space.
 *
 * @example thumbprintInput(jwk.x) // '{"crv":"Ed25519","kty":"OKP","x":"…"}'
 */
export function thumbprintInput(x: string): string {
  return `{"crv":"Ed25519","kty":"OKP","x":"${x}"}`
}

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
  .max(64)
  .regex(/^[^\p{C}\p{Z}](?:[^\p{C}\p{Zl}\p{Zp}]*[^\p{C}\p{Z}])?$/u, {
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
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  kid: z.string().optional(),
  alg: z.string().optional(),
  use: z.string().optional(),
})

/** An Ed25519 public key as a JWK. */
export type PublicJwk = z.infer<typeof PublicJwk>

/** An Ed25519 private key as a JWK (RFC 8037): the public `x` and the secret `d`. */
export const PrivateJwk = PublicJwk.extend({ d: z.string().regex(/^[A-Za-z0-9_-]{43}$/) })

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
