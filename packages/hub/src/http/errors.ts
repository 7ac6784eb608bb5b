import { BatonError, type ErrorCode } from '@baton/protocol'

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_BAD_URL: 'invalid_request',
  FST_ERR_ASYNC_CONSTRAINT: 'invalid_request',
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
}

// The database went away (restart, failover, network): the request may be retried, so answer
// 503 `unavailable` rather than 500. PostgreSQL classes 08 (connection) and 57P (shutdown).
const UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01',
  '57P02',
  '57P03',
])

function isDatabaseUnavailable(e: { code?: unknown; message?: unknown }): boolean {
  const code = typeof e?.code === 'string' ? e.code : ''
  if (UNAVAILABLE.has(code) || code.startsWith('08')) return true
  const message = typeof e?.message === 'string' ? e.message : ''
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    message,
  )
}

/**
 * The one normalizer at the HTTP boundary: a BatonError passes through, a framework error for a
 * bad request becomes its stable code, and anything else is `internal` with no detail leaked.
 */
export function toBatonError(error: unknown): BatonError {
  if (error instanceof BatonError) return error
  const e = error as { code?: string; statusCode?: number; message?: string }
  const mapped = e?.code ? FASTIFY_CODES[e.code] : undefined
  if (mapped) {
    return new BatonError(mapped, e.message ?? mapped)
  }
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    if (e.statusCode === 414) return new BatonError('uri_too_long', 'The path is too long')
    if (e.statusCode === 413)
      return new BatonError('body_too_large', 'The request body is too large')
    if (e.statusCode === 415) {
      return new BatonError('unsupported_media_type', 'Unsupported Content-Type')
    }
    return new BatonError('invalid_request', e.message ?? 'Bad request')
  }
  if (isDatabaseUnavailable(e)) {
    return new BatonError(
      'unavailable',
      'The database is not reachable right now',
      {},
      {
        'retry-after': '1',
      },
    )
  }
  return new BatonError('internal', 'Internal error')
}
