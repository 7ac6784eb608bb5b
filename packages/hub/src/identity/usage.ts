import type { Kysely } from 'kysely'
import { MESSAGE_QUOTA_SCOPE } from '../messages/service.js'
import { storedBytes } from '../store/quota.js'
import type { Schema } from '../store/schema.js'
import { readQuotaCount } from './store.js'

/** What a principal used of the quotas other features count, for `GET /v1/me`. */
export interface PrincipalUsage {
  storedBytes: number
  messagesToday: number
}

/**
 * Reads a principal's usage: the stored-bytes counter over its resources and home files (one
 * quota covers both), and messages sent in the UTC day starting at `dayStart`.
 */
export async function principalUsage(
  db: Kysely<Schema>,
  principal: string,
  dayStart: number,
): Promise<PrincipalUsage> {
  const [stored, messages] = await Promise.all([
    storedBytes(db, principal),
    readQuotaCount(db, { scope: MESSAGE_QUOTA_SCOPE, subject: principal, windowStart: dayStart }),
  ])
  return { storedBytes: stored, messagesToday: messages }
}
