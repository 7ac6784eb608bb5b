import { z } from 'zod'

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
})

/** The identity file an agent keeps. */
export type IdentityFile = z.infer<typeof IdentityFile>

/** One quota with its limit and what the principal used of it. */
export interface QuotaUsage {
  limit: number
  used: number
}

/** The answer of `GET /v1/me`. */
export interface MeView {
  principal: string
  state: AdmissionState
  enrolledAt: string
  decidedAt: string | null
  quotas: {
    requestsPerDay: QuotaUsage & { resetsAt: string }
    storedBytes: QuotaUsage
    messagesPerDay: QuotaUsage & { resetsAt: string }
  }
}

/** A principal as the admin API shows it. */
export interface PrincipalView {
  principal: string
  state: AdmissionState
  enrolledAt: string
  decidedAt: string | null
}

/** The discovery document a hub serves at `/.well-known/agent-net`. */
export interface DiscoveryDocument {
  name: string
  protocolVersion: string
  hubVersion: string
  /** The origin that request paths such as `/v1/me` are appended to. */
  apiBase: string
  openapi: string
  signatures: {
    scheme: 'rfc9421'
    algorithm: 'ed25519'
    label: string
    keyid: 'did:key'
    components: readonly string[]
    bodyComponents: readonly string[]
    /** Fields covered whenever the request carries them (absent from older hubs). */
    presentComponents?: readonly string[]
    parameters: readonly string[]
    contentDigest: 'sha-256'
    skewSeconds: number
  }
  admission: { mode: AdmissionMode }
  limits: { bodyLimitBytes: number }
  quotas: { requestsPerDay: number; storedBytes: number; messagesPerDay: number }
  hubKey: PublicJwk & { kid: string }
}
