import {
  type BatonError,
  type ERRORS,
  type ErrorCode,
  type SfItem,
  serializeDictionary,
} from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import { SESSION_COOKIE } from '../web/session.js'

/** Every code the registry answers with 401 Unauthorized. */
export type UnauthorizedCode = {
  [K in ErrorCode]: (typeof ERRORS)[K]['status'] extends 401 ? K : never
}[ErrorCode]

/** The ways a caller proves who it is, each with its own challenge. */
type Scheme = 'signature' | 'bearer' | 'transfer-token' | 'session'

/**
 * The credential each 401 refuses, so its answer names how to authenticate. Exhaustive over the
 * registry: a new 401 code fails to compile until it has a challenge.
 */
const SCHEMES: Record<UnauthorizedCode, Scheme> = {
  // RFC 9421 HTTP Message Signatures on every /v1 request.
  signature_missing: 'signature',
  signature_malformed: 'signature',
  unknown_key: 'signature',
  signature_invalid: 'signature',
  digest_mismatch: 'signature',
  signature_stale: 'signature',
  signature_replayed: 'signature',
  key_not_enrolled: 'signature',
  // RFC 6750 bearer tokens in Authorization: the token handoffs' and the operator's.
  token_missing: 'bearer',
  admin_token_invalid: 'bearer',
  // seed 004: the orchestrator's single-use transfer-authorization token, sent in the body.
  transfer_token_malformed: 'transfer-token',
  transfer_token_unknown_key: 'transfer-token',
  transfer_token_bad_signature: 'transfer-token',
  transfer_token_expired: 'transfer-token',
  // The dashboard's session cookie, set by its sign-in form.
  dashboard_signin_required: 'session',
}

const REALM = 'baton'

/** Where the dashboard's sign-in form posts the operator token for a session cookie. */
const SIGNIN_FORM = '/dashboard/session'

const component = (name: string): SfItem => ({ value: name, params: [] })

/**
 * RFC 9421 §5.1: the signature the hub asks for, as the signing rules of `/v1` require it —
 * over `@method` and `@target-uri`, and `content-digest` and `content-type` when a body is sent,
 * with a creation time, Ed25519. The nonce and keyid are the signer's own, so they are not asked
 * for by value (§5.1 would have the signer copy them).
 */
function acceptSignature(req: FastifyRequest): string {
  const withBody =
    Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined
  const items = ['@method', '@target-uri', ...(withBody ? ['content-digest', 'content-type'] : [])]
  return serializeDictionary([
    [
      'sig1',
      {
        items: items.map(component),
        params: [
          ['created', true],
          ['alg', 'ed25519'],
        ],
      },
    ],
  ])
}

/**
 * The challenge of a 401 (RFC 9110 §11.6.1: a 401 carries at least one `WWW-Authenticate`), so
 * a generic client learns how to authenticate: `Signature` with `Accept-Signature` (RFC 9421 §5)
 * for a refused signature, `Bearer` (RFC 6750 §3) for a refused bearer token, `TransferToken` for
 * a refused transfer token (a body field of a signed request, minted by the orchestrator), and
 * `Cookie` with the sign-in form and the cookie's name (the scheme of the cookie-auth draft,
 * draft-broyer-http-cookie-auth) for the dashboard. Like RFC 6750, a request that sent no
 * credentials gets no `error` parameter. Other answers get no headers.
 */
export function challengeHeaders(e: BatonError, req: FastifyRequest): Record<string, string> {
  if (e.status !== 401) return {}
  const error =
    e.code === 'signature_missing' || e.code === 'token_missing' ? '' : `, error="${e.code}"`
  switch (SCHEMES[e.code as UnauthorizedCode]) {
    case 'signature':
      return {
        'www-authenticate': `Signature realm="${REALM}"${error}`,
        'accept-signature': acceptSignature(req),
      }
    case 'bearer':
      return { 'www-authenticate': `Bearer realm="${REALM}"${error}` }
    case 'transfer-token':
      return { 'www-authenticate': `TransferToken realm="${REALM}"${error}` }
    case 'session':
      return {
        'www-authenticate': `Cookie realm="${REALM}-dashboard", form-action="${SIGNIN_FORM}", cookie-name="${SESSION_COOKIE}"`,
      }
    default:
      return {}
  }
}

/** The headers of an error answer: the error's own (Retry-After) and, on a 401, its challenge. */
export function errorHeaders(e: BatonError, req: FastifyRequest): Record<string, string> {
  return { ...e.headers, ...challengeHeaders(e, req) }
}
