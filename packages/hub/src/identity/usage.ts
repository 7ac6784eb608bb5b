import type { Kysely } from 'kysely'
import { homeBytes } from '../home/store.js'
import { MESSAGE_QUOTA_SCOPE } from '../messages/service.js'
import { ownedBytes } from '../resources/store.js'
import type { Schema } from '../store/schema.js'
import { readQuotaCount } from './store.js'

/** What a principal used of the quotas other features count, for `GET /v1/me`. */
export interface PrincipalUsage {
  storedBytes: number
  messagesToday: number
}

/**
 * Reads a principal's usage where each feature keeps it: stored bytes of its resources and home
 * files (one quota covers both), and messages sent in the UTC day starting at `dayStart`.
 */
export async function principalUsage(
  db: Kysely<Schema>,
  principal: string,
  dayStart: number,
): Promise<PrincipalUsage> {
  const [home, resources, messages] = await Promise.all([
    homeBytes(db, principal),
    ownedBytes(db, principal),
    readQuotaCount(db, { scope: MESSAGE_QUOTA_SCOPE, subject: principal, windowStart: dayStart }),
  ])
  return { storedBytes: home + resources, messagesToday: messages }
}
