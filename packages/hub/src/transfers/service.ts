import { createHash, randomBytes } from 'node:crypto'
import {
  ActivateInput,
  BatonError,
  ClaimNextInput,
  type CreatedTransferView,
  CreateTransferInput,
  canonicalJson,
  EXPIRING_STATES,
  LeaseInput,
  type LeaseView,
  type MintedTokenView,
  MintTokenInput,
  ProvisionInput,
  PushInput,
  type Snapshot,
  type SnapshotView,
  TerminateInput,
  type TransferEventView,
  type TransferState,
  type TransferView,
  type TransferWaitView,
  UsageInput,
  type UsageView,
} from '@baton/protocol'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { TransferConfig } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { WaitRegistry } from '../events/wait.js'
import { assertAdmitted, principalTopic } from '../identity/admission.js'
import type { Database } from '../store/database.js'
import type { TransferEventRow, TransferRow } from '../store/schema.js'
import type { Tx, WriteBatcher } from '../store/transaction.js'
import { parseInput } from '../validation.js'
import { assertNoSecrets } from './secrets.js'
import * as store from './store.js'
import { mintToken, newJti, type TokenKeyring, verifyToken } from './tokens.js'

/** The actor name of the operator (admin token); principals are did:key URIs, never this. */
export const OPERATOR = 'operator'
/** The actor name of the hub itself (the reaper). */
const HUB = 'hub'

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

const iso = (ms: number) => new Date(ms).toISOString()
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms))

/** The event topic of one transfer. */
export const transferTopic = (id: string) => `transfer:${id}`

/** `sha-256:` and the base64url SHA-256 of the RFC 8785 canonical JSON of a snapshot (seed 004). */
export function checksumOfCanonical(canonical: string): string {
  return `sha-256:${createHash('sha256').update(canonical, 'utf8').digest('base64url')}`
}

const isTransferId = (id: string) => /^tr_[A-Za-z0-9_-]{22}$/.test(id)
const newTransferId = () => `tr_${randomBytes(16).toString('base64url')}`

/** A write's outcome: a value to answer, or an error to throw once its own writes commit. */
type Outcome<T> = { ok: true; value: T } | { ok: false; error: BatonError }

function notFound(id: string): BatonError {
  return new BatonError('transfer_not_found', `No transfer ${JSON.stringify(id)} visible to you`)
}

/** The access rule of a token-gated move: the token is the authority, so any caller may try. */
const anyHolder = () => undefined

/**
 * The access rule of the runtime's own writes (push, lease, usage): the claiming runtime acts;
 * the owner, who sees the transfer, is refused; anyone else is answered like a missing id.
 */
