import {
  BatonError,
  type CreatedTransferView,
  type LeaseView,
  type TransferView,
  type UsageView,
} from '@baton/protocol'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { TransferConfig } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import type { TransferEventRow, TransferRow } from '../store/schema.js'
import type {
  BatchGroup,
  GroupOutcome,
  RunOptions,
  Tx,
  WriteBatcher,
} from '../store/transaction.js'
import { type HandedTrace, traceColumns } from '../telemetry/trace-context.js'
import { refused, transition, WriteSet } from './machine.js'
import { decideUsage, type UsageReport, usageKey } from './metering.js'
import * as store from './store.js'
import {
  conflict,
  expiredError,
  HUB,
  isDue,
  iso,
  isoOrNull,
  notFound,
  OPERATOR,
  type Outcome,
  toView,
  transferTopic,
} from './views.js'

/** One write on one transfer, as the lifecycle's group of writes takes it. */
export type TransferWrite =
  | {
      kind: 'create'
      /** A fresh transfer id; a repeat of a key answers the first transfer instead. */
      id: string
      owner: string
      key: string | undefined
      canonical: string
      checksum: string
      bytes: number
      trace?: HandedTrace | undefined
    }
  | {
      kind: 'provision'
      id: string
      caller: string
      jti: string
      params: { tier: string; budgetMicros: number; rateMicrosPerSecond: number }
      trace?: HandedTrace | undefined
    }
  | { kind: 'activate'; id: string; caller: string; jti: string }
  | { kind: 'claim'; id: string; runtime: string }
  | { kind: 'push'; id: string; runtime: string; checksum: string }
  | { kind: 'lease'; id: string; runtime: string; instance: string }
  | ({ kind: 'usage'; id: string } & UsageReport)
  | { kind: 'terminate'; id: string; note?: string | undefined }
  /** The reaper's and a read's: a transfer past its TTL ends, with its event. */
  | { kind: 'expire'; id: string }
  /** The reaper's: an insolvent transfer past its grace ends. */
  | { kind: 'grace_over'; id: string }

/** What the lifecycle needs from the rest of the hub. */
export interface LifecycleDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: TransferConfig
  log: Logger
  /** `sha-256:` checksum of canonical snapshot bytes. */
  checksumOf(canonical: string): string
}

/** The writes whose answer carries the transfer's event log. */
const ANSWERS_VIEW = new Set<TransferWrite['kind']>([
  'provision',
  'activate',
  'claim',
  'push',
  'terminate',
])

/** How many transfers' event logs an instance keeps in memory to answer from. */
const KNOWN_LOGS = 4096

const ownerKey = (owner: string, key: string) => `${owner}\0${key}`

const fail = (error: BatonError): Outcome<never> => ({ ok: false, error })

/**
 * The usage reports of a group as (transfer, key) pairs, when no transfer has two keys among
 * them, so each report is read with its row; undefined when one has (they are read apart).
 */
function usagePairs(inputs: TransferWrite[]): [string, string][] | undefined {
  const keys = new Map<string, string>()
  for (const m of inputs) {
    if (m.kind !== 'usage') continue
    const known = keys.get(m.id)
    if (known !== undefined && known !== m.key) return undefined
    keys.set(m.id, m.key)
  }
  return [...keys]
}

function replayed(row?: TransferRow): BatonError {
  return new BatonError('transfer_token_replayed', 'This transfer token was already used', {
    ...(row ? { state: row.state, version: row.version } : {}),
  })
}

/**
 * The access rule of the runtime's own writes (push, lease, usage): the claiming runtime acts;
 * the owner, who sees the transfer, is refused; anyone else is answered like a missing id.
 */
function runtimeOnly(row: TransferRow, runtime: string): BatonError | undefined {
  if (row.runtime === runtime) return undefined
  if (row.owner !== runtime) return notFound(row.id)
  // seed 004 fault: anyone could report usage; only the claiming runtime may act for it.
  return new BatonError(
    'transfer_forbidden',
    row.runtime === null
      ? 'Claim the transfer before running it'
      : 'Only the runtime that claimed this transfer may do this',
  )
}

/**
 * Only a claimable transfer is visible to a runtime that neither owns nor holds it: one that is
 * not, or that another runtime won meanwhile, is answered like a missing id.
 */
function claimAccess(row: TransferRow, runtime: string, now: number): BatonError | undefined {
  const hidden = row.owner !== runtime && row.runtime !== runtime
  return hidden && (row.runtime !== null || row.state !== 'provisioned' || isDue(row, now))
    ? notFound(row.id)
    : undefined
}

