import type { ErrorCode } from '@baton/protocol'
import { AUTH_KINDS } from './auth-kinds.js'
import type { Operation } from './operation.js'

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

/** Every code an operation can answer: its own, its auth's, its body's and the common ones. */
export function operationErrors(op: Operation): ErrorCode[] {
  const all = new Set<ErrorCode>([
    ...op.errors,
    ...AUTH_KINDS[op.auth].errors,
    ...(op.params || op.query || op.body ? INPUT_ERRORS : []),
    ...(op.body || op.method !== 'GET' ? BODY_ERRORS : []),
    ...(op.idempotencyKey ? (['idempotency_conflict'] as ErrorCode[]) : []),
    ...COMMON_ERRORS,
  ])
  return [...all]
}
