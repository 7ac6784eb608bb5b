/**
 * The SDK's requests without its typed calls: plain and signed requests over its keep-alive
 * transport, discovery (with a cache between processes) and identity files. It loads no schemas,
 * for a program that starts, sends a request or two and exits (the `baton` CLI); the package root
 * exports all of it too, with the typed calls.
 *
 * @example
 * import { fetchDiscovery, loadIdentity, sendSigned } from '@baton/client/requests'
 * const signer = { discovery: await fetchDiscovery(url), identity: await loadIdentity(file), options: {} }
 * const me = await sendSigned(signer, 'GET', '/v1/me')
 */
export {
  type CachedDiscovery,
  type DiscoveryCache,
  type DiscoveryOptions,
  fetchDiscovery,
  resolveApiUrl,
} from './discovery.js'
export { type CallOptions, callJson, requestJson } from './http.js'
export {
  fromIdentityFile,
  type Identity,
  loadIdentity,
  publicKeyFromRaw,
  saveIdentity,
  toIdentityFile,
} from './identity-file.js'
export {
  type RequestOptions,
  type SignedBody,
  type SignedClientOptions,
  type Signer,
  sendSigned,
} from './signed-request.js'
export { newNonce, type SignedRequest, type SignOptions, signRequest } from './signing.js'
export {
  exchange,
  type FetchLike,
  type OutgoingRequest,
  type RawAnswer,
  sendRequest,
  type TextAnswer,
} from './transport.js'