/**
 * Every write of a transfer, set-based: the writes that arrive together lock and read their rows
 * once, are decided in memory in arrival order, and are written with one statement each for
 * rows, events, token uses and usage reports. A write of one goes the same way.
 */
export class TransferLifecycle {
  constructor(private readonly deps: LifecycleDeps) {}

  private readonly group: BatchGroup<TransferWrite, Outcome<unknown>> = {
    many: (db, inputs) => this.many(db, inputs),
  }

  /** Commits one write with whatever else arrives with it; throws its refusal once committed. */
  async run(
    input: TransferWrite & { kind: 'create' },
    opts?: RunOptions,
  ): Promise<CreatedTransferView>
  async run(input: TransferWrite & { kind: 'lease' }, opts?: RunOptions): Promise<LeaseView>
  async run(input: TransferWrite & { kind: 'usage' }, opts?: RunOptions): Promise<UsageView>
  async run(
    input: TransferWrite & { kind: 'expire' | 'grace_over' },
    opts?: RunOptions,
  ): Promise<boolean>
  async run(input: TransferWrite, opts?: RunOptions): Promise<TransferView>
  async run(input: TransferWrite, opts?: RunOptions): Promise<unknown> {
    const outcome = await this.deps.batcher.runIn(this.group, input, opts)
    if (!outcome.ok) throw outcome.error
    return outcome.value
  }

  private async many(
    db: Tx['db'],
    inputs: TransferWrite[],
  ): Promise<GroupOutcome<Outcome<unknown>>[]> {
    const w = new WriteSet(this.deps.clock.now())
    // A create's id is new: only the writes on existing transfers lock and read rows.
    const ids = [...new Set(inputs.filter((m) => m.kind !== 'create').map((m) => m.id))].sort()
    const tokens = inputs.some((m) => m.kind === 'provision' || m.kind === 'activate')
    const content = [...new Set(inputs.filter((m) => m.kind === 'push').map((m) => m.id))]
    const asked = usagePairs(inputs)
    const rows =
      ids.length === 0
        ? []
        : await store.lockTransfers(db, ids, {
            lock: this.deps.database.caps.lockRowsForUpdate,
            tokens,
            content,
            usage: asked ?? [],
          })
    for (const { provision_jti, activate_jti, content: text, usage_amount, ...r } of rows) {
      w.rows.set(r.id, r)
      w.readVersion.set(r.id, r.version)
      // A token is bound to its transfer and scope, so these are the only uses it can collide with.
      if (provision_jti) w.usedJtis.add(provision_jti)
      if (activate_jti) w.usedJtis.add(activate_jti)
      if (typeof text === 'string') w.snapshots.set(r.id, text)
      if (usage_amount !== undefined && usage_amount !== null) {
        const key = asked!.find(([id]) => id === r.id)![1]
        w.usage.set(usageKey(r.id, key), { amount_micros: Number(usage_amount) })
      }
    }
    const present = (kinds: Set<TransferWrite['kind']>) => [
      ...new Set(inputs.filter((m) => kinds.has(m.kind) && w.rows.has(m.id)).map((m) => m.id)),
    ]
    const reports = inputs.filter(
      (m): m is TransferWrite & { kind: 'usage' } => m.kind === 'usage' && w.rows.has(m.id),
    )
    if (reports.length > 0 && asked === undefined) {
      const found = await store.findUsages(
        db,
        [...new Set(reports.map((m) => m.id))],
        [...new Set(reports.map((m) => m.key))],
      )
      for (const u of found) w.usage.set(usageKey(u.transfer_id, u.idempotency_key), u)
    }
    const keyed = inputs.filter(
      (m): m is TransferWrite & { kind: 'create' } => m.kind === 'create' && m.key !== undefined,
    )
    if (keyed.length > 0) {
      const found = await store.findByOwnerKeys(
        db,
        [...new Set(keyed.map((m) => m.owner))],
        [...new Set(keyed.map((m) => m.key!))],
      )
      for (const r of found) w.keyed.set(ownerKey(r.owner, r.idempotency_key!), r)
    }
    const viewed = [
      ...new Set([...present(ANSWERS_VIEW), ...[...w.keyed.values()].map((r) => r.id)]),
    ]
    const priorVersion = new Map([...w.keyed.values()].map((r) => [r.id, r.version]))
    const unknown: string[] = []
    for (const id of viewed) {
      const version = w.rows.get(id)?.version ?? priorVersion.get(id)
      const known = this.logs.get(id)
      // Every event bumps the version and its seq is the version after it, so a log whose last
      // seq is the locked row's version is the whole log: no other instance wrote since.
      if (known && version !== undefined && known.at(-1)?.seq === version) {
        w.logs.set(id, [...known])
      } else {
        w.logs.set(id, [])
        unknown.push(id)
      }
    }
    if (unknown.length > 0) {
      for (const e of await store.listEventsOf(db, unknown)) w.logs.get(e.transfer_id)!.push(e)
    }

    const outcomes: GroupOutcome<Outcome<unknown>>[] = []
    for (const m of inputs) {
      const events = w.events.length
      const reported = w.newUsage.length
      const value = this.decide(w, m)
      const fresh = w.events.slice(events)
      const spent = w.newUsage.length > reported ? w.rows.get(m.id)!.spent_micros : undefined
      const first = outcomes.length === 0
      outcomes.push({
        ok: true,
        value,
        after: () => {
          // Only what committed is remembered, so a group rolled back leaves nothing behind.
          if (first) this.remember(w)
          if (fresh.length > 0 || spent !== undefined) this.announce(m.id, fresh, spent, w.now)
        },
      })
    }

    const changed = [...w.dirty].map((id) => w.rows.get(id)!)
    // Rows are locked (or the database is), so every changed row is still at the version read;
    // if one is not, the group fails and every write of it is retried alone.
    const assertAllApplied = (applied: number) => {
      if (applied !== changed.length) throw new Error('transfers changed under a locked batch')
    }
    if (this.deps.database.caps.writableCte) {
      const applied = await store.writeGroup(db, {
        changed,
        readVersion: w.readVersion,
        created: w.created,
        events: w.events,
        tokenUses: w.tokenUses,
        usages: w.newUsage,
      })
      assertAllApplied(applied)
    } else {
      if (changed.length > 0)
        assertAllApplied(await store.applyTransfers(db, changed, w.readVersion))
      await store.insertTransfers(db, w.created)
      await store.insertEvents(db, w.events)
      await store.useTokens(db, w.tokenUses)
      await store.insertUsages(db, w.newUsage)
    }
    return outcomes
  }

