import { DIGEST_PATTERN, HOP_PATTERN } from './constants.js'

/** Tells whether a value is a non-empty string. */
export function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0
}

/** Tells whether a value is a NumericDate this library accepts: a non-negative safe integer. */
export function isNumericDate(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** Tells whether a value is a handoff digest (43 base64url characters). */
export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && DIGEST_PATTERN.test(value)
}

/** Tells whether a value is a hop identifier (22 to 64 base64url characters). */
// seed 003: the hop matches 22 to 64 base64url characters
export function isHop(value: unknown): value is string {
  return typeof value === 'string' && HOP_PATTERN.test(value)
}

/** Tells whether an optional member is absent or satisfies a test. */
export function optional(value: unknown, test: (v: unknown) => boolean): boolean {
  return value === undefined || test(value)
}
