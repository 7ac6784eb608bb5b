import { type Kysely, sql } from 'kysely'
import { MESSAGE_QUOTA_SCOPE } from '../messages/service.js'
import type { Schema } from '../store/schema.js'
import { REQUEST_QUOTA_SCOPE } from './service.js'
import {
  type AdmissionColumns,
  type AdmissionRead,
  admissionColumns,
  identityShapes,
  toAdmissionRead,
} from './store.js'

/** What a principal used of its quotas, for `GET /v1/me`. */
export interface PrincipalUsage {
  requestsToday: number
  storedBytes: number
  messagesToday: number
}

/**
 * Reads a principal's usage in one query: signed requests and messages sent in the UTC day
 * starting at `dayStart`, and the stored-bytes counter over its resources and home files (one
 * quota covers both). Given a signature's `nonce`, the same query also answers the admission of
 * the request it signs (as `readAdmission` does), so `GET /v1/me` is judged and answered by one.
 */
export async function principalUsage(
  db: Kysely<Schema>,
  principal: string,
  dayStart: number,
  signed?: { nonce: string },
): Promise<PrincipalUsage & { admission?: AdmissionRead }> {
  const messages = () => sql`(select count from quota_counters
        where scope = ${MESSAGE_QUOTA_SCOPE} and subject = ${principal} and window_start = ${dayStart}) as messages,
      (select stored_bytes from usage_counters where principal = ${principal}) as stored`
  // Both shapes run on every `GET /v1/me`: compiled once (`identityShapes`), in interpolation order.
  if (signed) {
    const { rows } = await identityShapes.run<
      AdmissionColumns & { messages: number | null; stored: number | string | null }
    >(
      db,
      'usage_signed',
      [
        MESSAGE_QUOTA_SCOPE,
        principal,
        dayStart,
        principal,
        principal,
        signed.nonce,
        REQUEST_QUOTA_SCOPE,
        principal,
        dayStart,
        principal,
      ],
      () =>
        sql<
          AdmissionColumns & { messages: number | null; stored: number | string | null }
        >`select ${messages()}, ${admissionColumns({
          keyid: principal,
          nonce: signed.nonce,
          scope: REQUEST_QUOTA_SCOPE,
          windowStart: dayStart,
        })}
    from (select 1 as one) as o left join principals as p on p.principal = ${principal}`.compile(
          db,
        ),
    )
    const row = rows[0]!
    const admission = toAdmissionRead(row)
    return {
      requestsToday: admission.requests,
      storedBytes: Number(row.stored ?? 0),
      messagesToday: Number(row.messages ?? 0),
      admission,
    }
  }
  type Row = { requests: number | null; messages: number | null; stored: number | string | null }
  const { rows } = await identityShapes.run<Row>(
    db,
    'usage',
    [REQUEST_QUOTA_SCOPE, principal, dayStart, MESSAGE_QUOTA_SCOPE, principal, dayStart, principal],
    () =>
      sql<Row>`select
      (select count from quota_counters
        where scope = ${REQUEST_QUOTA_SCOPE} and subject = ${principal} and window_start = ${dayStart}) as requests,
      ${messages()}`.compile(db),
  )
  const row = rows[0]!
  return {
    requestsToday: Number(row.requests ?? 0),
    storedBytes: Number(row.stored ?? 0),
    messagesToday: Number(row.messages ?? 0),
  }
}
