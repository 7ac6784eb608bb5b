import { randomBytes } from 'node:crypto'
import {
  BatonError,
  type CreateGrantInput,
  type GrantView,
  RESOURCE_ACTIONS,
  type ResourceAction,
} from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import { onceByKey } from '../store/idempotency.js'
import { iso as isoOrNull, parseStored } from '../store/operator-reads.js'
import type { GrantRow, ResourceRow, Schema } from '../store/schema.js'
import type { Carrying, WriteBatcher } from '../store/transaction.js'
import { traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'

/** What the grant service needs from the rest of the hub. */
export interface GrantDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  /** The longest a grant may live, in milliseconds. */
  maxTtlMs: number
  /** The resources grants are on (built after this service, which it is handed to). */
  resources: GrantedResources
}

// A delegation chain longer than this is refused; it also bounds the liveness walk.
const MAX_CHAIN = 16
const iso = (ms: number) => new Date(ms).toISOString()

/** The refusal for a resource the caller may not see; it never tells whether the id exists. */
export function resourceForbidden(id: string): BatonError {
  return new BatonError(
    'resource_forbidden',
    `No resource ${JSON.stringify(id)} is visible to this principal`,
    { resourceId: id },
  )
}

/** A grant's status at `now`: a revoked one stays revoked; an unrevoked one expires. */
export function statusAt(row: GrantRow, now: number): 'revoked' | 'expired' | 'active' {
  return row.revoked_at !== null ? 'revoked' : row.expires_at <= now ? 'expired' : 'active'
}

/** Turns a grant row into its wire view, with its status at `now`. */
export function toGrantView(row: GrantRow, now: number): GrantView {
  return {
    id: row.id,
    resourceId: row.resource_id,
    issuer: row.issuer,
    subject: row.subject,
    actions: JSON.parse(row.actions) as ResourceAction[],
    delegable: row.delegable === 1,
    expiresAt: iso(row.expires_at),
    revokedAt: row.revoked_at === null ? null : iso(row.revoked_at),
    parentId: row.parent_id,
    createdAt: iso(row.created_at),
    status: statusAt(row, now),
    ...traceFields(row),
  }
}

/**
 * What grants read of the resources feature: the resource a grant names, inside the grant's own
 * transaction (the resource service answers it; grants never read its store).
 */
export interface GrantedResources {
  findForGrant(db: Kysely<Schema>, id: string): Promise<ResourceRow | undefined>
}

/**
 * Grants (capabilities) on resources, seed 000: scoped to one resource and subject, expiring,
 * revocable at once on every instance (every check reads the database), non-delegable unless
 * the owner says so; a delegated grant is a subset of its parent and dies with it.
 */
export class GrantService {
  constructor(private readonly deps: GrantDeps) {}

  /**
   * Whether `principal` may perform `action` on `resource` now: the owner always may; anyone
   * else only through a live grant whose whole delegation chain is live.
   */
  async allows(
    db: Kysely<Schema>,
    principal: string,
    resource: ResourceRow,
    action: ResourceAction,
  ): Promise<boolean> {
    if (resource.owner === principal) return true
    return (await this.liveGrant(db, principal, resource, [action], 0)) !== undefined
  }

  /** Throws `resource_forbidden` unless `principal` may perform `action` on the resource. */
  async assertAllowed(
    db: Kysely<Schema>,
    principal: string,
    resourceId: string,
    action: ResourceAction,
  ): Promise<ResourceRow> {
    const resource = await this.deps.resources.findForGrant(db, resourceId)
    if (!resource || !(await this.allows(db, principal, resource, action))) {
      throw resourceForbidden(resourceId)
    }
    return resource
  }

  /**
   * Ids of resources `principal` may perform `action` on through a live grant, for listings: the
   * rule `allows` applies to one resource, so a listing never shows what the item route refuses.
   */
  async sharedResourceIds(
    db: Kysely<Schema>,
    principal: string,
    action: ResourceAction,
  ): Promise<string[]> {
    const now = this.deps.clock.now()
    const rows = await store.liveResourceIdsFor(db, principal, now)
    const ids = new Set<string>()
    for (const g of rows) {
      if (ids.has(g.resource_id)) continue
      if (!(JSON.parse(g.actions) as string[]).includes(action)) continue
      const resource = await this.deps.resources.findForGrant(db, g.resource_id)
      if (resource && (await this.chainLive(db, g, resource, now, 0))) ids.add(g.resource_id)
    }
    return [...ids]
  }

