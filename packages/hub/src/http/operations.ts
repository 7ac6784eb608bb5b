import { BatonError } from '@baton/protocol'
import { z } from 'zod'
import { defineOperation } from '../ops/operation.js'
import { ping } from '../store/database.js'

const tags = ['operations']

/** Liveness: the process answers. */
export const health = defineOperation({
  name: 'health',
  summary: 'Liveness: the process answers',
  tags,
  method: 'GET',
  path: '/healthz',
  auth: 'none',
  output: z.object({ ok: z.literal(true) }),
  errors: [],
  tool: false,
  cli: ['hub', 'health'],
  run: async () => ({ ok: true as const }),
})

/** Readiness: a load balancer sends traffic only while the database answers. */
export const ready = defineOperation({
  name: 'ready',
  summary: 'Readiness: the database answers and the hub is not shutting down',
  tags,
  method: 'GET',
  path: '/readyz',
  auth: 'none',
  output: z.object({ ok: z.literal(true), store: z.string() }),
  errors: ['shutting_down', 'unavailable'],
  tool: false,
  cli: ['hub', 'ready'],
  run: async (ctx) => {
    if (ctx.isClosing()) throw new BatonError('shutting_down', 'The hub is shutting down')
    if (!(await ping(ctx.database))) {
      throw new BatonError('unavailable', 'The database does not answer')
    }
    return { ok: true as const, store: ctx.database.caps.name }
  },
})

/** The hub's own health operations. */
export const healthOperations = [health, ready]
