import { randomBytes } from 'node:crypto'
import {
  BatonError,
  type CreateResourceInput,
  type ListResourcesQuery,
  type ResourceVersionView,
  type ResourceView,
  type UpdateResourceInput,
} from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { EventBus } from '../events/bus.js'
import type { GrantService } from '../grants/service.js'
import type { Database } from '../store/database.js'
import { onceByKey } from '../store/idempotency.js'
import { activitySeries, iso as isoOrNull, num, parseStored } from '../store/operator-reads.js'
import { changeStoredBytes } from '../store/quota.js'
import type { ResourceRow, Schema } from '../store/schema.js'
import type { Carrying, WriteBatcher } from '../store/transaction.js'
import { traceColumns, traceFields } from '../telemetry/trace-context.js'
import { diffJson, type JsonChange } from './diff.js'
import * as store from './store.js'

/** What the resource service needs from the rest of the hub. */
export interface ResourceDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  grants: GrantService
  /** Largest `data` as JSON, in bytes. */
  maxBytes: number
  /** Most resources one listing page answers. */
  maxPageSize: number
  /** Bytes of data a principal may own in all; undefined for no limit. */
  storedBytesQuota?: number | undefined
}

const iso = (ms: number) => new Date(ms).toISOString()
const ID_PATTERN = /^rs_[A-Za-z0-9_-]{22}$/

/** A resource as answered, with `repeated: true` when an update was a repeat of a committed one. */
export type ResourceAnswer = ResourceView & { repeated?: boolean }

function toView(row: ResourceRow): ResourceView {
  return {
    id: row.id,
    owner: row.owner,
    namespace: row.namespace,
    kind: row.kind,
    data: JSON.parse(row.data),
    version: row.version,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    updatedBy: row.updated_by,
    ...traceFields(row),
  }
}

/**
 * Versioned shared resources, seed 000: created by an owner, replaced whole by compare-and-set
 * on `expectedVersion`, every version kept in a history, visible only to the owner and to
 * holders of live grants.
 */
export class ResourceService {
  constructor(private readonly deps: ResourceDeps) {}

  private measure(data: unknown): { json: string; size: number } {
    const json = JSON.stringify(data)
    const size = Buffer.byteLength(json, 'utf8')
    if (size > this.deps.maxBytes) {
      throw new BatonError(
        'resource_too_large',
        `data is ${size} bytes as JSON; at most ${this.deps.maxBytes} are accepted`,
        { limit: this.deps.maxBytes, size },
      )
    }
    return { json, size }
  }

  // One stored-bytes quota covers resource data and home files alike, counted against the owner.
  private async changeStoredBytes(db: Kysely<Schema>, owner: string, delta: number): Promise<void> {
    await changeStoredBytes(db, { principal: owner, delta, limit: this.deps.storedBytesQuota })
  }

