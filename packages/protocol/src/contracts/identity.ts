import { z } from 'zod'
import { wholeNumber } from '../codecs.js'
import { defineContract } from '../contract.js'
import {
  AdmissionDecision,
  AdmissionState,
  DISCOVERY_PATH,
  DiscoveryDocument,
  LabelsView,
  MeView,
  PRINCIPAL_PAGE,
  PrincipalCursor,
  PrincipalList,
  PrincipalPageView,
  PrincipalView,
  SetLabelInput,
} from '../identity.js'

const adminTags = ['admin']
const principalParam = z.string().max(512).describe('The principal, a did:key')

/** seed 000: the hub describes itself, its signature scheme and its key. */
export const discovery = defineContract({
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
  // Read before every first signed request of a process (each `baton` command): a client keeps
  // it a few seconds, then revalidates. runtimeAvailability is live, so never for longer; a
  // client that acts on it reads it afresh (`SignedClient.refreshDiscovery`).
  cache: { maxAgeSeconds: 5 },
})

/** The signing principal; answers in every admission state so a pending key can see it waits. */
export const me = defineContract({
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
})

/** The signing agent names itself for people; a label is never used for authorization. */
export const setMyLabel = defineContract({
  name: 'setMyLabel',
  summary:
    'Give yourself a display label (1 to 64 printable characters) shown beside your did:key, replacing any before it; allowed while pending',
  tags: ['identity'],
  method: 'PUT',
  path: '/v1/me/label',
  auth: 'signature',
  // A pending key may name itself, so the operator sees the name when deciding.
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
})

/** The labels of some principals, to show beside their did:keys; never used for authorization. */
export const readLabels = defineContract({
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
})

/** One page of enrolled principals (operator only). */
export const listPrincipals = defineContract({
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
  cli: {
    name: ['principal', 'list'],
    pages: { cursor: 'cursor', next: 'next_cursor', items: 'principals' },
  },
})

/** One principal (operator only). */
export const readPrincipal = defineContract({
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
})

/** An operator's admission decision; never an MCP tool. */
export const decidePrincipal = defineContract({
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
})

/** An operator labels any principal, pending ones included (operator only). */
export const labelPrincipal = defineContract({
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
})

/** Every identity operation, in the order they are documented. */
export const identityContracts = [
  discovery,
  me,
  setMyLabel,
  listPrincipals,
  readPrincipal,
  decidePrincipal,
  labelPrincipal,
  readLabels,
]
