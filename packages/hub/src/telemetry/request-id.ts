import { randomUUID } from 'node:crypto'

/** The header a request id is read from and echoed in. */
export const REQUEST_ID_HEADER = 'x-request-id'

// Bounded and inert in a log line or a header: no spaces, quotes, control characters or `%`.
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The request id of a request: the caller's `X-Request-Id` when it is a safe token of at most
 * 128 characters of `[A-Za-z0-9._:-]`, else a fresh UUID, so a caller cannot put arbitrary text
 * into the hub's logs or answers.
 */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && SAFE_REQUEST_ID.test(header) ? header : randomUUID()
}