  /** Event logs as last committed here, newest last; checked against the version on each use. */
  private readonly logs = new Map<string, TransferEventRow[]>()

  /** A transfer's whole event log: as committed here when no instance wrote since, else read. */
  async eventsOf(row: TransferRow): Promise<TransferEventRow[]> {
    const known = this.logs.get(row.id)
    if (known && known.at(-1)?.seq === row.version) return known
    const log = await store.listEvents(this.deps.database.db, row.id)
    // Committed rows, read whole: as good to answer from as the ones written here.
    if (log.length > 0 && log.at(-1)!.seq >= row.version) this.keep(row.id, log)
    return log
  }

  private remember(w: WriteSet): void {
    for (const [id, log] of w.logs) if (log.length > 0) this.keep(id, log)
  }

  /** Keeps a log as the newest; the least recently kept go first past the bound. */
  private keep(id: string, log: TransferEventRow[]): void {
    this.logs.delete(id)
    this.logs.set(id, log)
    if (this.logs.size > KNOWN_LOGS) this.logs.delete(this.logs.keys().next().value!)
  }

  /** After commit: one event per transition, and the spend hint for live views. */
  private announce(
    id: string,
    events: TransferEventRow[],
    spent: number | undefined,
    at: number,
  ): void {
    const topic = transferTopic(id)
    if (spent !== undefined) {
      // Not an event of the log (usage goes to its ledger), but a hint for live views.
      this.deps.bus.publish({
        topic,
        type: 'transfer.usage',
        at,
        data: { transferId: id, spentMicros: spent },
      })
    }
    for (const e of events) {
      this.deps.bus.publish({
        topic,
        type: `transfer.${e.type}`,
        at: e.at,
        data: { transferId: id, state: e.to_state, version: e.seq },
      })
    }
  }

  private view(w: WriteSet, row: TransferRow): TransferView {
    return toView(row, w.logs.get(row.id) ?? [])
  }

