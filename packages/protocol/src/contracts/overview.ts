import { z } from 'zod'
import { defineContract } from '../contract.js'

const Counts = z.record(z.string(), z.number())
const Series = z.array(z.number())

/** The operator's overview: what the dashboard opens on. */
export const operatorOverview = defineContract({
  name: 'operatorOverview',
  summary:
    'Counts by state of handoffs, transfers, principals, A2A tasks, compute jobs and hops, and activity per minute over the last hour (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/overview',
  auth: 'operator',
  output: z.object({
    at: z.string().nullable(),
    handoffs: Counts,
    openHandoffs: Counts,
    transfers: Counts,
    principals: Counts,
    a2aTasks: Counts,
    computeJobs: Counts,
    hops: Counts,
    pendingAdmissions: z.number(),
    unackedMessages: z.number(),
    resources: z.number(),
    liveGrants: z.number(),
    activity: z.object({
      bucketMs: z.number(),
      start: z.string().nullable(),
      handoffMoves: Series,
      messages: Series,
      resourceVersions: Series,
      transferEvents: Series,
    }),
  }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'overview'],
})

/** Reads that gather every feature's part. */
export const overviewContracts = [operatorOverview]
