// Message receipts (seed 000): a compact JWS (RFC 7515) signed with Ed25519 (`alg: EdDSA`,
// RFC 8037) over a payload that names the body by the digest of its RFC 8785 canonical JSON.
import { toBase64url } from './base64.js'
import { canonicalJson } from './canonical-json.js'
import { type MessageReceiptPayload, RECEIPT_TYPE } from './messages.js'
import type { DigestBytes, SignBytes } from './platform.js'

const utf8 = (text: string) => new TextEncoder().encode(text)

/**
 * The digest a receipt carries for a message body: `sha-256:` and the base64url SHA-256 of the
 * body's RFC 8785 canonical JSON, so any JSON serialization of the same body gives the same digest.
 */
export function createMessageBodyDigest(body: unknown, digest: DigestBytes): string {
  return `sha-256:${toBase64url(digest('sha-256', utf8(canonicalJson(body))))}`
}

/**
 * Signs a message receipt as a compact JWS with the hub's key; the protected header is
 * `{ alg, kid, typ }` in that order.
 *
 * @example createMessageReceipt(payload, { kid: hubKey.kid, sign: (b) => sign(null, b, key) })
 */
export function createMessageReceipt(
  payload: MessageReceiptPayload,
  signer: { kid: string; sign: SignBytes },
): string {
  const header = toBase64url(
    utf8(JSON.stringify({ alg: 'EdDSA', kid: signer.kid, typ: RECEIPT_TYPE })),
  )
  const body = toBase64url(utf8(JSON.stringify(payload)))
  const signingInput = `${header}.${body}`
  return `${signingInput}.${toBase64url(signer.sign(utf8(signingInput)))}`
}
