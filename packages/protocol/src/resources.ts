import { z } from 'zod'
import { isoInstant, wholeNumber } from './codecs.js'
import { DID_KEY_PATTERN } from './did-key.js'
import { jsonValue } from './json.js'
import { handedTrace } from './trace.js'

/** The resource and grant limits a hub uses by default; its operator may change each. */
export const RESOURCE_LIMITS = {
  /** Largest resource data, as JSON, in bytes. */
  maxBytes: 256 * 1024,
  /** Longest grant, from now to its expiresAt. */
  grantMaxTtlMs: 30 * 24 * 3600 * 1000,
  /** Most resources one listing page answers; a larger `limit` answers this many. */
  maxPageSize: 100,
} as const

/** The actions a grant can give on a resource (seed 000); read includes the history. */
export const RESOURCE_ACTIONS = ['resource:read', 'resource:update'] as const
/** One grantable action. */
export type ResourceAction = (typeof RESOURCE_ACTIONS)[number]

/** A principal named in a grant: a did:key, never a wildcard. */
export const PrincipalId = z
  .string()
  .max(256)
  .regex(DID_KEY_PATTERN, 'a did:key principal (no wildcards)')

/** A namespace or kind: a short printable name. */
const Label = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')

/** The body of `POST /v1/resources`. */
export const CreateResourceInput = z.strictObject({
  namespace: Label,
  kind: Label,
  data: jsonValue(),
})
/** A parsed create-resource request. */
export type CreateResourceInput = z.infer<typeof CreateResourceInput>

/** The body of `PATCH /v1/resources/{id}`: replaces `data` only at `expectedVersion`. */
export const UpdateResourceInput = z.strictObject({
  expectedVersion: z.number().int().min(1),
  data: jsonValue(),
})
/** A parsed update-resource request. */
export type UpdateResourceInput = z.infer<typeof UpdateResourceInput>

/** Grantable actions, each at most once (published as `uniqueItems`). */
const GrantActions = z
  .array(z.enum(RESOURCE_ACTIONS))
  .min(1)
  .max(RESOURCE_ACTIONS.length)
  .refine((a) => new Set(a).size === a.length, 'each action at most once')
  .meta({ uniqueItems: true })

/**
 * The body of `POST /v1/capabilities`. That `expiresAt` lies in the future and within the hub's
 * longest grant is the hub's rule, against its clock.
 */
export const CreateGrantInput = z.strictObject({
  resourceId: z.string().min(1).max(64),
  subject: PrincipalId,
  actions: GrantActions,
  delegable: z.boolean().default(false),
  expiresAt: isoInstant().describe('When the grant ends: an RFC 3339 time with its offset'),
})
/** A parsed grant request. */
export type CreateGrantInput = z.output<typeof CreateGrantInput>
/** A grant request as a client sends it. */
export type CreateGrantRequest = z.input<typeof CreateGrantInput>

/** A versioned shared resource as answered on the wire. */
export const ResourceView = z.object({
  id: z.string(),
  owner: z.string(),
  namespace: z.string(),
  kind: z.string(),
  data: z.unknown(),
  version: z.number().int(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  updatedBy: z.string(),
  ...handedTrace('the request that wrote this version'),
})
/** A resource as answered. */
export type ResourceView = z.infer<typeof ResourceView>

/** The answer of an update: the resource, with `repeated: true` for a repeat of a committed one. */
export const UpdatedResourceView = ResourceView.extend({ repeated: z.boolean().optional() })
/** An update's answer. */
export type UpdatedResourceView = z.infer<typeof UpdatedResourceView>

/** One version in a resource's history. */
export const ResourceVersionView = z.object({
  version: z.number().int(),
  data: z.unknown(),
  actor: z.string(),
  at: z.iso.datetime(),
  ...handedTrace('the request that wrote this version'),
})
/** A version of a resource. */
export type ResourceVersionView = z.infer<typeof ResourceVersionView>

/** The answer of `GET /v1/resources/{id}/history`: every version, oldest first. */
export const ResourceHistoryView = z.object({
  resourceId: z.string(),
  versions: z.array(ResourceVersionView),
})
/** A resource's history. */
export type ResourceHistoryView = z.infer<typeof ResourceHistoryView>

/** The answer of `GET /v1/resources`; `next` is the cursor of the next page, null on the last. */
export const ResourceListView = z.object({
  resources: z.array(ResourceView),
  next: z.string().nullable(),
})
/** A page of resources. */
export type ResourceListView = z.infer<typeof ResourceListView>

/** A grant (capability) as answered on the wire. */
export const GrantView = z.object({
  id: z.string(),
  resourceId: z.string(),
  issuer: z.string(),
  subject: z.string(),
  actions: z.array(z.enum(RESOURCE_ACTIONS)),
  delegable: z.boolean(),
  expiresAt: z.iso.datetime(),
  revokedAt: z.iso.datetime().nullable(),
  parentId: z.string().nullable(),
  createdAt: z.iso.datetime(),
  status: z.enum(['active', 'expired', 'revoked']),
  ...handedTrace('the request that issued the grant or, once revoked, revoked it'),
})
/** A grant as answered. */
export type GrantView = z.infer<typeof GrantView>

/** The answer of `GET /v1/capabilities`. */
export const GrantListView = z.object({ capabilities: z.array(GrantView) })
/** The grants a principal issued or holds. */
export type GrantListView = z.infer<typeof GrantListView>

const ListFilter = z.string().min(1).max(200)

// The most a listing's limit may say (three digits, as it always took); more than the page size
// answers a page.
const LIMIT_MAX = 999

/** The query of a resource listing under the hub's page size: the whole rule of its shape. */
export function listResourcesQuery(config: { maxPageSize: number }) {
  const most = config.maxPageSize
  return z.strictObject({
    namespace: ListFilter.optional().describe('Only this namespace'),
    kind: ListFilter.optional().describe('Only this kind'),
    after: ListFilter.optional().describe('Continue after this resource id (from `next`)'),
    limit: wholeNumber({ min: 1, max: LIMIT_MAX })
      .optional()
      .describe(`At most this many (default ${most}; above ${most} answers ${most})`),
  })
}
/** A parsed resource listing query. */
export type ListResourcesQuery = z.output<ReturnType<typeof listResourcesQuery>>
