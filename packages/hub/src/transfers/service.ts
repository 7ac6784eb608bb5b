import { createHash, randomBytes } from 'node:crypto'
import {
  type ActivateInput,
  BatonError,
  type ClaimNextInput,
  type CreatedTransferView,
  type CreateTransferInput,
  canonicalJson,
  type LeaseInput,
  type LeaseView,
  type ListTransfersQuery,
  type MintedTokenView,
  type MintTokenInput,
  type ProvisionInput,
  type PushInput,
  type Snapshot,
  type SnapshotView,
  type TerminateInput,
  type TransferView,
  type TransferWaitView,
  type UsageInput,
  type UsageView,
} from '@baton/protocol'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { TransferConfig } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { WaitRegistry, WaitSignal } from '../events/wait.js'
import { assertAdmitted, principalTopic } from '../identity/admission.js'
import type { Database } from '../store/database.js'
import { activitySeries, iso as isoOrNull, num, parseStored } from '../store/operator-reads.js'
import type { TransferRow } from '../store/schema.js'
import type { Carry, Carrying, WriteBatcher } from '../store/transaction.js'
import { TransferLifecycle } from './lifecycle.js'
import { assertNoSecrets } from './secrets.js'
import * as store from './store.js'
import { mintToken, newJti, type TokenKeyring, verifyToken } from './tokens.js'
import { isDue, iso, isTransferId, notFound, OPERATOR, toView, transferTopic } from './views.js'

export { OPERATOR, transferTopic } from './views.js'

/** What the transfer service needs from the rest of the hub. */
export interface TransferDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: TransferConfig
  keyring: TokenKeyring
  log: Logger
  /** Every long poll of the hub; answers waiters when the hub begins shutting down. */
  waits: WaitRegistry
}

/** `sha-256:` and the base64url SHA-256 of the RFC 8785 canonical JSON of a snapshot (seed 004). */
export function checksumOfCanonical(canonical: string): string {
  return `sha-256:${createHash('sha256').update(canonical, 'utf8').digest('base64url')}`
}

const newTransferId = () => `tr_${randomBytes(16).toString('base64url')}`

/** One transfer long poll: whose wait it is and what it has seen. */
interface TransferWaiter {
  caller: string
  id: string
  seen: number | undefined
  waitMs: number
  /** The request's pending admission: a read that writes an expiry commits it with that write. */
  carry: Carry | undefined
}

/** Whether the transfer moved past what the waiter had seen (the version given, else its first read). */
function transferChanged(w: TransferWaiter, v: TransferView, first: TransferView): boolean {
  return v.version > (w.seen ?? first.version)
}

/**
 * Session transfer (seed 004): snapshot, provision under a budget, claim, push, activate, meter,
 * insolvency and reaping, with orchestrator-only single-use tokens. Every move is a transition of
 * the lifecycle's table (machine.ts), committed set-based with the moves that arrive with it
 * (lifecycle.ts); spend is metering.ts, answers views.ts. HTTP, MCP and the CLI call these.
 */
export class TransferService {
  private readonly lifecycle: TransferLifecycle

  constructor(private readonly deps: TransferDeps) {
    this.lifecycle = new TransferLifecycle({ ...deps, checksumOf: checksumOfCanonical })
  }

  /** How many transfers are stored in each state, for the metrics. */
  countByState(): Promise<Record<string, number>> {
    return store.countByState(this.deps.database.db)
  }