function runtimeOnly(runtime: string) {
  return (row: TransferRow): BatonError | undefined => {
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
}

function conflict(row: TransferRow, wanted: string): BatonError {
  return new BatonError(
    'transfer_state_conflict',
    `Transfer is ${row.state}; ${wanted} is not possible from there`,
    { state: row.state, version: row.version, endReason: row.end_reason },
  )
}

function expiredError(row: TransferRow): BatonError {
  return new BatonError('transfer_expired', `Transfer ${row.id} expired in state ${row.state}`, {
    state: 'terminated',
    expiredFrom: row.state,
    expiredAt: isoOrNull(row.expires_at),
  })
}

const isDue = (row: TransferRow, now: number) =>
  (EXPIRING_STATES as string[]).includes(row.state) &&
  row.expires_at !== null &&
  row.expires_at <= now

/**
 * Session transfer (seed 004): snapshot, provision under a budget, claim, push, activate, meter,
 * insolvency and reaping, with orchestrator-only single-use tokens. Every move is one conditional
 * write with its event in the same transaction. HTTP, MCP and the CLI call these same functions.
 */
export class TransferService {
  constructor(private readonly deps: TransferDeps) {}

  /** How many transfers are stored in each state, for the metrics. */
  countByState(): Promise<Record<string, number>> {
    return store.countByState(this.deps.database.db)
  }

  /** Snapshots a session as `owner`; a repeat with the same key and snapshot answers the first. */
  async create(owner: string, input: unknown, headerKey?: string): Promise<CreatedTransferView> {
    const body = parseSnapshotInput(input)
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
    const run = () =>
      this.deps.batcher.run(async (tx): Promise<CreatedTransferView> => {
        const now = this.deps.clock.now()
        if (key) {
          const prior = await store.findByOwnerKey(tx.db, owner, key)
          if (prior) {
            if (prior.checksum !== checksum) {
              throw new BatonError(
                'idempotency_conflict',
                'This idempotency key already staged a different snapshot',
                { transferId: prior.id },
              )
            }
            return { ...(await this.viewOf(tx.db, prior)), repeated: true }
          }
        }
        const row: TransferRow = {
          id: newTransferId(),
          owner,
          state: 'staged',
          version: 1,
          idempotency_key: key ?? null,
          checksum,
          snapshot_bytes: bytes,
          tier: null,
          budget_micros: null,
          rate_micros: null,
          spent_micros: 0,
          runtime: null,
          lease_instance: null,
          lease_ends_at: null,
          created_at: now,
          updated_at: now,
          expires_at: now + this.deps.config.ttlMs,
          grace_ends_at: null,
          end_reason: null,
        }
        await store.insertTransfer(tx.db, row, canonical)
        const event = await this.event(tx, row, {
          seq: 1,
          type: 'staged',
          from: null,
          to: 'staged',
          actor: owner,
          at: now,
          data: { checksum, snapshotBytes: bytes },
        })
        return { ...toView(row, [event]), repeated: false }
      })
    try {
      return await run()
    } catch (error) {
      // Two creates raced on one key: the loser rolled back; now it finds the winner.
      if (key && this.deps.database.caps.isUniqueViolation(error)) return run()
      throw error
    }
  }

  /** The transfer, its budget and its ordered events, for its owner, its runtime or the operator. */
  async get(caller: string, id: string): Promise<TransferView> {
    let row = await this.visible(caller, id)
    if (isDue(row, this.deps.clock.now())) {
      // A read of an expired transfer answers it as expired at once, with its event written.
      await this.deps.batcher.run((tx) => this.expireIn(tx, id, this.deps.clock.now()))
      row = await this.visible(caller, id)
    }
    return this.viewOf(this.deps.database.db, row)
  }

  /** Transfers the caller owns or runs, newest first (without their event logs). */
  async list(
    caller: string,
    query: Record<string, unknown>,
  ): Promise<{ transfers: TransferView[] }> {
    const role = query.role === 'runtime' ? 'runtime' : 'owner'
    const state = typeof query.state === 'string' ? query.state : undefined
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
  async provision(caller: string, id: string, input: unknown): Promise<TransferView> {
    const body = parseInput(ProvisionInput, input)
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
    return this.tokenMove(id, token.jti, 'provision', (tx, row, now) =>
      this.move(tx, row, {
        from: 'staged',
        to: 'provisioned',
        type: 'provisioned',
        actor: caller,
        now,
        patch: {
          tier: body.tier,
          budget_micros: body.budgetMicros,
          rate_micros: body.rateMicrosPerSecond,
          expires_at: now + this.deps.config.ttlMs,
        },
        data: { ...params, jti: token.jti },
      }),
    )
  }

  /** pushed → active with an activate token: the one irreversible step (seed 004). */
  async activate(caller: string, id: string, input: unknown): Promise<TransferView> {
    const body = parseInput(ActivateInput, input)
    const token = verifyToken(this.deps.keyring, body.token, {
      transferId: id,
      scope: 'activate',
      now: this.deps.clock.now(),
    })
    return this.tokenMove(id, token.jti, 'activate', (tx, row, now) =>
      this.move(tx, row, {
        from: 'pushed',
        to: 'active',
        type: 'active',
        actor: caller,
        now,
        patch: { expires_at: null },
        data: { jti: token.jti },
      }),
    )
  }

  /** A runtime claims one provisioned transfer; claiming it again is answered, not refused. */
  async claim(runtime: string, id: string): Promise<TransferView> {
    this.assertRuntimeAllowed(runtime)
    if (!isTransferId(id)) throw notFound(id)
    // Only a claimable transfer is visible to a runtime that neither owns nor holds it: one
    // that is not, or that another runtime won meanwhile, is answered like a missing id.
    const hidden = (row: TransferRow) => row.owner !== runtime && row.runtime !== runtime
    const claimAccess = (row: TransferRow, now: number) =>
      hidden(row) && (row.runtime !== null || row.state !== 'provisioned' || isDue(row, now))
        ? notFound(id)
        : undefined
    return this.write(id, claimAccess, async (tx, row, now) => {
      if (row.runtime === runtime && row.state !== 'terminated') {
        return { ok: true, value: await this.viewOf(tx.db, row) }
      }
      if (row.runtime !== null) {
        return { ok: false, error: new BatonError('transfer_claimed', 'Another runtime holds it') }
      }
      if (row.state !== 'provisioned') return { ok: false, error: conflict(row, 'claim') }
      const version = await store.casClaim(tx.db, id, runtime, now)
      if (version === undefined) {
        const fresh = (await store.findTransfer(tx.db, id))!
        return {
          ok: false,
          error: hidden(fresh)
            ? notFound(id)
            : fresh.runtime
              ? new BatonError('transfer_claimed', 'Another runtime holds it')
              : conflict(fresh, 'claim'),
        }
      }
      const after = { ...row, runtime, version, updated_at: now }
      await this.event(tx, after, {
        seq: version,
        type: 'claimed',
        from: row.state as TransferState,
        to: row.state as TransferState,
        actor: runtime,
        at: now,
        data: { tier: row.tier },
      })
      return { ok: true, value: await this.viewOf(tx.db, after) }
    })
  }

  /** Claims the oldest provisioned, unclaimed transfer of a tier; null when there is none. */
  async claimNext(runtime: string, input: unknown): Promise<{ transfer: TransferView | null }> {
    const { tier } = parseInput(ClaimNextInput, input)
    this.assertRuntimeAllowed(runtime)
    if (!this.deps.config.tiers[tier]) throw this.unknownTier(tier)
    for (let round = 0; round < 3; round++) {
      const ids = await store.claimable(this.deps.database.db, tier, this.deps.clock.now())
      if (ids.length === 0) break
      for (const id of ids) {
        try {
          return { transfer: await this.claim(runtime, id) }
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
  async push(runtime: string, id: string, input: unknown): Promise<TransferView> {
    const body = parseInput(PushInput, input)
    return this.write(id, runtimeOnly(runtime), async (tx, row, now) => {
      if (row.state !== 'provisioned') return { ok: false, error: conflict(row, 'push') }
      const content = await store.readSnapshot(tx.db, id)
      const hubChecksum = content === undefined ? '' : checksumOfCanonical(content)
      if (hubChecksum !== row.checksum || body.checksum !== row.checksum) {
        const version = await store.bumpVersion(tx.db, id, now)
        const data = { expected: row.checksum, hub: hubChecksum, runtime: body.checksum }
        await this.event(tx, row, {
          seq: version,
          type: 'checksum_mismatch',
          from: 'provisioned',
          to: 'provisioned',
          actor: runtime,
          at: now,
          data,
        })
        this.deps.log.warn({ transferId: id, ...data }, 'transfer push refused: checksum mismatch')
        return {
          ok: false,
          error: new BatonError('checksum_mismatch', 'The snapshot checksums differ', data),
        }
      }
      return this.move(tx, row, {
        from: 'provisioned',
        to: 'pushed',
        type: 'pushed',
        actor: runtime,
        now,
        patch: { expires_at: now + this.deps.config.ttlMs },
        data: { checksum: row.checksum },
      })
    })
  }

  /**
   * Takes or renews the lease to run an active transfer's agent, so a second process of the same
   * runtime does not start it again (seed 004: started twice, it does not run a transfer twice).
   */
  async lease(runtime: string, id: string, input: unknown): Promise<LeaseView> {
    const { instance } = parseInput(LeaseInput, input)
    return this.write(id, runtimeOnly(runtime), async (tx, row, now) => {
      if (row.state !== 'active') return { ok: false, error: conflict(row, 'lease') }
      const until = now + this.deps.config.leaseMs
      const held = await store.casLease(tx.db, { id, runtime, instance, now, until })
      if (!held) {
        return {
          ok: false,
          error: new BatonError('transfer_lease_held', 'Another process runs this transfer', {
            leaseEndsAt: isoOrNull(row.lease_ends_at),
          }),
        }
      }
      const renewed = row.lease_instance === instance
      if (!renewed) {
        const version = await store.bumpVersion(tx.db, id, now)
        await this.event(tx, row, {
          seq: version,
          type: row.lease_instance === null ? 'started' : 'restarted',
          from: 'active',
          to: 'active',
          actor: runtime,
          at: now,
          data: { instance },
        })
      }
      return { ok: true, value: { transferId: id, instance, leaseEndsAt: iso(until), renewed } }
    })
  }

  /**
   * Reports spend by the claiming runtime, idempotent by key. Spend and the insolvency flip
   * commit together; the flip happens exactly once; the answer tells the runtime to stop.
   */
  async usage(runtime: string, id: string, input: unknown): Promise<UsageView> {
    const body = parseInput(UsageInput, input)
    const run = () =>
      this.write(id, runtimeOnly(runtime), async (tx, row, now) => {
        const prior = await store.findUsage(tx.db, id, body.idempotencyKey)
        if (prior) {
          if (prior.amount_micros !== body.amountMicros) {
            return {
              ok: false,
              error: new BatonError(
                'idempotency_conflict',
                'This usage key was already reported with another amount',
                { amountMicros: prior.amount_micros },
              ),
            }
          }
          return { ok: true, value: toUsage(row, true) }
        }
        const after = await store.addSpend(tx.db, { id, runtime, amount: body.amountMicros, now })
        if (!after) return { ok: false, error: conflict(row, 'report usage') }
        await store.insertUsage(tx.db, {
          transfer_id: id,
          idempotency_key: body.idempotencyKey,
          amount_micros: body.amountMicros,
          spent_after: after.spent_micros,
          reporter: runtime,
          at: now,
        })
        // Not an event of the log (usage goes to its ledger), but a hint for live views.
        tx.afterCommit(() =>
          this.deps.bus.publish({
            topic: transferTopic(id),
            type: 'transfer.usage',
            at: now,
            data: { transferId: id, spentMicros: after.spent_micros },
          }),
        )
        let current = after
        if (after.state === 'active' && after.spent_micros >= (after.budget_micros ?? 0)) {
          const graceEndsAt = now + this.deps.config.graceMs
          const version = await store.casInsolvent(tx.db, { id, now, graceEndsAt })
          if (version !== undefined) {
            current = { ...after, state: 'insolvent', version, grace_ends_at: graceEndsAt }
            await this.event(tx, current, {
              seq: version,
              type: 'insolvent',
              from: 'active',
              to: 'insolvent',
              actor: runtime,
              at: now,
              data: {
                spentMicros: after.spent_micros,
                budgetMicros: after.budget_micros,
                graceEndsAt: iso(graceEndsAt),
              },
            })
          }
        }
        return { ok: true, value: toUsage(current, false) }
      })
    try {
      return await run()
    } catch (error) {
      // Two reports raced on one key: the loser rolled back; now it finds the winner's report.
      if (this.deps.database.caps.isUniqueViolation(error)) return run()
      throw error
    }
  }

  /** Terminates a transfer in any state (the orchestrator); terminating it again is answered. */
  async terminate(id: string, input: unknown): Promise<TransferView> {
    const body = parseInput(TerminateInput, input ?? {})
    if (!isTransferId(id)) throw notFound(id)
    const outcome = await this.deps.batcher.run(async (tx): Promise<TransferView> => {
      const now = this.deps.clock.now()
      const row = await store.findTransfer(tx.db, id)
      if (!row) throw notFound(id)
      if (row.state === 'terminated') return this.viewOf(tx.db, row)
      const version = await store.casMove(tx.db, {
        id,
        from: [row.state],
        to: 'terminated',
        now,
        guard: 'none',
        patch: { end_reason: 'orchestrator', lease_instance: null },
      })
      if (version === undefined) throw conflict(row, 'terminate')
      const after: TransferRow = {
        ...row,
        state: 'terminated',
        version,
        end_reason: 'orchestrator',
      }
      await this.event(tx, after, {
        seq: version,
        type: 'terminated',
        from: row.state as TransferState,
        to: 'terminated',
        actor: OPERATOR,
        at: now,
        data: { reason: 'orchestrator', ...(body.reason ? { note: body.reason } : {}) },
      })
      return this.viewOf(tx.db, after)
    })
    return outcome
  }

  /** Mints a transfer token (the orchestrator only; never an MCP tool). */
  async mint(id: string, input: unknown): Promise<MintedTokenView> {
    const body = parseInput(MintTokenInput, input)
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
    if (body.scope === 'provision') {
      for (const field of ['tier', 'budgetMicros', 'rateMicrosPerSecond'] as const) {
        if (body[field] === undefined) {
          throw new BatonError('invalid_request', `A provision token must bind ${field}`, { field })
        }
      }
      this.assertTier(params as { tier: string; budgetMicros: number; rateMicrosPerSecond: number })
    } else {
      for (const field of ['tier', 'budgetMicros', 'rateMicrosPerSecond'] as const) {
        if (body[field] !== undefined) {
          throw new BatonError('invalid_request', `An activate token binds no ${field}`, { field })
        }
      }
    }
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
   * Waits up to `seconds` (clamped) for the transfer's version to pass `seenVersion` or for it to
   * end; an event is a hint to re-read, the database is the truth. Waiters of one caller on one
   * transfer share each read, and each read checks first that the caller is still admitted, so
   * a suspension ends the wait with the refusal a new request would get, never with data.
   */
  async wait(
    caller: string,
    id: string,
    seconds: unknown,
    seenVersion?: unknown,
    signal?: AbortSignal,
    address?: string,
  ): Promise<TransferWaitView> {
    const secs = wholeNumber(seconds ?? 0, 'seconds')
    const seen = seenVersion === undefined ? undefined : wholeNumber(seenVersion, 'version')
    const waitMs = Math.min(secs, this.deps.config.maxWaitSeconds) * 1000
    if (!isTransferId(id)) throw notFound(id)
    const changed = (v: TransferView, first: TransferView) => v.version > (seen ?? first.version)
    const topics: [string, ...string[]] = [transferTopic(id)]
    if (caller !== OPERATOR) topics.push(principalTopic(caller))
    const { first, last } = await this.deps.waits.wait({
      key: `${transferTopic(id)} ${caller}`,
      topics,
      read: async () => {
        if (caller !== OPERATOR) await assertAdmitted(this.deps.database.db, caller)
        return this.get(caller, id)
      },
      view: (v) => v,
      ready: (v, first) => changed(v, first) || v.state === 'terminated',
      // A pending expiry is a change too: wake when it falls due so the read writes it.
      timeoutMs: (first) =>
        waitMs === 0
          ? 0
          : Math.max(
              1,
              Math.min(
                waitMs,
                first.expiresAt ? Date.parse(first.expiresAt) - this.deps.clock.now() + 5 : waitMs,
              ),
            ),
      address,
      signal,
    })
    return { ...last, changed: changed(last, first) }
  }

  /**
   * The reaper: expires staged, provisioned and pushed transfers past their TTL and terminates
   * insolvent ones past their grace, each with its event. Every write is conditional, so many
   * instances running it at once terminate each transfer exactly once.
   */
  async reap(): Promise<number> {
    const now = this.deps.clock.now()
    const due = await store.dueForReaping(this.deps.database.db, now)
    let count = 0
    for (const row of due.expired) {
      if (await this.deps.batcher.run((tx) => this.expireIn(tx, row.id, now))) count++
    }
    for (const row of due.graceOver) {
      const done = await this.deps.batcher.run(async (tx) => {
        const version = await store.casMove(tx.db, {
          id: row.id,
          from: ['insolvent'],
          to: 'terminated',
          now,
          guard: 'grace_over',
          patch: { end_reason: 'insolvent', lease_instance: null },
        })
        if (version === undefined) return false
        await this.event(
          tx,
          { ...row, state: 'terminated', version },
          {
            seq: version,
            type: 'terminated',
            from: 'insolvent',
            to: 'terminated',
            actor: HUB,
            at: now,
            data: { reason: 'insolvent', spentMicros: row.spent_micros },
          },
        )
        return true
      })
      if (done) count++
    }
    return count
  }

  private async expireIn(tx: Tx, id: string, now: number): Promise<boolean> {
    const row = await store.findTransfer(tx.db, id)
    if (!row || !isDue(row, now)) return false
    const version = await store.casMove(tx.db, {
      id,
      from: [row.state],
      to: 'terminated',
      now,
      guard: 'expired',
      patch: { end_reason: 'expired' },
    })
    if (version === undefined) return false
    // seed 004 fault: expiry logged no event; here it is one, in the same transaction.
    await this.event(
      tx,
      { ...row, state: 'terminated', version },
      {
        seq: version,
        type: 'expired',
        from: row.state as TransferState,
        to: 'terminated',
        actor: HUB,
        at: now,
        data: { reason: 'expired', expiresAt: isoOrNull(row.expires_at) },
      },
    )
    return true
  }

  /**
   * Runs a write on one transfer: applies `access` (who may act on it) before anything else,
   * expires it first when its TTL passed (committing that, then answering `transfer_expired`),
   * else runs `fn`. A caller who may not see the transfer is answered `transfer_not_found`,
   * exactly as for an id that does not exist, so no state or expiry tells that it does.
   */
  private async write<T>(
    id: string,
    access: (row: TransferRow, now: number) => BatonError | undefined,
    fn: (tx: Tx, row: TransferRow, now: number) => Promise<Outcome<T>>,
  ): Promise<T> {
    if (!isTransferId(id)) throw notFound(id)
    const outcome = await this.deps.batcher.run(async (tx): Promise<Outcome<T>> => {
      const now = this.deps.clock.now()
      const row = await store.findTransfer(tx.db, id)
      if (!row) throw notFound(id)
      const refused = access(row, now)
      if (refused) throw refused
      if (isDue(row, now)) {
        await this.expireIn(tx, id, now)
        return { ok: false, error: expiredError(row) }
      }
      return fn(tx, row, now)
    })
    if (!outcome.ok) throw outcome.error
    return outcome.value
  }

  /**
   * A token-gated move: refuses a used token before anything else, runs the move, and records the
   * token's use in the same transaction, so a failed move leaves the token unused (seed 004 fault:
   * tokens were burned before the state change).
   */
  private async tokenMove(
    id: string,
    jti: string,
    scope: string,
    fn: (tx: Tx, row: TransferRow, now: number) => Promise<Outcome<TransferView>>,
  ): Promise<TransferView> {
    const replayed = (row?: TransferRow) =>
      new BatonError('transfer_token_replayed', 'This transfer token was already used', {
        ...(row ? { state: row.state, version: row.version } : {}),
      })
    try {
      return await this.write(id, anyHolder, async (tx, row, now) => {
        if (await store.tokenUsed(tx.db, jti)) return { ok: false, error: replayed(row) }
        const outcome = await fn(tx, row, now)
        if (outcome.ok) await store.useToken(tx.db, { jti, transfer_id: id, scope, used_at: now })
        return outcome
      })
    } catch (error) {
      if (this.deps.database.caps.isUniqueViolation(error)) throw replayed()
      throw error
    }
  }

  private async move(
    tx: Tx,
    row: TransferRow,
    m: {
      from: TransferState
      to: TransferState
      type: string
      actor: string
      now: number
      patch: Partial<TransferRow>
      data: Record<string, unknown>
    },
  ): Promise<Outcome<TransferView>> {
    if (row.state !== m.from) return { ok: false, error: conflict(row, m.type) }
    // seed 004: one conditional write; a concurrent move or expiry makes it match nothing.
    const version = await store.casMove(tx.db, {
      id: row.id,
      from: [m.from],
      to: m.to,
      now: m.now,
      guard: 'live',
      patch: m.patch,
    })
    if (version === undefined) {
      const fresh = await store.findTransfer(tx.db, row.id)
      if (fresh && isDue(fresh, m.now)) return { ok: false, error: expiredError(fresh) }
      return { ok: false, error: conflict(fresh ?? row, m.type) }
    }
    const after: TransferRow = { ...row, ...m.patch, state: m.to, version, updated_at: m.now }
    await this.event(tx, after, {
      seq: version,
      type: m.type,
      from: m.from,
      to: m.to,
      actor: m.actor,
      at: m.now,
      data: m.data,
    })
    return { ok: true, value: await this.viewOf(tx.db, after) }
  }

  private async event(
    tx: Tx,
    row: TransferRow,
    e: {
      seq: number
      type: string
      from: TransferState | null
      to: TransferState
      actor: string
      at: number
      data: Record<string, unknown>
    },
  ): Promise<TransferEventRow> {
    const event: TransferEventRow = {
      transfer_id: row.id,
      seq: e.seq,
      type: e.type,
      from_state: e.from,
      to_state: e.to,
      actor: e.actor,
      data: JSON.stringify(e.data),
      at: e.at,
    }
    await store.insertEvent(tx.db, event)
    tx.afterCommit(() =>
      this.deps.bus.publish({
        topic: transferTopic(row.id),
        type: `transfer.${e.type}`,
        at: e.at,
        data: { transferId: row.id, state: e.to, version: e.seq },
      }),
    )
    return event
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

  private async viewOf(db: Tx['db'], row: TransferRow): Promise<TransferView> {
    return toView(row, await store.listEvents(db, row.id))
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
}

function parseSnapshotInput(input: unknown): CreateTransferInput {
  const result = CreateTransferInput.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  if (issue.path[0] === 'snapshot' && issue.path.length > 0) {
    const field = issue.path.map(String).join('.')
    throw new BatonError('snapshot_invalid', `Invalid ${field}: ${issue.message}`, { field })
  }
  return parseInput(CreateTransferInput, input)
}

function wholeNumber(value: unknown, field: string): number {
  const n = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new BatonError('invalid_request', `${field} must be a whole number of at least 0`, {
      field,
    })
  }
  return n
}

function toUsage(row: TransferRow, repeated: boolean): UsageView {
  const budget = row.budget_micros ?? 0
  return {
    transferId: row.id,
    state: row.state as TransferState,
    spentMicros: row.spent_micros,
    budgetMicros: budget,
    remainingMicros: Math.max(0, budget - row.spent_micros),
    stop: row.state !== 'active',
    graceEndsAt: isoOrNull(row.grace_ends_at),
    repeated,
  }
}

function toEventView(e: TransferEventRow): TransferEventView {
  return {
    seq: e.seq,
    type: e.type,
    from: e.from_state as TransferState | null,
    to: e.to_state as TransferState,
    actor: e.actor,
    at: iso(e.at),
    data: JSON.parse(e.data) as Record<string, unknown>,
  }
}

function toView(row: TransferRow, events: TransferEventRow[]): TransferView {
  return {
    transferId: row.id,
    state: row.state as TransferState,
    version: row.version,
    owner: row.owner,
    runtime: row.runtime,
    tier: row.tier,
    budgetMicros: row.budget_micros,
    rateMicrosPerSecond: row.rate_micros,
    spentMicros: row.spent_micros,
    remainingMicros:
      row.budget_micros === null ? null : Math.max(0, row.budget_micros - row.spent_micros),
    checksum: row.checksum,
    snapshotBytes: row.snapshot_bytes,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    expiresAt: (EXPIRING_STATES as string[]).includes(row.state) ? isoOrNull(row.expires_at) : null,
    graceEndsAt: isoOrNull(row.grace_ends_at),
    endReason: row.end_reason,
    events: events.map(toEventView),
  }
}
