import { z } from 'zod'

/** The actions a grant can give on a resource (seed 000); read includes the history. */
export const RESOURCE_ACTIONS = ['resource:read', 'resource:update'] as const
/** One grantable action. */
export type ResourceAction = (typeof RESOURCE_ACTIONS)[number]

/** A principal named in a grant: a did:key, never a wildcard. */
export const PrincipalId = z
  .string()
  .max(256)
  .regex(/^did:key:z[1-9A-HJ-NP-Za-km-z]+$/, 'a did:key principal (no wildcards)')

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
  data: z.json(),
})
/** A parsed create-resource request. */
export type CreateResourceInput = z.infer<typeof CreateResourceInput>

/** The body of `PATCH /v1/resources/{id}`: replaces `data` only at `expectedVersion`. */
export const UpdateResourceInput = z.strictObject({
  expectedVersion: z.number().int().min(1),
  data: z.json(),
})
/** A parsed update-resource request. */
export type UpdateResourceInput = z.infer<typeof UpdateResourceInput>

/** The body of `POST /v1/capabilities`. */
export const CreateGrantInput = z.strictObject({
  resourceId: z.string().min(1).max(64),
  subject: PrincipalId,
  actions: z.array(z.enum(RESOURCE_ACTIONS)).min(1).max(RESOURCE_ACTIONS.length),
  delegable: z.boolean().default(false),
  expiresAt: z.iso.datetime({ offset: true }),
})
/** A parsed grant request. */
export type CreateGrantInput = z.infer<typeof CreateGrantInput>

/** A versioned shared resource as answered on the wire. */
export interface ResourceView {
  id: string
  owner: string
  namespace: string
  kind: string
  data: unknown
  version: number
  createdAt: string
  updatedAt: string
  updatedBy: string
}

/** One version in a resource's history. */
export interface ResourceVersionView {
  version: number
  data: unknown
  actor: string
  at: string
}

/** A grant (capability) as answered on the wire. */
export interface GrantView {
  id: string
  resourceId: string
  issuer: string
  subject: string
  actions: ResourceAction[]
  delegable: boolean
  expiresAt: string
  revokedAt: string | null
  parentId: string | null
  createdAt: string
  status: 'active' | 'expired' | 'revoked'
}