  /** Snapshots a session as `owner`; a repeat with the same key and snapshot answers the first. */
  async create(
    owner: string,
    body: CreateTransferInput,
    headerKey?: string,
    { carry, trace }: Carrying = {},
  ): Promise<CreatedTransferView> {
    assertNoSecrets(body.snapshot, '$.snapshot')
    const canonical = canonicalJson(body.snapshot)
    const bytes = Buffer.byteLength(canonical, 'utf8')
    if (bytes > this.deps.config.snapshotMaxBytes) {
      throw new BatonError('snapshot_too_large', `The snapshot is ${bytes} bytes`, {
        limit: this.deps.config.snapshotMaxBytes,
        size: bytes,
      })
    }
    const checksum = checksumOfCanonical(canonical)
    const key = body.idempotencyKey ?? headerKey
    // Two creates raced on one key (another instance): the loser rolled back; its re-run finds
    // the winner.
    return this.lifecycle.run(
      {
        kind: 'create',
        id: newTransferId(),
        owner,
        key,
        canonical,
        checksum,
        bytes,
        trace,
      },
      { rerunOnUniqueViolation: Boolean(key), carry },
    )
  }

  /** The transfer, its budget and its ordered events, for its owner, its runtime or the operator. */
  async get(caller: string, id: string, { carry }: Carrying = {}): Promise<TransferView> {
    let row = await this.visible(caller, id)
    if (isDue(row, this.deps.clock.now())) {
      // A read of an expired transfer answers it as expired at once, with its event written.
      await this.lifecycle.run({ kind: 'expire', id }, { carry })
      row = await this.visible(caller, id)
    }
    return toView(row, await this.lifecycle.eventsOf(row))
  }

  /** Transfers the caller owns or runs, newest first (without their event logs). */
  async list(
    caller: string,
    { role = 'owner', state }: ListTransfersQuery = {},
  ): Promise<{ transfers: TransferView[] }> {
    const rows = await store.listFor(this.deps.database.db, {
      principal: caller,
      role,
      ...(state ? { state } : {}),
      limit: 100,
    })
    return { transfers: rows.map((r) => toView(r, [])) }
  }

  /** The snapshot's content: to the owner, and to the runtime once it has claimed the transfer. */
  async snapshot(caller: string, id: string): Promise<SnapshotView> {
    const row = await this.visible(caller, id)
    if (caller !== row.owner && (caller !== row.runtime || row.state === 'terminated')) {
      throw new BatonError('transfer_forbidden', 'Only the owner and the claiming runtime read it')
    }
    const content = await store.readSnapshot(this.deps.database.db, id)
    if (content === undefined) throw notFound(id)
    return {
      transferId: id,
      checksum: row.checksum,
      snapshot: JSON.parse(content) as Snapshot,
    }
  }

  /** staged → provisioned, with a provision token bound to these exact tier, budget and rate. */
  async provision(
    caller: string,
    id: string,
    body: ProvisionInput,
    { carry, trace }: Carrying = {},
  ): Promise<TransferView> {
    const params = {
      tier: body.tier,
      budgetMicros: body.budgetMicros,
      rateMicrosPerSecond: body.rateMicrosPerSecond,
    }
    const token = verifyToken(this.deps.keyring, body.token, {
      transferId: id,
      scope: 'provision',
      now: this.deps.clock.now(),
      params,
    })
    this.assertTier(params)
    return this.tokenMove({ kind: 'provision', id, caller, jti: token.jti, params, trace }, carry)
  }

  /** pushed → active with an activate token: the one irreversible step (seed 004). */
  async activate(
    caller: string,
    id: string,
    body: ActivateInput,
    { carry }: Carrying = {},
  ): Promise<TransferView> {
    const token = verifyToken(this.deps.keyring, body.token, {
      transferId: id,
      scope: 'activate',
      now: this.deps.clock.now(),
    })
    return this.tokenMove({ kind: 'activate', id, caller, jti: token.jti }, carry)
  }

  /** A runtime claims one provisioned transfer; claiming it again is answered, not refused. */
  async claim(runtime: string, id: string, { carry }: Carrying = {}): Promise<TransferView> {
    this.assertRuntimeAllowed(runtime)
    if (!isTransferId(id)) throw notFound(id)
    return this.lifecycle.run({ kind: 'claim', id, runtime }, { carry })
  }

