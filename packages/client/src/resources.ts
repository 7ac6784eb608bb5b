import type {
  CreateGrantRequest,
  CreateResourceInput,
  GrantView,
  ResourceVersionView,
  ResourceView,
  UpdateResourceInput,
} from '@baton/protocol'
import type { SignedClient } from './signed-client.js'

const enc = encodeURIComponent

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
    return this.client.call('POST', '/v1/resources', input)
  }

  /** Reads a resource you own or hold a grant for. */
  get(id: string): Promise<ResourceView> {
    return this.client.call('GET', `/v1/resources/${enc(id)}`)
  }

  /** Replaces the data only at `expectedVersion`. */
  update(id: string, input: UpdateResourceInput): Promise<ResourceView & { repeated?: boolean }> {
    return this.client.call('PATCH', `/v1/resources/${enc(id)}`, input)
  }

  /** Every version with its data, actor and time. */
  history(id: string): Promise<{ resourceId: string; versions: ResourceVersionView[] }> {
    return this.client.call('GET', `/v1/resources/${enc(id)}/history`)
  }

  /** Resources you own or hold a live grant for. */
  list(
    query: { namespace?: string; kind?: string; after?: string; limit?: number } = {},
  ): Promise<{ resources: ResourceView[]; next: string | null }> {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v))
    const qs = q.toString()
    return this.client.call('GET', `/v1/resources${qs ? `?${qs}` : ''}`)
  }
}

/** Grants (capabilities) on resources through a signed client. */
export class GrantClient {
  constructor(readonly client: SignedClient) {}

  /** Grants a principal actions on one resource until `expiresAt`. */
  create(input: CreateGrantRequest): Promise<GrantView> {
    return this.client.call('POST', '/v1/capabilities', input)
  }

  /** Grants you issued or hold. */
  list(): Promise<{ capabilities: GrantView[] }> {
    return this.client.call('GET', '/v1/capabilities')
  }

  /** Revokes a grant and what was passed on from it; safe to repeat. */
  revoke(id: string): Promise<GrantView> {
    return this.client.call('DELETE', `/v1/capabilities/${enc(id)}`)
  }
}
