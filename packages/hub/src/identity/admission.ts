import { AdmissionState } from '@baton/protocol'
import type { Database } from '../store/database.js'
import { admissionError } from './service.js'
import { findPrincipal } from './store.js'

/** The event topic of a principal: admission decisions are published on it. */
export const principalTopic = (principal: string) => `principal:${principal}`

/**
 * Throws what a fresh signed request from `principal` would be refused with now (suspended,
 * rejected, pending), so a long poll started before a decision ends as a new request would.
 */
export async function assertAdmitted(db: Database['db'], principal: string): Promise<void> {
  const row = await findPrincipal(db, principal)
  const refusal = admissionError({
    principal,
    state: row ? AdmissionState.parse(row.state) : 'pending',
    enrolledAt: row?.enrolled_at ?? 0,
    decidedAt: row?.decided_at ?? null,
  })
  if (refusal) throw refusal
}