  /** A live grant of `principal` covering all `actions` (and expiry, if given), or undefined. */
  private async liveGrant(
    db: Kysely<Schema>,
    principal: string,
    resource: ResourceRow,
    actions: ResourceAction[],
    minExpiresAt: number,
    delegable = false,
  ): Promise<GrantRow | undefined> {
    const now = this.deps.clock.now()
    const candidates = (await store.liveGrantsFor(db, principal, resource.id, now))
      .filter((g) => {
        const held = JSON.parse(g.actions) as string[]
        return (
          actions.every((a) => held.includes(a)) &&
          g.expires_at >= minExpiresAt &&
          (!delegable || g.delegable === 1)
        )
      })
      .sort((a, b) => b.expires_at - a.expires_at)
    for (const g of candidates) {
      if (await this.chainLive(db, g, resource, now, 0)) return g
    }
    return undefined
  }

  /** A grant is live when it and every grant it was passed on from are live and consistent. */
  private async chainLive(
    db: Kysely<Schema>,
    g: GrantRow,
    resource: ResourceRow,
    now: number,
    depth: number,
  ): Promise<boolean> {
    if (depth > MAX_CHAIN) return false
    if (g.revoked_at !== null || g.expires_at <= now || g.resource_id !== resource.id) return false
    if (g.parent_id === null) return g.issuer === resource.owner
    const parent = await store.findGrant(db, g.parent_id)
    if (!parent || parent.subject !== g.issuer || parent.delegable !== 1) return false
    const held = JSON.parse(parent.actions) as string[]
    const passed = JSON.parse(g.actions) as string[]
    if (!passed.every((a) => held.includes(a)) || g.expires_at > parent.expires_at) return false
    return this.chainLive(db, parent, resource, now, depth + 1)
  }

