import { z } from 'zod'
import { defineContract } from '../contract.js'
import {
  CreateResourceInput,
  listResourcesQuery,
  ResourceHistoryView,
  ResourceListView,
  ResourceView,
  UpdatedResourceView,
  UpdateResourceInput,
} from '../resources.js'
import { OperatorGrantView } from './grants.js'

const tags = ['resources']
// The service decides what a well-formed id is and answers any other like an invisible one.
const ResourceId = z.strictObject({ id: z.string().max(256).describe('The resource id') })
const tooLarge = ['resource_too_large', 'storage_quota_exceeded'] as const
/** seed 000: a resource owned by the caller, at version 1. */
export const createResource = defineContract({
  name: 'createResource',
  summary: 'Create a versioned resource owned by the caller (version 1)',
  tags,
  method: 'POST',
  path: '/v1/resources',
  auth: 'signature',
  body: CreateResourceInput,
  output: ResourceView,
  status: 201,
  idempotencyKey: true,
  errors: [...tooLarge],
  tool: {
    name: 'create_resource',
    title: 'Create a shared resource',
    description: (config) =>
      `Create a versioned resource you own (version 1) in a namespace, with a kind and JSON data (at most ${config.resources.maxBytes} bytes as JSON).`,
  },
})

/** seed 000: a listing is a read, so it shows what the caller may read. */
export const listResources = defineContract({
  name: 'listResources',
  summary: 'Resources the caller owns or holds a live read grant for',
  tags,
  method: 'GET',
  path: '/v1/resources',
  auth: 'signature',
  query: (config) => listResourcesQuery(config.resources),
  output: ResourceListView,
  errors: [],
  tool: {
    name: 'list_resources',
    title: 'List shared resources',
    description: 'Resources you own or hold a live grant for, optionally by namespace and kind.',
    annotations: { readOnlyHint: true },
  },
})

/** seed 000: read by the owner or a holder of a live `resource:read` grant. */
export const readResource = defineContract({
  name: 'readResource',
  summary: 'Read a resource (owner or resource:read grant)',
  tags,
  method: 'GET',
  path: '/v1/resources/:id',
  auth: 'signature',
  params: ResourceId,
  output: ResourceView,
  errors: ['resource_forbidden'],
  tool: {
    name: 'read_resource',
    title: 'Read a shared resource',
    description: 'Read a resource you own or hold a live grant for.',
    annotations: { readOnlyHint: true },
  },
})

/** seed 000: PATCH replaces the whole data, only at `expectedVersion`. */
export const updateResource = defineContract({
  name: 'updateResource',
  summary: 'Replace the data, only at expectedVersion (owner or resource:update grant)',
  tags,
  method: 'PATCH',
  path: '/v1/resources/:id',
  auth: 'signature',
  params: ResourceId,
  body: UpdateResourceInput,
  output: UpdatedResourceView,
  errors: ['resource_forbidden', 'version_conflict', ...tooLarge],
  tool: {
    name: 'update_resource',
    title: 'Update a shared resource',
    description: (config) =>
      `Replace the whole data of a resource (at most ${config.resources.maxBytes} bytes as JSON), only if it is still at expectedVersion. A conflict answers the current version; never increment blindly.`,
  },
})

/** seed 000: every version with its data, actor and time. */
export const resourceHistory = defineContract({
  name: 'resourceHistory',
  summary: 'Every version with its data, actor and time (owner or resource:read grant)',
  tags,
  method: 'GET',
  path: '/v1/resources/:id/history',
  auth: 'signature',
  params: ResourceId,
  output: ResourceHistoryView,
  errors: ['resource_forbidden'],
  tool: {
    name: 'resource_history',
    title: 'Read a resource history',
    description: 'Every version of a resource with its data, actor and time.',
    annotations: { readOnlyHint: true },
  },
})

/** Every resource operation, in the order they are documented. */
export const resourceContracts = [
  createResource,
  listResources,
  readResource,
  updateResource,
  resourceHistory,
]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

export const operatorListResources = defineContract({
  name: 'operatorListResources',
  summary: 'Resources by namespace and owner, with every namespace and its size (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/resources',
  auth: 'operator',
  query: z.object({
    namespace: z.string().max(500).optional().describe('One namespace'),
    owner: z.string().max(500).optional().describe('The did:key of the owner'),
  }),
  output: z.object({
    namespaces: z.array(z.object({ namespace: z.string(), resources: z.number() })),
    resources: z.array(
      z.looseObject({
        id: z.string(),
        owner: z.string(),
        namespace: z.string(),
        version: z.number(),
      }),
    ),
  }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'resources'],
})

export const operatorReadResource = defineContract({
  name: 'operatorReadResource',
  summary:
    'One resource with every version, the changes between them, and its grants (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/resources/:id',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: z.looseObject({
    id: z.string(),
    owner: z.string(),
    version: z.number(),
    versions: z.array(
      z.looseObject({ version: z.number(), data: z.unknown(), changes: z.unknown() }),
    ),
    grants: z.array(OperatorGrantView),
  }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'resource'],
})

/** The operator's resource reads. */
export const resourceDashboardContracts = [operatorListResources, operatorReadResource]
