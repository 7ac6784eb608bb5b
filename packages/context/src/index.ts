export { fromB64u, toB64u } from './b64.js'
export {
  fromHandoffJson,
  fromStatusJson,
  type HandoffJson,
  type StatusJson,
  toHandoffJson,
  toStatusJson,
} from './carry.js'
export {
  type A2AMessageCarrier,
  type A2AMetadataCarrier,
  type A2ATaskCarrier,
  type A2ATaskStateName,
  fromA2ATaskState,
  readA2AHandoff,
  readA2AStatus,
  readA2ATaskStatus,
  toA2ATaskState,
  withA2AHandoff,
  withA2AStatus,
} from './carry-a2a.js'
export {
  type McpMetaCarrier,
  readMcpHandoff,
  readMcpStatus,
  withMcpHandoff,
  withMcpStatus,
} from './carry-mcp.js'
export { decodeCbor, encodeCbor } from './cbor.js'
export * as constants from './constants.js'
export {
  A2A_EXTENSION_URI,
  A2A_TASK_STATE,
  CHECK_REASONS,
  DEFAULT_MAX_CHAIN_LENGTH,
  DEFAULT_MAX_LIFETIME_MS,
  DEFAULT_SKEW_MS,
  MCP_META_KEY,
  REASONS,
} from './constants.js'
export { parseCoseElement, signCose } from './cose.js'
export {
  grantDigest,
  handoffDigest,
  type SignedElement,
  saltedDigest,
  sha256B64u,
} from './digest.js'
export type { ParsedElement } from './element.js'
export {
  ContextError,
  type ContextErrorCode,
  isContextError,
  type ReasonCode,
  type SeedReason,
} from './errors.js'
export {
  applyStatus,
  type DelegateHop,
  type DelegateHopState,
  type DelegatorHop,
  type DelegatorHopState,
  HandoffAgent,
  type HandoffAgentOptions,
  type HopKey,
  type HopMove,
  type HopStanding,
  nextHopState,
  type ReceiveOutcome,
  retransmitDelayMs,
  type StatusOutcome,
} from './hop-state.js'
export {
  type JwsHeader,
  type ParsedJws,
  parseJws,
  parseJwsElement,
  signJws,
  verifyJws,
  verifyJwsAsync,
} from './jws.js'
export {
  type Algorithm,
  createSigner,
  generateKeyPair,
  type KeyInput,
  type Signer,
  type TrustConfig,
  type TrustedKey,
  TrustStore,
  thumbprint,
  thumbprintSync,
  toPrivateKey,
  toPublicKey,
  verifyBytes,
  verifyBytesAsync,
} from './keys.js'
export {
  createHop,
  type Handoff,
  isOfferClaims,
  type OfferClaims,
  type SignedOffer,
  type SignOfferInput,
  signOffer,
  toHandoff,
} from './offer.js'
export { parseElement, type ReadElement, readElement } from './open.js'
export {
  checkRefs,
  createDigestRef,
  createSaltedRef,
  isRefKind,
  type Ref,
  type RefMaterial,
  type RefOutcome,
  type RefPolicy,
  type RefResult,
} from './refs.js'
export {
  FileReplayStore,
  type HopRecord,
  MemoryReplayStore,
  type ReplayStore,
} from './replay-store.js'
export {
  isNonterminalRejection,
  isStatusClaims,
  type OfferRef,
  type RejectedStatus,
  readOffer,
  type SignedStatus,
  type SignStatusInput,
  type StatusClaims,
  type StatusObject,
  type StatusReason,
  type StatusState,
  signStatus,
  type VerifiedStatus,
  type VerifyStatusOptions,
  verifyStatus,
} from './status.js'
export {
  assertHandoff,
  type ChainLink,
  type CheckName,
  createTrustStore,
  type HandoffVerification,
  parseHandoff,
  type RejectedHandoff,
  type TrustResolver,
  type VerifiedHandoff,
  type VerifyOptions,
  verifyHandoff,
} from './verify.js'
