import { z } from 'zod'
import { defineContract } from '../contract.js'
import { CreateGrantInput, GrantListView, GrantView } from '../resources.js'

const tags = ['grants']

/** seed 000: a grant of actions on one resource to one principal, until `expiresAt`. */
export const createGrant = defineContract({
  name: 'createGrant',
  summary: 'Grant a principal actions on one resource until expiresAt',
  tags,
  method: 'POST',
  path: '/v1/capabilities',
  auth: 'signature',
  body: CreateGrantInput,
  output: GrantView,
  status: 201,
  idempotencyKey: true,
  errors: ['invalid_grant', 'resource_forbidden', 'grant_forbidden'],
  tool: {
    name: 'grant_access',
    title: 'Grant access to a resource',
    description: (config) =>
      `Give one principal (a did:key) read and/or update access to one resource you own, until expiresAt (RFC 3339, in the future, at most ${Math.floor(config.resources.grantMaxTtlMs / 1000)} seconds ahead). Not delegable unless you say so.`,
  },
})

/** seed 000: the grants the caller issued or holds. */
export const listGrants = defineContract({
  name: 'listGrants',
  summary: 'Grants the caller issued or holds, with their status',
  tags,
  method: 'GET',
  path: '/v1/capabilities',
  auth: 'signature',
  output: GrantListView,
  errors: [],
  tool: {
    name: 'list_grants',
    title: 'List grants',
    description: 'Grants you issued or hold, with their status (active, expired, revoked).',
    annotations: { readOnlyHint: true },
  },
})

/** seed 000: revoking a grant revokes everything passed on from it; a repeat answers the same. */
export const revokeGrant = defineContract({
  name: 'revokeGrant',
  summary: 'Revoke a grant and everything passed on from it (idempotent)',
  tags,
  method: 'DELETE',
  path: '/v1/capabilities/:id',
  auth: 'signature',
  params: z.strictObject({ id: z.string().max(256).describe('The grant id') }),
  output: GrantView,
  errors: ['grant_not_found', 'grant_forbidden'],
  tool: {
    name: 'revoke_grant',
    title: 'Revoke a grant',
    description: 'Revoke a grant you issued (and everything passed on from it). Safe to repeat.',
    annotations: { idempotentHint: true },
  },
})

/** Every grant operation, in the order they are documented. */
export const grantContracts = [createGrant, listGrants, revokeGrant]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

/** A grant as the operator lists it: `status` live, revoked or expired. */
export const OperatorGrantView = z.looseObject({
  id: z.string(),
  resourceId: z.string(),
  issuer: z.string(),
  subject: z.string(),
  actions: z.unknown(),
  delegable: z.boolean(),
  status: z.enum(['live', 'revoked', 'expired']),
  parentId: z.string().nullable(),
  createdAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
})

export const operatorListGrants = defineContract({
  name: 'operatorListGrants',
  summary: 'Grants, newest first, by status (live, revoked or expired) and subject (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/grants',
  auth: 'operator',
  query: z.object({
    status: z.string().max(500).optional().describe('live, revoked or expired'),
    subject: z.string().max(500).optional().describe('The did:key the grants are to'),
  }),
  output: z.object({ grants: z.array(OperatorGrantView) }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'grants'],
})

/** The operator's grant reads. */
export const grantDashboardContracts = [operatorListGrants]