  /** Creates a resource at version 1; an Idempotency-Key makes a retry answer the first result. */
  async create(
    owner: string,
    body: CreateResourceInput,
    idempotencyKey?: string,
    { carry, trace }: Carrying = {},
  ): Promise<ResourceView> {
    const { json, size } = this.measure(body.data)
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const once = {
        scope: 'resource.create',
        principal: owner,
        key: idempotencyKey,
        request: body,
        now,
      }
      return onceByKey(tx.db, once, async () => {
        await this.changeStoredBytes(tx.db, owner, size)
        const row: ResourceRow = {
          id: `rs_${randomBytes(16).toString('base64url')}`,
          owner,
          namespace: body.namespace,
          kind: body.kind,
          data: json,
          size,
          version: 1,
          created_at: now,
          updated_at: now,
          updated_by: owner,
          ...traceColumns(trace),
        }
        await store.insertResource(tx.db, row)
        await store.insertVersion(tx.db, {
          resource_id: row.id,
          version: 1,
          data: json,
          actor: owner,
          at: now,
          ...traceColumns(trace),
        })
        tx.afterCommit(() =>
          this.deps.bus.publish({
            topic: `resource:${row.id}`,
            type: 'resource.created',
            at: now,
            data: { resourceId: row.id, owner, version: 1 },
          }),
        )
        return toView(row)
      })
    })
  }

  /** Reads a resource: its owner, or a holder of a live grant with `resource:read`. */
  async get(principal: string, id: string): Promise<ResourceView> {
    const row = await this.deps.grants.assertAllowed(
      this.deps.database.db,
      principal,
      checkId(id),
      'resource:read',
    )
    return toView(row)
  }

  /** Every version with its data, actor and time; needs `resource:read`. */
  async history(
    principal: string,
    id: string,
  ): Promise<{ resourceId: string; versions: ResourceVersionView[] }> {
    const db = this.deps.database.db
    await this.deps.grants.assertAllowed(db, principal, checkId(id), 'resource:read')
    const rows = await store.listVersions(db, id)
    return {
      resourceId: id,
      versions: rows.map((v) => ({
        version: v.version,
        data: JSON.parse(v.data),
        actor: v.actor,
        at: iso(v.at),
        ...traceFields(v),
      })),
    }
  }

  /**
   * Replaces `data` only at `expectedVersion` (seed 000: PATCH replaces the complete data).
   * Permission is checked before the version, so a revoked grantee gets 403, never 409. The
   * identical update repeated by the same caller after a lost answer answers `repeated: true`.
   */
  async update(
    principal: string,
    id: string,
    body: UpdateResourceInput,
    { carry, trace }: Carrying = {},
  ): Promise<ResourceAnswer> {
    const { json, size } = this.measure(body.data)
    checkId(id)
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const row = await this.deps.grants.assertAllowed(tx.db, principal, id, 'resource:update')
      if (row.version !== body.expectedVersion) {
        if (
          row.version === body.expectedVersion + 1 &&
          row.updated_by === principal &&
          row.data === json
        ) {
          return { ...toView(row), repeated: true }
        }
        throw new BatonError(
          'version_conflict',
          `Resource is at version ${row.version}, not ${body.expectedVersion}`,
          { currentVersion: row.version, expectedVersion: body.expectedVersion },
        )
      }
      await this.changeStoredBytes(tx.db, row.owner, size - row.size)
      const moved = await store.casUpdate(tx.db, {
        id,
        expectVersion: row.version,
        data: json,
        size,
        at: now,
        actor: principal,
        trace,
      })
      if (!moved) {
        const current = await store.findResource(tx.db, id)
        throw new BatonError(
          'version_conflict',
          `Resource is at version ${current?.version}, not ${body.expectedVersion}`,
          { currentVersion: current?.version, expectedVersion: body.expectedVersion },
        )
      }
      const version = row.version + 1
      await store.insertVersion(tx.db, {
        resource_id: id,
        version,
        data: json,
        actor: principal,
        at: now,
        ...traceColumns(trace),
      })
      tx.afterCommit(() =>
        this.deps.bus.publish({
          topic: `resource:${id}`,
          type: 'resource.updated',
          at: now,
          data: { resourceId: id, version, actor: principal },
        }),
      )
      return toView({
        ...row,
        data: json,
        size,
        version,
        updated_at: now,
        updated_by: principal,
        ...traceColumns(trace),
      })
    })
  }

  /**
   * Resources the caller may read (owns, or holds a live `resource:read` grant for), optionally
   * by namespace and kind. A listing is a read: seed 000 has a principal that may not read a
   * resource find it missing from a listing, and read permission is what shows `data`, so a
   * resource shared only for `resource:update` is left out rather than listed without its data.
   */
  async list(
    principal: string,
    q: ListResourcesQuery,
  ): Promise<{ resources: ResourceView[]; next: string | null }> {
    const limit = Math.min(this.deps.maxPageSize, q.limit ?? this.deps.maxPageSize)
    const db = this.deps.database.db
    const sharedIds = await this.deps.grants.sharedResourceIds(db, principal, 'resource:read')
    const rows = await store.listVisible(db, {
      owner: principal,
      sharedIds,
      namespace: q.namespace,
      kind: q.kind,
      after: q.after,
      limit,
    })
    return {
      resources: rows.map(toView),
      next: rows.length === limit ? rows[rows.length - 1]!.id : null,
    }
  }

  /**
   * A resource's row by id, read with `db` (a transaction's, when the caller decides inside
   * one), for the grants on it: whether one may be issued or revoked, and by whom.
   */
  async findForGrant(db: Kysely<Schema>, id: string): Promise<ResourceRow | undefined> {
    return store.findResource(db, id)
  }

  /** How many resources there are, and their versions per minute over the last hour. */
  async operatorCounts(): Promise<{ resources: number; versions: number[] }> {
    const db = this.deps.database.db
    const [resources, versions] = await Promise.all([
      store.countAll(db),
      activitySeries(db, 'resource_versions', 'at', this.deps.clock.now()),
    ])
    return { resources, versions }
  }

  /** Resources for the operator by namespace and owner, with every namespace and its size. */
  async operatorList(q: { namespace?: string | undefined; owner?: string | undefined }) {
    const db = this.deps.database.db
    const [rows, namespaces] = await Promise.all([
      store.listForOperator(db, q),
      store.namespaceSizes(db),
    ])
    return {
      namespaces: namespaces.map((n) => ({ namespace: n.namespace, resources: num(n.n) })),
      resources: rows.map((r) => ({
        id: r.id,
        owner: r.owner,
        namespace: r.namespace,
        kind: r.kind,
        size: r.size,
        version: r.version,
        updatedAt: isoOrNull(r.updated_at),
        updatedBy: r.updated_by,
      })),
    }
  }

  /** One resource with every version, the changes between consecutive ones, and its grants. */
  async operatorRead(id: string) {
    const db = this.deps.database.db
    const row = await store.findResource(db, id)
    if (!row) return undefined
    const [versions, grants] = await Promise.all([
      store.versionsForOperator(db, id),
      this.deps.grants.operatorList({ resourceId: id }),
    ])
    let previous: unknown
    return {
      id: row.id,
      owner: row.owner,
      namespace: row.namespace,
      kind: row.kind,
      size: row.size,
      version: row.version,
      createdAt: isoOrNull(row.created_at),
      updatedAt: isoOrNull(row.updated_at),
      updatedBy: row.updated_by,
      versions: versions.map((v, i) => {
        const data = parseStored(v.data)
        const changes: JsonChange[] | null = i === 0 ? null : diffJson(previous, data)
        previous = data
        return { version: v.version, actor: v.actor, at: isoOrNull(v.at), data, changes }
      }),
      grants,
    }
  }
}

function checkId(id: string): string {
  // A malformed id cannot name a resource; it is refused like any invisible one.
  if (!ID_PATTERN.test(id)) {
    throw new BatonError(
      'resource_forbidden',
      `No resource ${JSON.stringify(id)} is visible to this principal`,
      {
        resourceId: id,
      },
    )
  }
  return id
}
