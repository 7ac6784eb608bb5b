import { BatonError, contracts } from '@baton/protocol'
import { bind } from '../ops/operation.js'
import { ping } from '../store/database.js'

/** Liveness: the process answers. */
export const health = bind(contracts.health, async () => ({ ok: true as const }))

/** Readiness: a load balancer sends traffic only while the database answers. */
export const ready = bind(contracts.ready, async (ctx) => {
  if (ctx.isClosing()) throw new BatonError('shutting_down', 'The hub is shutting down')
  if (!(await ping(ctx.database))) {
    throw new BatonError('unavailable', 'The database does not answer')
  }
  return { ok: true as const, store: ctx.database.caps.name }
})

/** The hub's own health operations. */
export const healthOperations = [health, ready]
