import type { Ref, RefMaterial, RefPolicy } from '@baton/context'
import { canonicalJson, hubGrantOctets } from '@baton/protocol'
import type { GrantService } from '../grants/service.js'
import type { ResourceService } from '../resources/service.js'
import type { TransferService } from '../transfers/service.js'

/** The services whose stored octets an offer's `digest` refs may name. */
export interface RefSources {
  resources: Pick<ResourceService, 'history'>
  transfers: Pick<TransferService, 'snapshot'>
  grants: Pick<GrantService, 'list'>
}

/** What a `digest` ref names in this hub, from its members; undefined for anything else. */
export type HubRef =
  | { type: 'resource'; id: string; version: number }
  | { type: 'transfer'; id: string }
  | { type: 'handoff'; id: string }
  | { type: 'grant'; id: string }

/**
 * Reads the hub object a ref names: `{ kind: 'digest', resource, version }` a resource version,
 * `{ kind: 'digest', transfer }` a transfer's snapshot, `{ kind: 'digest', handoff }` a token
 * handoff's payload, `{ kind: 'digest', grant }` a grant's terms (`hubGrantOctets`).
 */
export function hubRef(ref: Ref): HubRef | undefined {
  if (ref.kind !== 'digest') return undefined
  if (typeof ref.resource === 'string') {
    return Number.isSafeInteger(ref.version) && (ref.version as number) >= 1
      ? { type: 'resource', id: ref.resource, version: ref.version as number }
      : undefined
  }
  if (typeof ref.transfer === 'string') return { type: 'transfer', id: ref.transfer }
  if (typeof ref.handoff === 'string') return { type: 'handoff', id: ref.handoff }
  if (typeof ref.grant === 'string') return { type: 'grant', id: ref.grant }
  return undefined
}

/**
 * The hub's reference policy for an offer from `sender`: a ref naming a resource version, a
 * transfer or a grant (one the sender issued or holds) must verify over the exact stored octets, read as the sender may read them; one the
 * sender may not read is unverifiable, like one that does not exist. A token handoff is read only
 * with its bearer token, which no offer may carry, so its refs are reported unverifiable and do
 * not refuse the offer, nor do `digest` refs naming nothing in the hub (the hub holds no octets
 * to check them against). Refs of other kinds are not checked.
 */
// seed 003: a receiver must not report a reference as verified unless it performed the check
export function hubRefPolicy(sources: RefSources, sender: string): RefPolicy {
  return {
    require: (ref) => {
      const named = hubRef(ref)
      return named !== undefined && named.type !== 'handoff'
    },
    load: async (ref): Promise<RefMaterial | undefined> => {
      const named = hubRef(ref)
      if (named === undefined) return undefined
      try {
        if (named.type === 'resource') {
          const { versions } = await sources.resources.history(sender, named.id)
          const version = versions.find((v) => v.version === named.version)
          // Resource data is stored as the JSON.stringify text of its value, which this repeats.
          return version && { content: JSON.stringify(version.data) }
        }
        if (named.type === 'transfer') {
          // A snapshot is stored as its RFC 8785 canonical JSON, the octets its checksum covers.
          const { snapshot } = await sources.transfers.snapshot(sender, named.id)
          return { content: canonicalJson(snapshot) }
        }
        if (named.type === 'grant') {
          const { capabilities } = await sources.grants.list(sender)
          const grant = capabilities.find((g) => g.id === named.id)
          return grant && { content: hubGrantOctets(grant) }
        }
      } catch {
        // Not found and not readable by the sender answer alike: nothing to check against.
        return undefined
      }
      return undefined
    },
  }
}
