/** The error every SDK call throws for a hub's error answer: branch on its stable `code`. */
/** Every operation's contract, for `call`: `client.call(contracts.createResource, { body })`. */
export {
  BatonError,
  CONTRACTS,
  type Contract,
  type ContractInput,
  type ContractOutput,
  contracts,
  type ErrorBody,
  type ErrorCode,
} from '@baton/protocol'
export {
  A2A_CURRENT_GENERATION_HEADER,
  A2A_GENERATION_MISMATCH,
  A2A_RELAY_EXTENSION_URI,
  type A2aCallOptions,
  type AddressableCard,
  a2aFetch,
  addressTo,
  type RelayMetadata,
  type RelayUpdate,
  readGenerationMismatch,
  readRelay,
  relayUpdate,
  waitPastGeneration,
} from './a2a.js'
export { BatonClient, type BatonClientOptions } from './baton-client.js'
export { Budget, BudgetClient, type BudgetRunOptions, type Settle } from './budgets.js'
export {
  type CallArgs,
  type ContractCallOptions,
  callContract,
  requestContract,
  type SendRequest,
} from './call.js'
export { ComputeClient, type ComputeWaitOptions } from './compute.js'
export { contentDigest, matchContentDigest, parseContentDigest } from './content-digest.js'
export {
  type CachedDiscovery,
  type DiscoveryCache,
  type DiscoveryOptions,
  fetchDiscovery,
  resolveApiUrl,
} from './discovery.js'
export { HandoffClient } from './handoffs.js'
export { HomeClient, type HomeListQuery } from './home.js'
export { HopClient, hopSigner, type OfferOptions } from './hops.js'
export { type CallOptions, callJson, type RawAnswer, requestJson } from './http.js'
export {
  base58btcDecode,
  base58btcEncode,
  createIdentity,
  fromIdentityFile,
  type Identity,
  loadIdentity,
  principalOf,
  publicKeyFromRaw,
  publicKeyOfPrincipal,
  saveIdentity,
  toIdentityFile,
} from './identity.js'
export {
  canonicalJson,
  type InboxQuery,
  MessagesClient,
  messageBodyDigest,
  type ReceiptCheck,
  type ReceiptExpectations,
  signMessageReceipt,
  verifyMessageReceipt,
} from './messages.js'
export { GrantClient, ResourceClient } from './resources.js'
export { SignedClient } from './signed-client.js'
export { type FetchLike, type SignedFetchOptions, signedFetch } from './signed-fetch.js'
export {
  type RequestOptions,
  type SignedBody,
  type SignedClientOptions,
  type Signer,
  sendSigned,
} from './signed-request.js'
export {
  componentValue,
  defaultComponents,
  type HttpMessage,
  jwkThumbprint,
  newNonce,
  parseDictionary,
  type SfBareItem,
  type SfDictionary,
  type SfInnerList,
  type SfItem,
  type SfParams,
  type SfToken,
  type SignedFields,
  type SignedRequest,
  type SignOptions,
  StructuredFieldError,
  serializeInnerList,
  signatureBase,
  signMessage,
  signRequest,
  WEB_BOT_AUTH_LIFETIME_S,
} from './signing.js'
export { snapshotChecksum, TransferAdminClient, TransferClient } from './transfers.js'
export {
  exchange,
  type OutgoingRequest,
  sendRequest,
  type TextAnswer,
} from './transport.js'
export { type RequestVerifyOptions, type VerifiedRequest, verifySignedRequest } from './verify.js'
