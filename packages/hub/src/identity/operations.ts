import {
  AdmissionDecision,
  BatonError,
  DISCOVERY_PATH,
  DiscoveryDocument,
  MeView,
  PrincipalPageView,
  PrincipalView,
} from '@baton/protocol'
import { z } from 'zod'
import { defineOperation } from '../ops/operation.js'

const adminTags = ['admin']
const principalParam = z.string().max(512).describe('The principal, a did:key')

/** seed 000: the hub describes itself, its signature scheme and its key. */
export const discovery = defineOperation({
  name: 'discovery',
  summary: 'Describe the hub: API base, signature scheme, admission, limits, quotas and its key',
  tags: ['identity'],
  method: 'GET',
  path: DISCOVERY_PATH,
  auth: 'none',
  output: DiscoveryDocument,
  errors: [],
  // A client reads discovery before it can sign; an MCP session already knows its hub.
  tool: false,
  cli: ['hub', 'discovery'],
  run: async (ctx, caller) =>
    ctx.identity.discovery(
      caller.origin ?? ctx.config.identity.publicUrl ?? '',
      await ctx.compute.availability(),
    ),
})

/** The signing principal; answers in every admission state so a pending key can see it waits. */
export const me = defineOperation({
  name: 'me',
  summary: 'The signing principal, its admission state, quotas and usage (answers in every state)',
  tags: ['identity'],
  method: 'GET',
  path: '/v1/me',
  auth: 'signature',
  admissionExempt: true,
  output: MeView,
  errors: [],
  tool: {
    name: 'whoami',
    title: 'Who am I on this hub',
    description:
      'Your principal (a did:key), its admission state (pending until an operator approves it), and your quotas with what you used of them today.',
    annotations: { readOnlyHint: true },
  },
  cli: ['me', 'show'],
  run: (ctx, caller) => {
    if (!caller.principal) throw new BatonError('signature_missing', 'The request is not signed')
    return ctx.identity.me(caller.principal)
  },
})

/** One page of enrolled principals (operator only). */
export const listPrincipals = defineOperation({
  name: 'listPrincipals',
  summary:
    'One page of enrolled principals, oldest enrolment first, optionally in one admission state (operator only)',
  tags: adminTags,
  method: 'GET',
  path: '/admin/v1/principals',
  auth: 'operator',
  query: z.object({
    state: z.string().max(32).optional().describe('pending, approved, rejected or suspended'),
    limit: z.string().max(16).optional().describe('Principals per page, 1 to 500 (default 100)'),
    cursor: z
      .string()
      .max(1024)
      .optional()
      .describe('The next_cursor of the page before; absent for the first page'),
  }),
  output: PrincipalPageView,
  errors: [],
  tool: false,
  run: (ctx, _caller, { query }) => ctx.identity.list(query),
})

/** One principal (operator only). */
export const readPrincipal = defineOperation({
  name: 'readPrincipal',
  summary: 'Read one principal (operator only)',
  tags: adminTags,
  method: 'GET',
  path: '/admin/v1/principals/:principal',
  auth: 'operator',
  params: z.strictObject({ principal: principalParam }),
  output: PrincipalView,
  errors: ['principal_not_found'],
  tool: false,
  run: (ctx, _caller, { params }) => ctx.identity.get(params.principal),
})

/** An operator's admission decision; never an MCP tool. */
export const decidePrincipal = defineOperation({
  name: 'decidePrincipal',
  summary: `Approve, reject or suspend a principal (operator only): ${AdmissionDecision.options.join(', ')}`,
  tags: adminTags,
  method: 'POST',
  path: '/admin/v1/principals/:principal/:decision',
  auth: 'operator',
  params: z.strictObject({
    principal: principalParam,
    decision: z.string().max(16).describe('approve, reject or suspend'),
  }),
  output: PrincipalView,
  errors: ['principal_not_found'],
  tool: false,
  cli: ['principals', 'decide'],
  run: (ctx, _caller, { params }) => ctx.identity.decide(params.principal, params.decision),
})

/** Every identity operation, in the order they are documented. */
export const identityOperations = [discovery, me, listPrincipals, readPrincipal, decidePrincipal]
