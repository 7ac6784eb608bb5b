import type { Clock } from '../clock.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import type { WriteBatcher } from '../store/transaction.js'
import * as store from './store.js'

/** The bus topic of dashboard sign-outs, which every instance hears. */
export const SIGNOUT_TOPIC = 'dashboard:signouts'

/** A signed-out operator session, refused until it would have expired anyway. */
export interface Signout {
  sessionId: string
  expiresAt: number
}

/**
 * The operator's dashboard sessions that were signed out: kept in the database so the sign-out
 * holds on every instance and across restarts, and announced on the bus once it commits.
 */
export class SessionService {
  constructor(
    private readonly deps: {
      database: Database
      batcher: WriteBatcher
      bus: EventBus
      clock: Clock
    },
  ) {}

  /** Records a sign-out durably, forgets those that expired anyway, then announces it. */
  async signOut(signout: Signout): Promise<void> {
    const now = this.deps.clock.now()
    await this.deps.batcher.run(async (tx) => {
      await store.insertSignout(tx.db, {
        session_id: signout.sessionId,
        expires_at: signout.expiresAt,
      })
      await store.pruneSignouts(tx.db, now)
      tx.afterCommit(() =>
        this.deps.bus.publish({
          topic: SIGNOUT_TOPIC,
          type: 'dashboard.signout',
          at: now,
          data: { sessionId: signout.sessionId, expiresAt: signout.expiresAt },
        }),
      )
    })
  }

  /** The sign-outs of sessions that have not expired yet. */
  async live(): Promise<Signout[]> {
    const rows = await store.liveSignouts(this.deps.database.db, this.deps.clock.now())
    return rows.map((r) => ({ sessionId: r.session_id, expiresAt: r.expires_at }))
  }
}