  /** Issues a grant: by the owner, or by a holder of a live delegable grant (a subset of it). */
  async create(
    principal: string,
    body: CreateGrantInput,
    idempotencyKey?: string,
    { carry, trace }: Carrying = {},
  ): Promise<GrantView> {
    // Stored in the protocol's order, so equal grants hold equal action lists.
    const actions = RESOURCE_ACTIONS.filter((a) => body.actions.includes(a))
    const { expiresAt } = body
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const once = { scope: 'grant.create', principal, key: idempotencyKey, request: body, now }
      return onceByKey(tx.db, once, async () => {
        if (expiresAt <= now) {
          throw new BatonError('invalid_grant', 'expiresAt must be in the future', {
            field: 'expiresAt',
          })
        }
        if (expiresAt - now > this.deps.maxTtlMs) {
          throw new BatonError(
            'invalid_grant',
            `A grant lives at most ${Math.round(this.deps.maxTtlMs / 1000)} seconds`,
            { field: 'expiresAt' },
          )
        }
        const resource = await this.deps.resources.findForGrant(tx.db, body.resourceId)
        if (!resource) throw resourceForbidden(body.resourceId)
        // Access is decided before anything about the resource is checked, so a caller who may
        // not see it is answered exactly as for a missing id (the subject check below would
        // otherwise tell that the resource exists, and who owns it).
        let parentId: string | null = null
        if (resource.owner !== principal) {
          // seed 000: a non-owner passes on access only through a delegable grant, and only a
          // subset of its actions expiring no later than its own grant.
          const parent = await this.liveGrant(tx.db, principal, resource, actions, expiresAt, true)
          if (!parent) {
            const canRead = await this.allows(tx.db, principal, resource, 'resource:read')
            if (!canRead) throw resourceForbidden(body.resourceId)
            throw new BatonError(
              'grant_forbidden',
              'Only the owner, or the holder of a live delegable grant covering these actions and this expiry, may grant access',
              { resourceId: resource.id },
            )
          }
          parentId = parent.id
        }
        if (body.subject === principal || body.subject === resource.owner) {
          throw new BatonError('invalid_grant', 'The subject already holds this access', {
            field: 'subject',
          })
        }
        const row: GrantRow = {
          id: `gr_${randomBytes(16).toString('base64url')}`,
          resource_id: resource.id,
          issuer: principal,
          subject: body.subject,
          actions: JSON.stringify(actions),
          delegable: body.delegable ? 1 : 0,
          expires_at: expiresAt,
          revoked_at: null,
          parent_id: parentId,
          created_at: now,
          ...traceColumns(trace),
        }
        await store.insertGrant(tx.db, row)
        tx.afterCommit(() =>
          this.deps.bus.publish({
            topic: `resource:${resource.id}`,
            type: 'grant.created',
            at: now,
            data: { grantId: row.id, resourceId: resource.id, subject: row.subject },
          }),
        )
        return toGrantView(row, now)
      })
    })
  }

  /** Grants the caller issued or holds, with their status. */
  async list(principal: string): Promise<{ capabilities: GrantView[] }> {
    const now = this.deps.clock.now()
    const rows = await store.listGrantsOf(this.deps.database.db, principal, 1000)
    return { capabilities: rows.map((r) => toGrantView(r, now)) }
  }

  /**
   * Revokes a grant and everything passed on from it, at once; repeating answers the same
   * `revokedAt`. Only its issuer or the resource's owner may revoke.
   */
  async revoke(
    principal: string,
    grantId: string,
    { carry, trace }: Carrying = {},
  ): Promise<GrantView> {
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const grant = await store.findGrant(tx.db, grantId)
      const resource = grant
        ? await this.deps.resources.findForGrant(tx.db, grant.resource_id)
        : undefined
      const visible =
        grant &&
        (grant.issuer === principal || grant.subject === principal || resource?.owner === principal)
      if (!grant || !visible) {
        throw new BatonError(
          'grant_not_found',
          `No grant ${JSON.stringify(grantId)} for this principal`,
        )
      }
      if (grant.issuer !== principal && resource?.owner !== principal) {
        throw new BatonError(
          'grant_forbidden',
          'Only the issuer or the resource owner may revoke a grant',
        )
      }
      if (grant.revoked_at !== null) return toGrantView(grant, now)
      let frontier = [grant.id]
      const all = [grant.id]
      for (let depth = 0; depth < MAX_CHAIN && frontier.length > 0; depth++) {
        frontier = await store.childGrantIds(tx.db, frontier)
        all.push(...frontier)
      }
      await store.revokeGrants(tx.db, all, now, traceColumns(trace))
      tx.afterCommit(() =>
        this.deps.bus.publish({
          topic: `resource:${grant.resource_id}`,
          type: 'grant.revoked',
          at: now,
          data: { grantId: grant.id, resourceId: grant.resource_id, revoked: all.length },
        }),
      )
      return toGrantView({ ...grant, revoked_at: now, ...traceColumns(trace) }, now)
    })
  }

  /** How many grants are live now, for the operator's overview. */
  async operatorLiveCount(): Promise<number> {
    return store.countLive(this.deps.database.db, this.deps.clock.now())
  }

  /**
   * Grants for the operator, newest first: `status` live, revoked or expired (the dashboard's
   * word for an active grant is live), of one subject or on one resource.
   */
  async operatorList(q: {
    status?: string | undefined
    subject?: string | undefined
    resourceId?: string | undefined
  }) {
    const now = this.deps.clock.now()
    return (await store.listForOperator(this.deps.database.db, now, q)).map((g) => {
      const at = statusAt(g, now)
      const status: 'live' | 'revoked' | 'expired' = at === 'active' ? 'live' : at
      return {
        id: g.id,
        resourceId: g.resource_id,
        issuer: g.issuer,
        subject: g.subject,
        actions: parseStored(g.actions),
        delegable: g.delegable === 1,
        status,
        parentId: g.parent_id,
        createdAt: isoOrNull(g.created_at),
        expiresAt: isoOrNull(g.expires_at),
        revokedAt: isoOrNull(g.revoked_at),
      }
    })
  }
}
