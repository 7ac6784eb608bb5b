import type { AppContext } from '../app.js'
import { ACTIVITY, activityStart, iso } from '../store/operator-reads.js'

/**
 * What the operator's overview shows: counts that matter now, and activity per minute over the
 * last hour. It reads nothing itself; each feature's service answers for its own part.
 */
export async function overview(ctx: AppContext) {
  const now = ctx.clock.now()
  const [
    { handoffs, openHandoffs },
    transfers,
    principals,
    a2aTasks,
    computeJobs,
    hops,
    messages,
    resources,
    liveGrants,
    handoffMoves,
    transferEvents,
  ] = await Promise.all([
    ctx.handoffs.operatorCounts(),
    ctx.transfers.operatorCounts(),
    ctx.identity.operatorCounts(),
    ctx.a2a.operatorCounts(),
    ctx.compute.operatorCounts(),
    ctx.hops.operatorCounts(),
    ctx.messages.operatorCounts(),
    ctx.resources.operatorCounts(),
    ctx.grants.operatorLiveCount(),
    ctx.handoffs.operatorActivity(),
    ctx.transfers.operatorActivity(),
  ])
  return {
    at: iso(now),
    handoffs,
    openHandoffs,
    transfers,
    principals,
    a2aTasks,
    computeJobs,
    hops,
    pendingAdmissions: principals.pending ?? 0,
    unackedMessages: messages.unacked,
    resources: resources.resources,
    liveGrants,
    activity: {
      bucketMs: ACTIVITY.bucketMs,
      start: iso(activityStart(now)),
      handoffMoves,
      messages: messages.sent,
      resourceVersions: resources.versions,
      transferEvents,
    },
  }
}
