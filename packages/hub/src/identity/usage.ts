import { type Kysely, sql } from 'kysely'
import { MESSAGE_QUOTA_SCOPE } from '../messages/service.js'
import type { Schema } from '../store/schema.js'
import { REQUEST_QUOTA_SCOPE } from './service.js'

/** What a principal used of its quotas, for `GET /v1/me`. */
export interface PrincipalUsage {
  requestsToday: number
  storedBytes: number
  messagesToday: number
}

/**
 * Reads a principal's usage in one query: signed requests and messages sent in the UTC day
 * starting at `dayStart`, and the stored-bytes counter over its resources and home files (one
 * quota covers both).
 */
export async function principalUsage(
  db: Kysely<Schema>,
  principal: string,
  dayStart: number,
): Promise<PrincipalUsage> {
  const { rows } = await sql<{
    requests: number | null
    messages: number | null
    stored: number | string | null
  }>`select
      (select count from quota_counters
        where scope = ${REQUEST_QUOTA_SCOPE} and subject = ${principal} and window_start = ${dayStart}) as requests,
      (select count from quota_counters
        where scope = ${MESSAGE_QUOTA_SCOPE} and subject = ${principal} and window_start = ${dayStart}) as messages,
      (select stored_bytes from usage_counters where principal = ${principal}) as stored`.execute(
    db,
  )
  const row = rows[0]!
  return {
    requestsToday: Number(row.requests ?? 0),
    storedBytes: Number(row.stored ?? 0),
    messagesToday: Number(row.messages ?? 0),
  }
}
