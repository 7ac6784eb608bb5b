import { z } from 'zod'
import { defineContract } from '../contract.js'

const tags = ['operations']

/** Liveness: the process answers. */
export const health = defineContract({
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
})

/** Readiness: a load balancer sends traffic only while the database answers. */
export const ready = defineContract({
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
})

/** The hub's own health contracts. */
export const healthContracts = [health, ready]
