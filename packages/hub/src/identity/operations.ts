import {
  AdmissionDecision,
  AdmissionState,
  BatonError,
  DISCOVERY_PATH,
  DiscoveryDocument,
  LabelsView,
  MeView,
  PrincipalList,
  PrincipalPageView,
  PrincipalView,
  SetLabelInput,
  wholeNumber,
} from '@baton/protocol'
import { z } from 'zod'
import { defineOperation } from '../ops/operation.js'
import { PRINCIPAL_PAGE, PrincipalCursor } from './service.js'

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

/**
 * The signing agent names itself for people; a label is never used for authorization. A pending
 * key may, so the operator deciding on it sees its name.
 */
export const setMyLabel = defineOperation({
  name: 'setMyLabel',
  summary:
    'Give yourself a display label (1 to 64 printable characters) shown beside your did:key, replacing any before it; allowed while pending',
  tags: ['identity'],
  method: 'PUT',
  path: '/v1/me/label',
  auth: 'signature',
  admissionExempt: true,
  body: SetLabelInput,
  output: PrincipalView,
  errors: ['admission_rejected', 'principal_suspended'],
  tool: {
    name: 'set_my_label',
    title: 'Set my display label',
    description:
      'Give yourself a display label such as "planner" or "reviewer", shown beside your did:key in the dashboard, listings and chains so people can tell agents apart. It names you; it grants nothing.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  cli: ['me', 'label'],
  run: (ctx, caller, { body }) => {
    if (!caller.principal) throw new BatonError('signature_missing', 'The request is not signed')
    return ctx.identity.setLabel(caller.principal.principal, body.label, caller)
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
  query: z.strictObject({
    state: AdmissionState.optional().describe('Only principals in this admission state'),
    limit: wholeNumber({ min: 1, max: PRINCIPAL_PAGE.maxLimit })
      .optional()
      .describe(
        `Principals per page, 1 to ${PRINCIPAL_PAGE.maxLimit} (default ${PRINCIPAL_PAGE.defaultLimit})`,
      ),
    cursor: PrincipalCursor.optional().describe(
      'The next_cursor of the page before; absent for the first page',
    ),
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
    decision: AdmissionDecision.describe('approve, reject or suspend'),
  }),
  output: PrincipalView,
  errors: ['principal_not_found'],
  tool: false,
  cli: ['principal', 'decide'],
  run: (ctx, caller, { params }) => ctx.identity.decide(params.principal, params.decision, caller),
})

/** An operator labels any principal, pending ones included (operator only). */
export const labelPrincipal = defineOperation({
  name: 'labelPrincipal',
  summary: 'Set the display label of a principal, in any admission state (operator only)',
  tags: adminTags,
  method: 'PUT',
  path: '/admin/v1/principals/:principal/label',
  auth: 'operator',
  params: z.strictObject({ principal: principalParam }),
  body: SetLabelInput,
  output: PrincipalView,
  errors: ['principal_not_found'],
  tool: false,
  cli: ['principal', 'label'],
  run: (ctx, _caller, { params, body }) =>
    ctx.identity.setOperatorLabel(params.principal, body.label),
})

/** The labels of principals an agent sees (in its messages, grants, hops): names, never rights. */
export const readLabels = defineOperation({
  name: 'readLabels',
  summary:
    'The display labels of up to 100 principals (those that have one), to show beside their did:keys',
  tags: ['identity'],
  method: 'GET',
  path: '/v1/labels',
  auth: 'signature',
  query: z.strictObject({
    principals: PrincipalList.describe('The did:keys, comma-separated, at most 100'),
  }),
  output: LabelsView,
  errors: [],
  tool: {
    name: 'read_agent_labels',
    title: 'Read agent labels',
    description:
      'The display labels of up to 100 agents by did:key, to tell planner, coder and reviewer apart. A label names an agent; it grants nothing, and two agents may share one.',
    annotations: { readOnlyHint: true },
  },
  cli: ['principal', 'labels'],
  run: (ctx, _caller, { query }) => ctx.identity.readLabels(query.principals.split(',')),
})

/** Every identity operation, in the order they are documented. */
export const identityOperations = [
  discovery,
  me,
  setMyLabel,
  listPrincipals,
  readPrincipal,
  decidePrincipal,
  labelPrincipal,
  readLabels,
]
