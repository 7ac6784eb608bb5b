import { type BatonError, type ErrorCode, type SfItem, serializeDictionary } from '@baton/protocol'
import type { FastifyRequest } from 'fastify'

/** The refusals of a request's HTTP Message Signature (RFC 9421), all 401. */
const SIGNATURE_CODES: ReadonlySet<ErrorCode> = new Set([
  'signature_missing',
  'signature_malformed',
  'unknown_key',
  'signature_invalid',
  'digest_mismatch',
  'signature_stale',
  'signature_replayed',
])

/** The refusals of a bearer token sent in `Authorization` (RFC 6750), all 401. */
const BEARER_CODES: ReadonlySet<ErrorCode> = new Set(['token_missing', 'admin_token_invalid'])

const REALM = 'baton'

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
 * for a refused signature, `Bearer` (RFC 6750 §3) for a refused bearer token. Like RFC 6750, a
 * request that sent no credentials gets no `error` parameter. Other answers get no headers.
 */
export function challengeHeaders(e: BatonError, req: FastifyRequest): Record<string, string> {
  if (e.status !== 401) return {}
  const error =
    e.code === 'signature_missing' || e.code === 'token_missing' ? '' : `, error="${e.code}"`
  if (SIGNATURE_CODES.has(e.code)) {
    return {
      'www-authenticate': `Signature realm="${REALM}"${error}`,
      'accept-signature': acceptSignature(req),
    }
  }
  if (BEARER_CODES.has(e.code)) return { 'www-authenticate': `Bearer realm="${REALM}"${error}` }
  return {}
}

/** The headers of an error answer: the error's own (Retry-After) and, on a 401, its challenge. */
export function errorHeaders(e: BatonError, req: FastifyRequest): Record<string, string> {
  return { ...e.headers, ...challengeHeaders(e, req) }
}
