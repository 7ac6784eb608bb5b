import {
  type CreateGrantRequest,
  type CreateResourceInput,
  contracts,
  type GrantListView,
  type GrantView,
  type ListResourcesQuery,
  type ResourceHistoryView,
  type ResourceListView,
  type ResourceView,
  type UpdatedResourceView,
  type UpdateResourceInput,
} from '@baton/protocol'
import type { SignedClient } from './signed-client.js'

/**
 * Versioned shared resources (seed 000) through a signed client. Each method throws a
 * BatonError with the hub's code; a version conflict carries `currentVersion`.
 *
 * @example
 * const resources = new ResourceClient(await SignedClient.fromFile(discoveryUrl, 'agent.identity.json'))
 * const task = await resources.create({ namespace: 'ns', kind: 'task/v1', data: { status: 'open' } })
 */
export class ResourceClient {
  constructor(readonly client: SignedClient) {}

  /** Creates a resource at version 1. */
  create(input: CreateResourceInput): Promise<ResourceView> {
    return this.client.call(contracts.createResource, { body: input })
  }

  /** Reads a resource you own or hold a grant for. */
  get(id: string): Promise<ResourceView> {
    return this.client.call(contracts.readResource, { params: { id } })
  }

  /** Replaces the data only at `expectedVersion`. */
  update(id: string, input: UpdateResourceInput): Promise<UpdatedResourceView> {
    return this.client.call(contracts.updateResource, { params: { id }, body: input })
  }

  /** Every version with its data, actor and time. */
  history(id: string): Promise<ResourceHistoryView> {
    return this.client.call(contracts.resourceHistory, { params: { id } })
  }

  /** Resources you own or hold a live grant for. */
  list(query: Partial<ListResourcesQuery> = {}): Promise<ResourceListView> {
    return this.client.call(contracts.listResources, { query })
  }
}

/** Grants (capabilities) on resources through a signed client. */
export class GrantClient {
  constructor(readonly client: SignedClient) {}

  /** Grants a principal actions on one resource until `expiresAt`. */
  create(input: CreateGrantRequest): Promise<GrantView> {
    return this.client.call(contracts.createGrant, { body: input })
  }

  /** Grants you issued or hold. */
  list(): Promise<GrantListView> {
    return this.client.call(contracts.listGrants)
  }

  /** Revokes a grant and what was passed on from it; safe to repeat. */
  revoke(id: string): Promise<GrantView> {
    return this.client.call(contracts.revokeGrant, { params: { id } })
  }
}
