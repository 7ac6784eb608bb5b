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
  return new BatonError('internal', 'Internal error')
}