  private decide(w: WriteSet, m: TransferWrite): Outcome<unknown> {
    if (m.kind === 'create') return this.create(w, m)
    const row = w.rows.get(m.id)
    if (m.kind === 'expire') return { ok: true, value: row ? this.expire(w, row) : false }
    if (m.kind === 'grace_over') return { ok: true, value: row ? this.graceOver(w, row) : false }
    if (!row) return fail(notFound(m.id))
    if (m.kind === 'terminate') return this.terminate(w, row, m.note)
    // A caller who may not see the transfer is answered exactly as for an id that does not
    // exist, before anything else, so no state or expiry tells that it does.
    const refusal =
      m.kind === 'claim'
        ? claimAccess(row, m.runtime, w.now)
        : m.kind === 'push' || m.kind === 'lease' || m.kind === 'usage'
          ? runtimeOnly(row, m.runtime)
          : undefined
    if (refusal) return fail(refusal)
    if (isDue(row, w.now)) {
      // Expired: the expiry commits, with its event, and the write is answered transfer_expired.
      const before = { ...row }
      this.expire(w, row)
      return fail(expiredError(before))
    }
    switch (m.kind) {
      case 'provision':
      case 'activate':
        return this.tokenMove(w, row, m)
      case 'claim':
        return this.claim(w, row, m.runtime)
      case 'push':
        return this.push(w, row, m.runtime, m.checksum)
      case 'lease':
        return this.lease(w, row, m.runtime, m.instance)
      case 'usage':
        return decideUsage(w, row, m, this.deps.config.graceMs)
    }
  }

  /**
   * Stages a snapshot as a new transfer, its first event beginning the log (creation is no
   * transition of the table); a repeat of the owner's key with the same snapshot answers the
   * first transfer.
   */
  private create(w: WriteSet, m: TransferWrite & { kind: 'create' }): Outcome<CreatedTransferView> {
    if (m.key !== undefined) {
      const prior = w.keyed.get(ownerKey(m.owner, m.key))
      if (prior) {
        if (prior.checksum !== m.checksum) {
          return fail(
            new BatonError(
              'idempotency_conflict',
              'This idempotency key already staged a different snapshot',
              { transferId: prior.id },
            ),
          )
        }
        return {
          ok: true,
          value: { ...this.view(w, w.rows.get(prior.id) ?? prior), repeated: true },
        }
      }
    }
    const row: TransferRow = {
      id: m.id,
      owner: m.owner,
      state: 'staged',
      version: 1,
      idempotency_key: m.key ?? null,
      checksum: m.checksum,
      snapshot_bytes: m.bytes,
      tier: null,
      budget_micros: null,
      rate_micros: null,
      spent_micros: 0,
      runtime: null,
      lease_instance: null,
      lease_ends_at: null,
      created_at: w.now,
      updated_at: w.now,
      expires_at: w.now + this.deps.config.ttlMs,
      grace_ends_at: null,
      end_reason: null,
    }
    const event: TransferEventRow = {
      transfer_id: row.id,
      seq: 1,
      type: 'staged',
      from_state: null,
      to_state: 'staged',
      actor: m.owner,
      data: JSON.stringify({ checksum: m.checksum, snapshotBytes: m.bytes }),
      at: w.now,
      ...traceColumns(m.trace),
    }
    w.created.push({ row, content: m.canonical })
    w.events.push(event)
    w.logs.set(row.id, [event])
    if (m.key !== undefined) w.keyed.set(ownerKey(m.owner, m.key), row)
    return { ok: true, value: { ...toView(row, [event]), repeated: false } }
  }

  /**
   * A token-gated move: refuses a used token before anything else, and records the token's use
   * with the move, so a refused move leaves the token unused (seed 004 fault: tokens were burned
   * before the state change).
   */
  private tokenMove(
    w: WriteSet,
    row: TransferRow,
    m: TransferWrite & { kind: 'provision' | 'activate' },
  ): Outcome<TransferView> {
    if (w.usedJtis.has(m.jti)) return fail(replayed(row))
    const moved =
      m.kind === 'provision'
        ? transition(w, row, 'provisioned', {
            actor: m.caller,
            patch: {
              tier: m.params.tier,
              budget_micros: m.params.budgetMicros,
              rate_micros: m.params.rateMicrosPerSecond,
              expires_at: w.now + this.deps.config.ttlMs,
            },
            data: { ...m.params, jti: m.jti },
            trace: m.trace,
          })
        : transition(w, row, 'active', {
            actor: m.caller,
            patch: { expires_at: null },
            data: { jti: m.jti },
          })
    if (refused(moved)) return fail(moved)
    w.usedJtis.add(m.jti)
    w.tokenUses.push({ jti: m.jti, transfer_id: row.id, scope: m.kind, used_at: w.now })
    return { ok: true, value: this.view(w, row) }
  }

