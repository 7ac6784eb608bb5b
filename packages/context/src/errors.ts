import type { CHECK_REASONS, REASONS } from './constants.js'

/** One of the seed's fixed reason codes, the only ones a status carries. */
export type SeedReason = (typeof REASONS)[number]

/** A reason a check answers: one of the seed's codes, or `malformed` (see CHECK_REASONS). */
export type ReasonCode = (typeof CHECK_REASONS)[number]

/** A reason code, or a code for misuse of the library: bad arguments or a forbidden lifecycle move. */
export type ContextErrorCode = ReasonCode | 'invalid-input' | 'lifecycle'

/** The one error type of @baton/context; callers branch on `reason`, never on the message. */
export class ContextError extends Error {
  /** The stable machine code. */
  readonly reason: ContextErrorCode
  /** Which element of a chain failed (0 = oldest), when the failure is in a chain element. */
  readonly index: number | undefined

  constructor(
    reason: ContextErrorCode,
    message: string,
    options?: { index?: number; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ContextError'
    this.reason = reason
    this.index = options?.index
  }
}

/** Tells whether a value is a ContextError. */
export function isContextError(value: unknown): value is ContextError {
  return value instanceof ContextError
}
