// The protocol's fixed names and values: the discovery path and the signature profile's label,
// algorithm and components. Free of schemas, so signing code loads no zod.

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