  /** Claims the oldest provisioned, unclaimed transfer of a tier; null when there is none. */
  async claimNext(
    runtime: string,
    { tier }: ClaimNextInput,
    by: Carrying = {},
  ): Promise<{ transfer: TransferView | null }> {
    this.assertRuntimeAllowed(runtime)
    if (!this.deps.config.tiers[tier]) throw this.unknownTier(tier)
    for (let round = 0; round < 3; round++) {
      const ids = await store.claimable(this.deps.database.db, tier, this.deps.clock.now())
      if (ids.length === 0) break
      for (const id of ids) {
        try {
          return { transfer: await this.claim(runtime, id, by) }
        } catch (error) {
          // Another runtime won this one, or it expired: try the next.
          if (!(error instanceof BatonError) || error.status >= 500) throw error
        }
      }
    }
    return { transfer: null }
  }

  /**
   * provisioned → pushed, by the claiming runtime with the checksum it computed over the snapshot
   * it fetched; the hub recomputes its own from the stored bytes. A mismatch is refused and
   * recorded as an event (seed 004 fault: push moved no data and re-hashed nothing).
   */
  async push(
    runtime: string,
    id: string,
    body: PushInput,
    { carry }: Carrying = {},
  ): Promise<TransferView> {
    if (!isTransferId(id)) throw notFound(id)
    return this.lifecycle.run({ kind: 'push', id, runtime, checksum: body.checksum }, { carry })
  }

  /**
   * Takes or renews the lease to run an active transfer's agent, so a second process of the same
   * runtime does not start it again (seed 004: started twice, it does not run a transfer twice).
   */
  async lease(
    runtime: string,
    id: string,
    { instance }: LeaseInput,
    { carry }: Carrying = {},
  ): Promise<LeaseView> {
    if (!isTransferId(id)) throw notFound(id)
    return this.lifecycle.run({ kind: 'lease', id, runtime, instance }, { carry })
  }

  /**
   * Reports spend by the claiming runtime, idempotent by key. Spend and the insolvency flip
   * commit together; the flip happens exactly once; the answer tells the runtime to stop.
   */
  async usage(
    runtime: string,
    id: string,
    body: UsageInput,
    { carry }: Carrying = {},
  ): Promise<UsageView> {
    if (!isTransferId(id)) throw notFound(id)
    // Two reports raced on one key (another instance): the loser rolled back; its re-run finds
    // the winner's report.
    return this.lifecycle.run(
      {
        kind: 'usage',
        id,
        runtime,
        key: body.idempotencyKey,
        amount: body.amountMicros,
      },
      { rerunOnUniqueViolation: true, carry },
    )
  }

  /** Terminates a transfer in any state (the orchestrator); terminating it again is answered. */
  async terminate(id: string, body: TerminateInput = {}): Promise<TransferView> {
    if (!isTransferId(id)) throw notFound(id)
    return this.lifecycle.run({ kind: 'terminate', id, note: body.reason })
  }

  /** Mints a transfer token (the orchestrator only; never an MCP tool). */
  async mint(id: string, body: MintTokenInput): Promise<MintedTokenView> {
    if (!isTransferId(id)) throw notFound(id)
    const row = await store.findTransfer(this.deps.database.db, id)
    if (!row) throw notFound(id)
    const params =
      body.scope === 'provision'
        ? {
            tier: body.tier,
            budgetMicros: body.budgetMicros,
            rateMicrosPerSecond: body.rateMicrosPerSecond,
          }
        : {}
    if (body.scope === 'provision') this.assertTier(body)
    const now = this.deps.clock.now()
    const expiresAt = now + (body.ttlSeconds ? body.ttlSeconds * 1000 : this.deps.config.tokenTtlMs)
    const jti = newJti()
    const token = mintToken(this.deps.keyring, {
      tid: id,
      scope: body.scope,
      ...params,
      exp: Math.floor(expiresAt / 1000),
      jti,
    } as Parameters<typeof mintToken>[1])
    return {
      token,
      transferId: id,
      scope: body.scope,
      kid: this.deps.keyring.current.kid,
      jti,
      expiresAt: iso(Math.floor(expiresAt / 1000) * 1000),
    }
  }

