import {
  CreateResourceInput,
  ResourceHistoryView,
  ResourceListView,
  ResourceView,
  UpdatedResourceView,
  UpdateResourceInput,
  wholeNumber,
} from '@baton/protocol'
import { z } from 'zod'
import type { Config } from '../config.js'
import { OperatorGrantView } from '../grants/operations.js'
import { found } from '../ops/found.js'
import { defineOperation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

const tags = ['resources']
// The service decides what a well-formed id is and answers any other like an invisible one.
const ResourceId = z.strictObject({ id: z.string().max(256).describe('The resource id') })
const tooLarge = ['resource_too_large', 'storage_quota_exceeded'] as const
const Filter = z.string().min(1).max(200)

// The most a listing's limit may say (three digits, as it always took); more than the page size
// answers a page.
const LIMIT_MAX = 999

/** The query of a resource listing under the hub's page size: the whole rule of its shape. */
export function listResourcesQuery(config: Config['resources']) {
  const most = config.maxPageSize
  return z.strictObject({
    namespace: Filter.optional().describe('Only this namespace'),
    kind: Filter.optional().describe('Only this kind'),
    after: Filter.optional().describe('Continue after this resource id (from `next`)'),
    limit: wholeNumber({ min: 1, max: LIMIT_MAX })
      .optional()
      .describe(`At most this many (default ${most}; above ${most} answers ${most})`),
  })
}
/** A parsed resource listing query. */
export type ListResourcesQuery = z.output<ReturnType<typeof listResourcesQuery>>

/** seed 000: a resource owned by the caller, at version 1. */
export const createResource = defineOperation({
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
  run: (ctx, caller, { body }) =>
    ctx.resources.create(signer(caller), body, caller.idempotencyKey, caller),
})

/** seed 000: a listing is a read, so it shows what the caller may read. */
export const listResources = defineOperation({
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
  run: (ctx, caller, { query }) => ctx.resources.list(signer(caller), query),
})

/** seed 000: read by the owner or a holder of a live `resource:read` grant. */
export const readResource = defineOperation({
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
  run: (ctx, caller, { params }) => ctx.resources.get(signer(caller), params.id),
})

/** seed 000: PATCH replaces the whole data, only at `expectedVersion`. */
export const updateResource = defineOperation({
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
  run: (ctx, caller, { params, body }) =>
    ctx.resources.update(signer(caller), params.id, body, caller),
})

/** seed 000: every version with its data, actor and time. */
export const resourceHistory = defineOperation({
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
  run: (ctx, caller, { params }) => ctx.resources.history(signer(caller), params.id),
})

/** Every resource operation, in the order they are documented. */
export const resourceOperations = [
  createResource,
  listResources,
  readResource,
  updateResource,
  resourceHistory,
]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

export const operatorListResources = defineOperation({
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
  run: (ctx, _caller, { query }) => ctx.resources.operatorList(query),
})

export const operatorReadResource = defineOperation({
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
  run: async (ctx, _caller, { params }) =>
    found(await ctx.resources.operatorRead(params.id), 'resource'),
})

/** The operator's resource reads. */
export const resourceDashboardOperations = [operatorListResources, operatorReadResource]
