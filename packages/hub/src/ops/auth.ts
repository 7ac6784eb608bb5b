import type { ErrorCode } from '@baton/protocol'
import type { Auth, Operation } from './operation.js'

/** What any operation may answer, whatever it does: bad input, limits, load and outages. */
export const COMMON_ERRORS: ErrorCode[] = [
  'rate_limited',
  'unavailable',
  'shutting_down',
  'internal',
]

/** What declared input adds: a parameter or body that does not match its schema. */
export const INPUT_ERRORS: ErrorCode[] = ['invalid_request', 'unknown_field']

/**
 * What a request body adds: it may not parse, be too large or be of another type. Every method
 * but GET may carry one, and the HTTP face parses what it is sent before the operation runs,
 * whether or not the operation reads a body.
 */
export const BODY_ERRORS: ErrorCode[] = ['invalid_json', 'body_too_large', 'unsupported_media_type']

/** What each kind of auth adds to an operation's answers. */
export const AUTH_ERRORS: Record<Auth, ErrorCode[]> = {
  none: [],
  'handoff-token': ['token_missing'],
  signature: [
    'signature_missing',
    'signature_malformed',
    'unknown_key',
    'signature_invalid',
    'digest_mismatch',
    'signature_stale',
    'signature_replayed',
    'admission_pending',
    'admission_rejected',
    'principal_suspended',
  ],
  operator: ['admin_token_invalid', 'admin_disabled'],
}

/** Every code an operation can answer: its own, its auth's, its body's and the common ones. */
export function operationErrors(op: Operation): ErrorCode[] {
  const all = new Set<ErrorCode>([
    ...op.errors,
    ...AUTH_ERRORS[op.auth],
    ...(op.params || op.query || op.body ? INPUT_ERRORS : []),
    ...(op.body || op.method !== 'GET' ? BODY_ERRORS : []),
    ...(op.idempotencyKey ? (['idempotency_conflict'] as ErrorCode[]) : []),
    ...COMMON_ERRORS,
  ])
  return [...all]
}