  /**
   * Waits up to `seconds` (clamped) for the transfer's version to pass `seen` or for it to
   * end; an event is a hint to re-read, the database is the truth. Waiters of one caller on one
   * transfer share each read, and each read checks first that the caller is still admitted, so
   * a suspension ends the wait with the refusal a new request would get, never with data.
   */
  async wait(
    caller: string,
    id: string,
    seconds: number,
    seen?: number,
    signal?: WaitSignal,
    address?: string,
    { carry }: Carrying = {},
  ): Promise<TransferWaitView> {
    const waitMs = Math.min(seconds, this.deps.config.maxWaitSeconds) * 1000
    if (!isTransferId(id)) throw notFound(id)
    const topics: [string, ...string[]] = [transferTopic(id)]
    if (caller !== OPERATOR) topics.push(principalTopic(caller))
    const data: TransferWaiter = { caller, id, seen, waitMs, carry }
    const { first, last } = await this.deps.waits.wait({
      key: `${transferTopic(id)} ${caller}`,
      topics,
      ...this.waitFns,
      data,
      address,
      signal,
    })
    return { ...last, changed: transferChanged(data, last, first) }
  }

  // The functions of every transfer wait, made once: a waiter is only its `TransferWaiter` record.
  private readonly waitFns = {
    read: async ({ caller, id, carry }: TransferWaiter) => {
      if (caller !== OPERATOR) await assertAdmitted(this.deps.database.db, caller)
      return this.get(caller, id, { carry })
    },
    view: (v: TransferView) => v,
    ready: (v: TransferView, first: TransferView, w: TransferWaiter) =>
      transferChanged(w, v, first) || v.state === 'terminated',
    // A pending expiry is a change too: wake when it falls due so the read writes it.
    timeoutMs: (first: TransferView, w: TransferWaiter) =>
      w.waitMs === 0
        ? 0
        : Math.max(
            1,
            Math.min(
              w.waitMs,
              first.expiresAt ? Date.parse(first.expiresAt) - this.deps.clock.now() + 5 : w.waitMs,
            ),
          ),
  }

  /**
   * The reaper: expires staged, provisioned and pushed transfers past their TTL and terminates
   * insolvent ones past their grace, each with its event. Every write is conditional, so many
   * instances running it at once terminate each transfer exactly once.
   */
  async reap(): Promise<number> {
    const due = await store.dueForReaping(this.deps.database.db, this.deps.clock.now())
    const done = await Promise.all([
      ...due.expired.map((row) => this.lifecycle.run({ kind: 'expire', id: row.id })),
      ...due.graceOver.map((row) => this.lifecycle.run({ kind: 'grace_over', id: row.id })),
    ])
    return done.filter(Boolean).length
  }

  /**
   * A token-gated move; a token used meanwhile by another instance (the unique use collides) is
   * refused as replayed.
   */
  private async tokenMove(
    m: Parameters<TransferLifecycle['run']>[0] & { kind: 'provision' | 'activate' },
    carry: Carrying['carry'],
  ): Promise<TransferView> {
    if (!isTransferId(m.id)) throw notFound(m.id)
    try {
      return await this.lifecycle.run(m, { carry })
    } catch (error) {
      if (this.deps.database.caps.isUniqueViolation(error)) {
        throw new BatonError('transfer_token_replayed', 'This transfer token was already used', {})
      }
      throw error
    }
  }

  private async visible(caller: string, id: string): Promise<TransferRow> {
    if (!isTransferId(id)) throw notFound(id)
    const row = await store.findTransfer(this.deps.database.db, id)
    // seed 004 fault: the dashboard showed every snapshot to anyone; strangers see nothing here.
    if (!row || (caller !== OPERATOR && caller !== row.owner && caller !== row.runtime)) {
      throw notFound(id)
    }
    return row
  }