  /** A runtime claims one provisioned transfer; claiming it again is answered, not refused. */
  private claim(w: WriteSet, row: TransferRow, runtime: string): Outcome<TransferView> {
    if (row.runtime === runtime && row.state !== 'terminated') {
      return { ok: true, value: this.view(w, row) }
    }
    if (row.runtime !== null) {
      return fail(new BatonError('transfer_claimed', 'Another runtime holds it'))
    }
    const moved = transition(w, row, 'claimed', {
      actor: runtime,
      patch: { runtime },
      data: { tier: row.tier },
      wanted: 'claim',
    })
    if (refused(moved)) return fail(moved)
    return { ok: true, value: this.view(w, row) }
  }

  /**
   * provisioned → pushed, with the checksum the runtime computed over the snapshot it fetched;
   * the hub recomputes its own from the stored bytes. A mismatch is refused and recorded as an
   * event (seed 004 fault: push moved no data and re-hashed nothing).
   */
  private push(
    w: WriteSet,
    row: TransferRow,
    runtime: string,
    checksum: string,
  ): Outcome<TransferView> {
    if (row.state !== 'provisioned') return fail(conflict(row, 'push'))
    const content = w.snapshots.get(row.id)
    const hub = content === undefined ? '' : this.deps.checksumOf(content)
    if (hub !== row.checksum || checksum !== row.checksum) {
      const data = { expected: row.checksum, hub, runtime: checksum }
      transition(w, row, 'checksum_mismatch', { actor: runtime, data })
      this.deps.log.warn(
        { transferId: row.id, ...data },
        'transfer push refused: checksum mismatch',
      )
      return fail(new BatonError('checksum_mismatch', 'The snapshot checksums differ', data))
    }
    const moved = transition(w, row, 'pushed', {
      actor: runtime,
      patch: { expires_at: w.now + this.deps.config.ttlMs },
      data: { checksum: row.checksum },
    })
    if (refused(moved)) return fail(moved)
    return { ok: true, value: this.view(w, row) }
  }

  /**
   * Takes or renews the lease to run an active transfer's agent: free, already this instance's,
   * or lapsed (seed 004: started twice, it does not run a transfer twice).
   */
  private lease(
    w: WriteSet,
    row: TransferRow,
    runtime: string,
    instance: string,
  ): Outcome<LeaseView> {
    if (row.state !== 'active') return fail(conflict(row, 'lease'))
    const free =
      row.lease_instance === null ||
      row.lease_instance === instance ||
      (row.lease_ends_at !== null && row.lease_ends_at <= w.now)
    if (!free) {
      return fail(
        new BatonError('transfer_lease_held', 'Another process runs this transfer', {
          leaseEndsAt: isoOrNull(row.lease_ends_at),
        }),
      )
    }
    const until = w.now + this.deps.config.leaseMs
    const renewed = row.lease_instance === instance
    const started = row.lease_instance === null
    w.patch(row, { lease_instance: instance, lease_ends_at: until })
    if (!renewed) {
      transition(w, row, started ? 'started' : 'restarted', { actor: runtime, data: { instance } })
    }
    return { ok: true, value: { transferId: row.id, instance, leaseEndsAt: iso(until), renewed } }
  }

  /** Terminates a transfer in any state (the orchestrator); terminating it again is answered. */
  private terminate(w: WriteSet, row: TransferRow, note?: string): Outcome<TransferView> {
    if (row.state === 'terminated') return { ok: true, value: this.view(w, row) }
    const moved = transition(w, row, 'terminated', {
      actor: OPERATOR,
      patch: { end_reason: 'orchestrator', lease_instance: null },
      data: { reason: 'orchestrator', ...(note ? { note } : {}) },
      wanted: 'terminate',
    })
    if (refused(moved)) return fail(moved)
    return { ok: true, value: this.view(w, row) }
  }

  private expire(w: WriteSet, row: TransferRow): boolean {
    if (!isDue(row, w.now)) return false
    const expiresAt = isoOrNull(row.expires_at)
    return !refused(
      transition(w, row, 'expired', {
        actor: HUB,
        patch: { end_reason: 'expired' },
        data: { reason: 'expired', expiresAt },
      }),
    )
  }

  private graceOver(w: WriteSet, row: TransferRow): boolean {
    if (row.state !== 'insolvent' || row.grace_ends_at === null || row.grace_ends_at > w.now) {
      return false
    }
    return !refused(
      transition(w, row, 'terminated', {
        actor: HUB,
        patch: { end_reason: 'insolvent', lease_instance: null },
        data: { reason: 'insolvent', spentMicros: row.spent_micros },
      }),
    )
  }
}