  private assertTier(p: { tier: string; budgetMicros: number; rateMicrosPerSecond: number }) {
    const limits = this.deps.config.tiers[p.tier]
    if (!limits) throw this.unknownTier(p.tier)
    if (p.budgetMicros > limits.maxBudgetMicros) {
      throw new BatonError('tier_limit_exceeded', `Tier ${p.tier} allows a smaller budget`, {
        field: 'budgetMicros',
        limit: limits.maxBudgetMicros,
      })
    }
    if (p.rateMicrosPerSecond > limits.maxRateMicrosPerSecond) {
      throw new BatonError('tier_limit_exceeded', `Tier ${p.tier} allows a lower rate`, {
        field: 'rateMicrosPerSecond',
        limit: limits.maxRateMicrosPerSecond,
      })
    }
  }

  private unknownTier(tier: string): BatonError {
    return new BatonError('tier_unknown', `No tier ${JSON.stringify(tier)}`, {
      tiers: Object.keys(this.deps.config.tiers),
    })
  }

  private assertRuntimeAllowed(principal: string): void {
    const allowed = this.deps.config.runtimes
    if (allowed && !allowed.includes(principal)) {
      throw new BatonError('transfer_forbidden', 'This principal may not run transfers')
    }
  }

  /** How many transfers are in each state, for the operator's overview. */
  async operatorCounts(): Promise<Record<string, number>> {
    return store.countByState(this.deps.database.db)
  }

  /** Transfer events per minute over the last hour (`ACTIVITY`), oldest first. */
  async operatorActivity(): Promise<number[]> {
    return activitySeries(this.deps.database.db, 'transfer_events', 'at', this.deps.clock.now())
  }

  /** Transfers for the operator, most recently changed first, optionally in one state. */
  async operatorList(state?: string) {
    return (await store.listForOperator(this.deps.database.db, state)).map(toOperatorView)
  }

  /** One transfer with its ordered events and recent usage reports; never the snapshot. */
  async operatorRead(id: string) {
    const db = this.deps.database.db
    const row = await store.findTransfer(db, id)
    if (!row) return undefined
    const [events, usage] = await Promise.all([
      store.eventsForOperator(db, id),
      store.usageForOperator(db, id),
    ])
    return {
      ...toOperatorView(row),
      events: events.map((e) => ({
        seq: e.seq,
        type: e.type,
        from: e.from_state,
        to: e.to_state,
        actor: e.actor,
        at: isoOrNull(e.at),
        data: parseStored(e.data),
      })),
      usage: usage.map((u) => ({
        amountMicros: num(u.amount_micros),
        spentAfter: num(u.spent_after),
        reporter: u.reporter,
        at: isoOrNull(u.at),
      })),
    }
  }

  /** A transfer's snapshot content, only when the operator deliberately opens it. */
  async operatorSnapshot(id: string) {
    const content = await store.readSnapshot(this.deps.database.db, id)
    return content === undefined ? undefined : { id, snapshot: parseStored(content) }
  }
}

/** A transfer as the operator sees it: every column but its secrets, times as text. */
function toOperatorView(t: TransferRow) {
  return {
    id: t.id,
    owner: t.owner,
    state: t.state,
    version: t.version,
    tier: t.tier,
    runtime: t.runtime,
    budgetMicros: t.budget_micros,
    rateMicros: t.rate_micros,
    spentMicros: num(t.spent_micros),
    snapshotBytes: num(t.snapshot_bytes),
    checksum: t.checksum,
    leaseEndsAt: isoOrNull(t.lease_ends_at),
    createdAt: isoOrNull(t.created_at),
    updatedAt: isoOrNull(t.updated_at),
    expiresAt: isoOrNull(t.expires_at),
    graceEndsAt: isoOrNull(t.grace_ends_at),
    endReason: t.end_reason,
  }
}
