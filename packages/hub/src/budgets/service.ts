import { randomBytes } from 'node:crypto'
import {
  BatonError,
  BUDGET_CROSSING_TYPE,
  BUDGET_MEMBER,
  type BudgetChainView,
  type BudgetCrossing,
  type BudgetView,
  canonicalJson,
  type HoldRef,
  type HoldView,
  OfferBudget,
  type ReportersInput,
  type ReserveInput,
  type SettleInput,
  type SpendInput,
  type SpendView,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import type { BudgetEntryRow, BudgetHoldRow, BudgetRow } from '../store/schema.js'
import type { BatchGroup, Carrying, GroupOutcome, Tx, WriteBatcher } from '../store/transaction.js'
import * as store from './store.js'

/** The limits of budgets, each an operator setting (docs/security.md). */
export interface BudgetConfig {
  /** How long a hold lasts unsettled when the reserve names no ttlSeconds. */
  holdTtlMs: number
  /** The longest hold; a longer ttlSeconds is clamped to it. */
  maxHoldTtlMs: number
  /** Open sub-delegations one budget may hold reservations for. */
  maxChildren: number
  /** Budgets one root's tree may hold over its life, itself included (what a read walks). */
  maxTree: number
  /** Open holds on one budget. */
  maxHolds: number
  /** Open holds of one principal over every budget. */
  maxHoldsPerPrincipal: number
  /** Reports (charged and refused) one budget keeps. */
  maxEntries: number
  /** Reporters one delegate may name on one budget. */
  maxReporters: number
  /** How often holds and budgets past their expiry are released. */
  reapIntervalMs: number
}

/**
 * Where the hub delivers a budget crossing to the delegator: its hop inbox, with a hub-signed
 * receipt, in the caller's transaction (the hop witness provides it).
 */
export interface CrossingNotices {
  deliver(
    tx: Tx,
    d: { recipient: string; offer: string; element: string },
    now: number,
  ): Promise<{ receipt: string; sequence: number }>
}

/** What the budget service needs from the rest of the hub. */
export interface BudgetDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: BudgetConfig
  notices: CrossingNotices
}

/** The members of a verified offer a budget is opened from. */
export interface BudgetedOffer {
  digest: string
  claims: { iss: string; aud: string; exp: number; prev?: string } & Record<string, unknown>
  /** The offer's references as the hop witness checked them. */
  refs: readonly { ref: Record<string, unknown>; outcome: string }[]
}

/** A reserve queued for its batch, its caller checked against the budget it names. */
interface PendingReserve {
  caller: string
  hop: string
  key: string
  amount: number
  ttlMs: number
}

/** A spend report queued for its batch, its caller checked against the budget it names. */
interface PendingSpend {
  caller: string
  hop: string
  key: string
  amount: number
  note: string | null
  /** The hops above its budget, whose spent the amount counts in. */
  ancestors: string[]
}

/** A settle queued for its batch, its caller checked against the hold it names. */
interface PendingSettle {
  caller: string
  hop: string
  holdId: string
  amount: number
  /** The key its refusal is recorded under: the hold and the amount. */
  refusedKey: string
  /** The hops above its budget, whose spent a settled amount counts in. */
  ancestors: string[]
}

/** The event topic of one hop's budget. */
export const budgetTopic = (hop: string) => `budget:${hop}`

/** The deepest a budget sits below its root: a chain holds at most 16 offers (seed 003). */
const MAX_DEPTH = 15
/** Holds and budgets released per reaper pass, each in its own transaction. */
const REAP_BATCH = 200
/** Latest reports shown beside each ledger on the operator's pages. */
const OPERATOR_ENTRIES = 20
/** The hop states that end a hop, and so close its budget (seed 003). */
const ENDING = new Set(['completed', 'failed', 'canceled', 'rejected'])

const iso = (ms: number) => new Date(ms).toISOString()
const newHoldId = () => `bh_${randomBytes(16).toString('base64url')}`

/** A report refused inside its transaction because it would cross; recorded by a second one. */
class Crossing extends Error {
  constructor(
    readonly budget: BudgetRow,
    readonly kind: BudgetCrossing['kind'],
    readonly key: string,
    readonly requested: number,
    readonly remaining: number,
  ) {
    super('budget crossing')
  }
}

/**
 * Budgets on delegations (issue 28): one ledger per hop whose offer carries a budget, reserved
 * from its parent's remaining when the sub-offer is delivered, charged by its delegate's spend
 * reports and holds (each counted in every ancestor), refused before it would cross (recorded and
 * delivered to the delegator with a hub-signed receipt), and closed, releasing what was unspent to
 * its parent, in the transaction that ends its hop or at its expiry. Every change is decided
 * under the ledger's lock (a conditional write, or reports that arrive together decided in order
 * against the ledger as locked), so many instances on one database never overshoot.
 */
export class BudgetService {
  constructor(private readonly deps: BudgetDeps) {}

  /**
   * Opens the budget an offer carries, in the transaction that delivers it: a root budget, or one
   * reserved from the budget of the hop its `prev` names (whose delegate must be the offer's
   * `iss`). Refuses, reserving nothing, when the parent has less left than it asks.
   */
  async open(tx: Tx, offer: BudgetedOffer, now: number): Promise<void> {
    const member = offer.claims[BUDGET_MEMBER]
    if (member === undefined) return
    const parsed = OfferBudget.safeParse(member)
    if (!parsed.success) {
      const path = parsed.error.issues[0]?.path.join('.')
      throw new BatonError('budget_invalid', 'The offer’s budget member is malformed', {
        field: path ? `${BUDGET_MEMBER}.${path}` : BUDGET_MEMBER,
      })
    }
    const budget = parsed.data
    // issue 28: a budget expires no later than the offer that carries it.
    if (budget.exp !== undefined && budget.exp > offer.claims.exp) {
      throw new BatonError('budget_invalid', 'The budget expires after the offer', {
        field: `${BUDGET_MEMBER}.exp`,
      })
    }
    let expiresAt = (budget.exp ?? offer.claims.exp) * 1000
    const parent =
      offer.claims.prev === undefined ? undefined : await store.findBudget(tx.db, offer.claims.prev)
    if (parent) {
      // Only the delegate of a budgeted hop passes its budget on.
      if (parent.aud !== offer.claims.iss) {
        throw new BatonError(
          'budget_forbidden',
          'Only the delegate of the hop that prev names may reserve from its budget',
          { parent: parent.hop },
        )
      }
      if (parent.unit !== budget.unit) {
        throw new BatonError('budget_unit_mismatch', 'A sub-budget counts its parent’s unit', {
          unit: parent.unit,
          parent: parent.hop,
        })
      }
      if (parent.depth >= MAX_DEPTH) {
        throw limitReached('depth', MAX_DEPTH)
      }
      // A sub-budget lives no longer than the budget it is reserved from.
      expiresAt = Math.min(expiresAt, parent.expires_at)
    }
    if (expiresAt <= now) {
      throw new BatonError('budget_expired', 'The budget expires before it could be opened', {
        expiresAt: iso(expiresAt),
      })
    }
    if (parent) {
      const reserved = await store.reserveChild(tx.db, {
        parent: parent.hop,
        amount: budget.amountMicros,
        now,
        maxChildren: this.deps.config.maxChildren,
      })
      if (!reserved) {
        const now_ = await store.findBudget(tx.db, parent.hop)
        throw this.whyNotReserved(now_ ?? parent, budget.amountMicros, now)
      }
      // A read of any budget walks its root's tree: the tree is capped, over its whole life.
      if (!(await store.growTree(tx.db, parent.root, this.deps.config.maxTree))) {
        throw limitReached('tree', this.deps.config.maxTree)
      }
    }
    const transfer = offer.refs.find(
      (r) => r.outcome === 'verified' && typeof r.ref.transfer === 'string',
    )?.ref.transfer as string | undefined
    const ancestors = parent ? [...(JSON.parse(parent.ancestors) as string[]), parent.hop] : []
    const row: BudgetRow = {
      hop: offer.digest,
      parent: parent?.hop ?? null,
      root: parent?.root ?? offer.digest,
      ancestors: JSON.stringify(ancestors),
      depth: ancestors.length,
      iss: offer.claims.iss,
      aud: offer.claims.aud,
      unit: budget.unit,
      granted_micros: budget.amountMicros,
      reserved_micros: 0,
      held_micros: 0,
      spent_micros: 0,
      released_micros: 0,
      rate_micros: budget.rateMicrosPerSecond ?? null,
      state: 'open',
      closed_reason: null,
      children: 0,
      tree_size: 1,
      holds: 0,
      entries: 0,
      crossings: 0,
      reporters: '[]',
      transfer: transfer ?? null,
      expires_at: expiresAt,
      created_at: now,
      updated_at: now,
      closed_at: null,
    }
    await store.insertBudget(tx.db, row)
    this.announce(tx, row, parent ? 'reserved' : 'granted', now, {
      amountMicros: budget.amountMicros,
    })
    if (parent) this.announce(tx, parent, 'changed', now)
  }

  /**
   * Closes a hop's budget and every open budget below it, in the caller's transaction (the one
   * that ends the hop): open holds are released, and what the hop left unspent goes back to its
   * parent, which may reserve it again. Nothing happens to a budget already closed.
   */
  async close(tx: Tx, hop: string, reason: string, now: number): Promise<void> {
    const closed = await store.closeBudget(tx.db, { hop, reason, now })
    if (!closed) return
    const below = (await store.openOfRoot(tx.db, closed.root)).filter((b) =>
      (JSON.parse(b.ancestors) as string[]).includes(hop),
    )
    await store.closeBudgets(
      tx.db,
      below.map((b) => b.hop),
      'upstream',
      now,
    )
    const holds = await store.openHoldsOf(tx.db, [hop, ...below.map((b) => b.hop)])
    await store.releaseHolds(
      tx.db,
      holds.map((h) => h.id),
    )
    await this.releaseHolders(tx, holds)
    if (closed.parent !== null) {
      await store.releaseToParent(tx.db, {
        parent: closed.parent,
        amount: closed.granted - closed.spent,
        now,
      })
    }
    const released = [
      { hop, transfer: closed.transfer, reason, releasedMicros: closed.granted - closed.spent },
      ...below.map((b) => ({ hop: b.hop, transfer: b.transfer, reason: 'upstream' })),
    ]
    tx.afterCommit(() => {
      for (const { transfer, ...data } of released) {
        this.deps.bus.publish({
          topic: budgetTopic(data.hop),
          type: 'budget.released',
          at: now,
          data: {
            ...data,
            state: 'closed',
            ...(transfer === null ? {} : { transferId: transfer }),
          },
        })
      }
    })
  }

  /** Closes the budget of a hop whose state just ended it (completed, failed, canceled, rejected). */
  async hopEnded(tx: Tx, hop: string, state: string, now: number): Promise<void> {
    if (ENDING.has(state)) await this.close(tx, hop, state, now)
  }

  /** A hop's ledger as its parties see it; null when its offer carries no budget. */
  async ledger(db: Database['db'], hop: string): Promise<BudgetView | null> {
    const row = await store.findBudget(db, hop)
    return row ? this.toView(row) : null
  }

  /**
   * The budgets of the delegation chain through a hop, oldest first: those above and below it
   * that the caller took part in (as delegator, delegate or named reporter).
   */
  async read(caller: string, digest: string): Promise<BudgetChainView> {
    const start = await this.visible(caller, digest)
    const tree = await store.budgetsOfRoot(this.deps.database.db, start.root)
    const above = new Set(JSON.parse(start.ancestors) as string[])
    const chain = tree.filter(
      (b) =>
        (b.hop === start.hop ||
          above.has(b.hop) ||
          (JSON.parse(b.ancestors) as string[]).includes(start.hop)) &&
        partyOf(b, caller),
    )
    return { budgets: chain.map((b) => this.toView(b)) }
  }

  /**
   * A spend report from the delegate or a reporter it named, charged once per key: to the hop's
   * budget and, as spent, to every ancestor's. Refused before anything is charged when it would
   * cross; the crossing is recorded and delivered to the delegator.
   */
  async spend(
    caller: string,
    digest: string,
    input: SpendInput,
    { carry }: Carrying = {},
  ): Promise<SpendView> {
    const budget = await this.reporting(caller, digest)
    const { idempotencyKey: key, amountMicros: amount } = input
    try {
      return await this.deps.batcher.runIn(
        this.spends,
        {
          caller,
          hop: budget.hop,
          key,
          amount,
          note: input.note ?? null,
          ancestors: ancestorsOf(budget),
        },
        { rerunOnUniqueViolation: true, ...(carry ? { carry } : {}) },
      )
    } catch (error) {
      if (!(error instanceof Crossing)) throw error
      const recorded = await this.recordCrossing(error, caller)
      if (recorded.charged) {
        // Charged meanwhile under the same key (another instance): answered as a repeat.
        return this.deps.batcher.run((tx) => this.repeatedSpend(tx, budget.hop, key, amount))
      }
      throw exceeded(recorded.row, error.budget, error.kind)
    }
  }

  /** Spend reports that arrive together, decided and written set-based (`spendMany`). */
  private readonly spends: BatchGroup<PendingSpend, SpendView> = {
    many: (db, inputs) => this.spendMany(db, inputs),
  }

  /**
   * Decides many spend reports at once, in order, each as it would be alone: one read of the keys
   * already used and one of the ledgers (locked where the dialect locks rows), then one insert of
   * the entries and one update per ledger and per ancestor the spends count in.
   */
  private async spendMany(
    db: Tx['db'],
    inputs: PendingSpend[],
  ): Promise<GroupOutcome<SpendView>[]> {
    const now = this.deps.clock.now()
    const hops = [...new Set(inputs.map((i) => i.hop))]
    const prior = await priorEntries(db, 'spend', inputs)
    const ledgers = await this.lockLedgers(db, hops)
    const entries: BudgetEntryRow[] = []
    const made = new Map<string, BudgetEntryRow>()
    const outcomes = inputs.map((input): GroupOutcome<SpendView> => {
      const { caller, hop, key, amount } = input
      const row = ledgers.rows.get(hop)
      if (!row) return { ok: false, error: new Error(`budget ${hop} vanished`) }
      const view = (repeated: boolean) => ({
        hop,
        idempotencyKey: key,
        amountMicros: amount,
        repeated,
        budget: this.toView({ ...row }),
      })
      const earlier = prior.get(keyOf(hop, key)) ?? made.get(keyOf(hop, key))
      if (earlier) {
        if (earlier.amount_micros !== amount) return { ok: false, error: keyConflict(earlier) }
        if (earlier.charged !== 1) return { ok: false, error: exceeded(earlier, row, 'spend') }
        return { ok: true, value: view(true) }
      }
      const refusal = this.chargeRefusal(row, 'spend', key, amount, now)
      if (refusal) return { ok: false, error: refusal }
      row.spent_micros += amount
      row.entries += 1
      row.updated_at = now
      ledgers.spendAbove(input.ancestors, amount)
      const entryRow = { ...entry(hop, 'spend', key, amount, caller, now), note: input.note }
      entries.push(entryRow)
      made.set(keyOf(hop, key), entryRow)
      return {
        ok: true,
        value: view(false),
        after: this.announcement({ ...row }, 'spent', now, { amountMicros: amount }),
      }
    })
    if (entries.length === 0) return outcomes
    await store.insertEntries(db, entries)
    await ledgers.write(now)
    return outcomes
  }

  /**
   * The ledgers a batch decides on, as read under their locks, and how to write what it decided:
   * each changed ledger by the difference, checked against what was computed, and the spends
   * counted in ancestors the batch did not read.
   */
  private async lockLedgers(db: Tx['db'], hops: readonly string[]) {
    const lock = this.deps.database.caps.lockRowsForUpdate
    const rows = new Map((await store.lockBudgets(db, hops, lock)).map((b) => [b.hop, b]))
    const start = new Map([...rows].map(([hop, b]) => [hop, { ...b }]))
    const above = new Map<string, number>()
    return {
      rows,
      /** A descendant's spend: moved from reserved to spent in each ancestor. */
      spendAbove(ancestors: readonly string[], amount: number): void {
        if (amount === 0) return
        for (const ancestor of ancestors) {
          const read = rows.get(ancestor)
          if (read) {
            read.spent_micros += amount
            read.reserved_micros -= amount
          } else above.set(ancestor, (above.get(ancestor) ?? 0) + amount)
        }
      },
      async write(now: number): Promise<void> {
        const moves: store.LedgerMove[] = []
        for (const [hop, row] of rows) {
          const was = start.get(hop)!
          const move = {
            hop,
            spent: row.spent_micros - was.spent_micros,
            held: row.held_micros - was.held_micros,
            reserved: row.reserved_micros - was.reserved_micros,
            holds: row.holds - was.holds,
            entries: row.entries - was.entries,
          }
          if (move.spent || move.held || move.reserved || move.holds || move.entries) {
            moves.push(move)
          }
        }
        for (const [hop, amount] of above) {
          moves.push({ hop, spent: amount, held: 0, reserved: -amount, holds: 0, entries: 0 })
        }
        const after = new Map((await store.moveLedgers(db, moves, now)).map((r) => [r.hop, r]))
        for (const { hop } of moves) {
          const row = rows.get(hop)
          const moved = after.get(hop)
          if (
            !moved ||
            (row && (moved.held_micros !== row.held_micros || moved.entries !== row.entries))
          ) {
            throw new Error(`the ledger of ${hop} moved under its lock`)
          }
        }
      },
    }
  }

  /**
   * Holds an amount before an expensive call, once per key, if it fits what remains; the hold is
   * settled after the call, or released at its expiry or when the budget closes.
   */
  async reserve(
    caller: string,
    digest: string,
    input: ReserveInput,
    { carry }: Carrying = {},
  ): Promise<HoldView> {
    const budget = await this.reporting(caller, digest)
    const { idempotencyKey: key, amountMicros: amount } = input
    const { config } = this.deps
    const ttlMs = Math.min(
      input.ttlSeconds === undefined ? config.holdTtlMs : input.ttlSeconds * 1000,
      config.maxHoldTtlMs,
    )
    try {
      return await this.deps.batcher.runIn(
        this.reserves,
        { caller, hop: budget.hop, key, amount, ttlMs },
        { rerunOnUniqueViolation: true, ...(carry ? { carry } : {}) },
      )
    } catch (error) {
      if (!(error instanceof Crossing)) throw error
      const recorded = await this.recordCrossing(error, caller)
      if (recorded.charged) {
        return this.deps.batcher.run((tx) => this.repeatedReserve(tx, budget.hop, key, amount))
      }
      throw exceeded(recorded.row, error.budget, error.kind)
    }
  }

  /** Reserves that arrive together, decided and written set-based (`reserveMany`). */
  private readonly reserves: BatchGroup<PendingReserve, HoldView> = {
    many: (db, inputs) => this.reserveMany(db, inputs),
  }

  /**
   * Decides many reserves at once, in order, each as it would be alone: one read of the keys
   * already used, one of the ledgers (locked where the dialect locks rows) and one of the
   * holders' counts; then one insert of the entries, one update per ledger, one of the holders'
   * counts and one insert of the holds. A refused reserve leaves nothing behind.
   */
  private async reserveMany(
    db: Tx['db'],
    inputs: PendingReserve[],
  ): Promise<GroupOutcome<HoldView>[]> {
    const now = this.deps.clock.now()
    const { config } = this.deps
    const lock = this.deps.database.caps.lockRowsForUpdate
    const hops = [...new Set(inputs.map((i) => i.hop))]
    const prior = await priorEntries(db, 'reserve', inputs)
    const ledgers = await this.lockLedgers(db, hops)
    const holders = await store.lockHolders(db, [...new Set(inputs.map((i) => i.caller))], lock)
    const startHolders = new Map(holders)
    const priorHolds = new Map(
      (
        await store.lockHolds(
          db,
          [...prior.values()].flatMap((e) => (e.hold_id ? [e.hold_id] : [])),
          false,
        )
      ).map((h) => [h.id, h]),
    )
    const entries: BudgetEntryRow[] = []
    const holds: BudgetHoldRow[] = []
    const made = new Map<string, { entry: BudgetEntryRow; hold: BudgetHoldRow }>()
    const outcomes = inputs.map((input): GroupOutcome<HoldView> => {
      const { caller, hop, key, amount, ttlMs } = input
      const row = ledgers.rows.get(hop)
      // A budget the caller read is never deleted; only a bug could get here.
      if (!row) return { ok: false, error: new Error(`budget ${hop} vanished`) }
      const earlier = prior.get(keyOf(hop, key)) ?? made.get(keyOf(hop, key))?.entry
      if (earlier) {
        if (earlier.amount_micros !== amount) return { ok: false, error: keyConflict(earlier) }
        if (earlier.charged !== 1) return { ok: false, error: exceeded(earlier, row, 'hold') }
        const hold = made.get(keyOf(hop, key))?.hold ?? priorHolds.get(earlier.hold_id!)
        if (!hold) return { ok: false, error: new Error(`hold ${earlier.hold_id} vanished`) }
        return { ok: true, value: this.toHoldView(hold, { ...row }, true) }
      }
      const refusal = this.chargeRefusal(row, 'hold', key, amount, now)
      if (refusal) return { ok: false, error: refusal }
      if ((holders.get(caller) ?? 0) + 1 > config.maxHoldsPerPrincipal) {
        return { ok: false, error: limitReached('principal-holds', config.maxHoldsPerPrincipal) }
      }
      row.held_micros += amount
      row.holds += 1
      row.entries += 1
      row.updated_at = now
      holders.set(caller, (holders.get(caller) ?? 0) + 1)
      const id = newHoldId()
      const entryRow = { ...entry(hop, 'reserve', key, amount, caller, now), hold_id: id }
      const hold: BudgetHoldRow = {
        id,
        hop,
        holder: caller,
        idempotency_key: key,
        amount_micros: amount,
        state: 'held',
        settled_micros: null,
        expires_at: Math.min(now + ttlMs, row.expires_at),
        created_at: now,
        settled_at: null,
      }
      entries.push(entryRow)
      holds.push(hold)
      made.set(keyOf(hop, key), { entry: entryRow, hold })
      const after = { ...row }
      return {
        ok: true,
        value: this.toHoldView(hold, after, false),
        after: this.announcement(after, 'held', now, { amountMicros: amount }),
      }
    })
    if (entries.length === 0) return outcomes
    await store.insertEntries(db, entries)
    await ledgers.write(now)
    const deltas = new Map<string, number>()
    for (const [principal, n] of holders)
      deltas.set(principal, n - (startHolders.get(principal) ?? 0))
    const counted = await store.changeHolders(db, deltas, config.maxHoldsPerPrincipal)
    for (const [principal, d] of deltas) {
      if (d !== 0 && !counted.has(principal)) {
        throw new Error(`the open holds of ${principal} moved under their lock`)
      }
    }
    await store.insertHolds(db, holds)
    return outcomes
  }

  /**
   * Settles a hold with what the call cost: the hold is released and the amount charged (0
   * releases it). Above the hold, the excess is charged only if it fits; a hold released by its
   * expiry is settled as a plain spend. Once per hold: the same amount again answers the same.
   */
  async settle(
    caller: string,
    ref: HoldRef,
    input: SettleInput,
    { carry }: Carrying = {},
  ): Promise<HoldView> {
    const budget = await this.reporting(caller, ref.digest)
    const amount = input.amountMicros
    const first = await store.findHold(this.deps.database.db, ref.hold)
    if (!first || first.hop !== budget.hop) {
      throw new BatonError('budget_hold_not_found', 'No such hold on this budget', {
        hold: ref.hold,
      })
    }
    if (first.holder !== caller && budget.aud !== caller) {
      throw new BatonError('budget_forbidden', 'A hold is settled by its holder or the delegate')
    }
    const refusedKey = `${ref.hold}@${amount}`
    try {
      return await this.deps.batcher.runIn(
        this.settles,
        {
          caller,
          hop: budget.hop,
          holdId: ref.hold,
          amount,
          refusedKey,
          ancestors: ancestorsOf(budget),
        },
        { rerunOnUniqueViolation: true, ...(carry ? { carry } : {}) },
      )
    } catch (error) {
      if (!(error instanceof Crossing)) throw error
      const recorded = await this.recordCrossing(error, caller)
      throw exceeded(recorded.row, error.budget, error.kind)
    }
  }

  /** Settles that arrive together, decided and written set-based (`settleMany`). */
  private readonly settles: BatchGroup<PendingSettle, HoldView> = {
    many: (db, inputs) => this.settleMany(db, inputs),
  }

  /**
   * Decides many settles at once, in order, each as it would be alone: one read of the settle
   * entries and refusals already recorded, one of the ledgers and one of the holds (both locked
   * where the dialect locks rows); then one insert of the entries, one update per ledger and
   * per ancestor the spends count in, one of the holds and one of the holders' counts. A hold
   * past its expiry is released first, as the reaper would; a refused settle leaves nothing.
   */
  private async settleMany(
    db: Tx['db'],
    inputs: PendingSettle[],
  ): Promise<GroupOutcome<HoldView>[]> {
    const now = this.deps.clock.now()
    const lock = this.deps.database.caps.lockRowsForUpdate
    const hops = [...new Set(inputs.map((i) => i.hop))]
    const prior = await priorEntries(
      db,
      'settle',
      inputs.flatMap((i) => [
        { hop: i.hop, key: i.holdId },
        { hop: i.hop, key: i.refusedKey },
      ]),
    )
    const ledgers = await this.lockLedgers(db, hops)
    const holds = new Map(
      (await store.lockHolds(db, [...new Set(inputs.map((i) => i.holdId))], lock)).map((h) => [
        h.id,
        h,
      ]),
    )
    const entries: BudgetEntryRow[] = []
    const made = new Map<string, BudgetEntryRow>()
    const settled = new Map<string, BudgetHoldRow>()
    const holderDeltas = new Map<string, number>()
    const outcomes = inputs.map((input): GroupOutcome<HoldView> => {
      const { caller, hop, holdId, amount, refusedKey } = input
      const row = ledgers.rows.get(hop)
      const hold = holds.get(holdId)
      // A budget or hold the caller read is never deleted; only a bug could get here.
      if (!row || !hold) return { ok: false, error: new Error(`hold ${holdId} vanished`) }
      const earlier = prior.get(keyOf(hop, holdId)) ?? made.get(keyOf(hop, holdId))
      if (earlier) {
        if (earlier.amount_micros !== amount) return { ok: false, error: keyConflict(earlier) }
        return { ok: true, value: this.toHoldView({ ...hold }, { ...row }, true) }
      }
      const refused = prior.get(keyOf(hop, refusedKey))
      if (refused && refused.charged !== 1) {
        return { ok: false, error: exceeded(refused, row, 'settle') }
      }
      // Decided on copies: a refusal leaves the ledger and the hold as they were.
      const next = { ...row }
      let state = hold.state
      let released = 0
      // A hold past its expiry that the reaper has not reached yet is released first.
      if (state === 'held' && hold.expires_at <= now) {
        if (next.state === 'open') {
          next.held_micros -= hold.amount_micros
          next.holds -= 1
        }
        released = 1
        state = 'released'
      }
      if (state !== 'held' && state !== 'released') {
        return { ok: false, error: new Error(`hold ${holdId} is ${state} with no settle`) }
      }
      const live = state === 'held' ? hold.amount_micros : 0
      const refusal = this.chargeRefusal(next, 'settle', refusedKey, amount, now, live)
      if (refusal) return { ok: false, error: refusal }
      next.spent_micros += amount
      next.held_micros -= live
      next.holds -= live > 0 ? 1 : 0
      next.entries += 1
      next.updated_at = now
      Object.assign(row, next)
      const closedHold = released + (live > 0 ? 1 : 0)
      if (closedHold > 0) {
        holderDeltas.set(hold.holder, (holderDeltas.get(hold.holder) ?? 0) - closedHold)
      }
      Object.assign(hold, { state: 'settled', settled_micros: amount, settled_at: now })
      settled.set(hold.id, hold)
      ledgers.spendAbove(input.ancestors, amount)
      const entryRow = { ...entry(hop, 'settle', holdId, amount, caller, now), hold_id: holdId }
      entries.push(entryRow)
      made.set(keyOf(hop, holdId), entryRow)
      return {
        ok: true,
        value: this.toHoldView({ ...hold }, { ...row }, false),
        after: this.announcement({ ...row }, 'settled', now, { amountMicros: amount }),
      }
    })
    if (entries.length === 0) return outcomes
    await store.insertEntries(db, entries)
    await ledgers.write(now)
    const moved = await store.settleHolds(db, [...settled.values()], now)
    if (moved !== settled.size) throw new Error('a hold moved under its lock')
    const counted = await store.changeHolders(
      db,
      holderDeltas,
      this.deps.config.maxHoldsPerPrincipal,
    )
    for (const [principal, d] of holderDeltas) {
      if (d !== 0 && !counted.has(principal)) {
        throw new Error(`the open holds of ${principal} did not change`)
      }
    }
    return outcomes
  }

  /** The delegate names who may report spend and reserve beside it; the list replaces the last. */
  async nameReporters(
    caller: string,
    digest: string,
    input: ReportersInput,
    { carry }: Carrying = {},
  ): Promise<BudgetView> {
    const budget = await this.visible(caller, digest)
    if (budget.aud !== caller) {
      throw new BatonError('budget_forbidden', 'Only the delegate names reporters of its budget')
    }
    const reporters = [...new Set(input.reporters)]
    if (reporters.length > this.deps.config.maxReporters) {
      throw limitReached('reporters', this.deps.config.maxReporters)
    }
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const set = await store.setReporters(tx.db, {
        hop: budget.hop,
        reporters: JSON.stringify(reporters),
        now,
      })
      if (!set) throw closedError((await store.findBudget(tx.db, budget.hop))!)
      const after = (await store.findBudget(tx.db, budget.hop))!
      this.announce(tx, after, 'changed', now)
      return this.toView(after)
    })
  }

  /**
   * Releases holds and budgets past their expiry, each in its own transaction and each decided
   * by a conditional write, so instances running it at once release each once. Answers how many.
   */
  async reap(): Promise<number> {
    const db = this.deps.database.db
    let done = 0
    for (const hold of await store.expiredHolds(db, this.deps.clock.now(), REAP_BATCH)) {
      done += await this.deps.batcher.run(async (tx) => {
        const now = this.deps.clock.now()
        if (!(await store.moveHold(tx.db, hold.id, 'held', { state: 'released' }))) return 0
        await store.unhold(tx.db, { hop: hold.hop, amount: hold.amount_micros, now })
        await this.releaseHolders(tx, [hold])
        const budget = await store.findBudget(tx.db, hold.hop)
        if (budget) this.announce(tx, budget, 'hold_released', now, { holdId: hold.id })
        return 1
      })
    }
    for (const hop of await store.expiredBudgets(db, this.deps.clock.now(), REAP_BATCH)) {
      await this.deps.batcher.run(async (tx) => {
        await this.close(tx, hop, 'expired', this.deps.clock.now())
      })
      done++
    }
    return done
  }

  /**
   * The operator's view: the ledgers of the chain through a hop, or of the hops whose offers
   * reference a transfer, each with its latest reports.
   */
  async operatorList(q: { hop?: string | undefined; transfer?: string | undefined }) {
    const db = this.deps.database.db
    let rows: BudgetRow[] = []
    if (q.hop !== undefined) {
      const start = await store.findBudget(db, q.hop)
      if (start) rows = await store.budgetsOfRoot(db, start.root)
    } else if (q.transfer !== undefined) {
      rows = await store.budgetsOfTransfer(db, q.transfer, 50)
    }
    return {
      budgets: await Promise.all(
        rows.map(async (r) => ({
          ...this.toView(r),
          transfer: r.transfer,
          entries: (await store.recentEntries(db, r.hop, OPERATOR_ENTRIES)).map(toEntryView),
        })),
      ),
    }
  }

  /** How many budgets are open and closed, for the operator's overview. */
  operatorCounts(): Promise<Record<string, number>> {
    return store.countStates(this.deps.database.db)
  }

  /** A budget the caller may see (delegator, delegate, named reporter); any other is missing. */
  private async visible(caller: string, digest: string): Promise<BudgetRow> {
    const row = await store.findBudget(this.deps.database.db, digest)
    if (!row || !partyOf(row, caller)) {
      throw new BatonError('budget_not_found', 'No budget on a hop you take part in', {
        hop: digest,
      })
    }
    return row
  }

  /** A budget the caller may report on: its delegate or a reporter the delegate named. */
  private async reporting(caller: string, digest: string): Promise<BudgetRow> {
    const row = await this.visible(caller, digest)
    if (row.aud !== caller && !reportersOf(row).includes(caller)) {
      throw new BatonError(
        'budget_forbidden',
        'Only the delegate of a hop, or a reporter it named, reports on its budget',
      )
    }
    return row
  }

  /** Why a sub-delegation could not be reserved from `parent`, as the error it answers. */
  private whyNotReserved(parent: BudgetRow, amount: number, now: number): BatonError {
    if (parent.state !== 'open') return closedError(parent, { parent: parent.hop })
    if (parent.expires_at <= now) return expiredError(parent, { parent: parent.hop })
    if (parent.children >= this.deps.config.maxChildren) {
      return limitReached('children', this.deps.config.maxChildren)
    }
    return new BatonError(
      'budget_insufficient',
      'The sub-offer asks for more than its parent budget has left',
      {
        parent: parent.hop,
        unit: parent.unit,
        requestedMicros: amount,
        remainingMicros: remainingOf(parent),
      },
    )
  }

  /**
   * Why a charge of `requested` (less `credit`, a live hold a settle releases) cannot be made on
   * a ledger as it stands: closed, expired, a cap reached, or a crossing; undefined when it fits.
   */
  private chargeRefusal(
    row: BudgetRow,
    kind: BudgetCrossing['kind'],
    key: string,
    requested: number,
    now: number,
    credit = 0,
  ): Error | undefined {
    const { config } = this.deps
    if (row.state !== 'open') return closedError(row)
    if (row.expires_at <= now) return expiredError(row)
    if (row.entries >= config.maxEntries) return limitReached('entries', config.maxEntries)
    if (kind === 'hold' && row.holds >= config.maxHolds) {
      return limitReached('holds', config.maxHolds)
    }
    // A settle may also spend the hold it releases: what it could charge is that much more.
    if (remainingOf(row) + credit < requested) {
      return new Crossing({ ...row }, kind, key, requested, remainingOf(row) + credit)
    }
    return undefined
  }

  /**
   * Records a refused report in its own transaction: the report kept under its key (so a repeat
   * answers the same refusal) and the crossing delivered to the delegator's hop inbox with a
   * hub-signed receipt. Answers the entry found, which another instance may have charged since.
   */
  private async recordCrossing(
    c: Crossing,
    reporter: string,
  ): Promise<{ row: BudgetEntryRow; charged: boolean }> {
    const kind = c.kind === 'hold' ? 'reserve' : c.kind
    return this.deps.batcher.run(
      async (tx) => {
        const now = this.deps.clock.now()
        const row: BudgetEntryRow = {
          ...entry(c.budget.hop, kind, c.key, c.requested, reporter, now),
          charged: 0,
          remaining_micros: c.remaining,
        }
        if (!(await store.insertEntry(tx.db, row))) {
          const found = (await store.findEntry(tx.db, c.budget.hop, kind, c.key))!
          return { row: found, charged: found.charged === 1 }
        }
        const counted = await store.countCrossing(tx.db, {
          hop: c.budget.hop,
          now,
          maxEntries: this.deps.config.maxEntries,
        })
        if (!counted) throw limitReached('entries', this.deps.config.maxEntries)
        const crossing: BudgetCrossing = {
          v: 1,
          type: BUDGET_CROSSING_TYPE,
          hop: c.budget.hop,
          unit: c.budget.unit,
          kind: c.kind,
          key: c.key,
          requestedMicros: c.requested,
          remainingMicros: c.remaining,
          reporter,
          at: iso(now),
        }
        const { receipt } = await this.deps.notices.deliver(
          tx,
          { recipient: c.budget.iss, offer: c.budget.hop, element: canonicalJson(crossing) },
          now,
        )
        await tx.db
          .updateTable('budget_entries')
          .set({ receipt })
          .where('hop', '=', row.hop)
          .where('kind', '=', row.kind)
          .where('key', '=', row.key)
          .execute()
        this.announce(tx, c.budget, 'refused', now, {
          kind: c.kind,
          requestedMicros: c.requested,
        })
        return { row: { ...row, receipt }, charged: false }
      },
      { rerunOnUniqueViolation: true },
    )
  }

  /** The answer to a spend whose key was reported before: the same, or a conflict. */
  private async repeatedSpend(
    tx: Tx,
    hop: string,
    key: string,
    amount: number,
  ): Promise<SpendView> {
    const prior = (await store.findEntry(tx.db, hop, 'spend', key))!
    const budget = (await store.findBudget(tx.db, hop))!
    if (prior.amount_micros !== amount) throw keyConflict(prior)
    if (prior.charged !== 1) throw exceeded(prior, budget, 'spend')
    return {
      hop,
      idempotencyKey: key,
      amountMicros: amount,
      repeated: true,
      budget: this.toView(budget),
    }
  }

  /** The answer to a reserve whose key was used before: its hold, or a conflict. */
  private async repeatedReserve(
    tx: Tx,
    hop: string,
    key: string,
    amount: number,
  ): Promise<HoldView> {
    const prior = (await store.findEntry(tx.db, hop, 'reserve', key))!
    const budget = (await store.findBudget(tx.db, hop))!
    if (prior.amount_micros !== amount) throw keyConflict(prior)
    if (prior.charged !== 1) throw exceeded(prior, budget, 'hold')
    const hold = (await store.findHold(tx.db, prior.hold_id!))!
    return this.toHoldView(hold, budget, true)
  }

  /** Takes released holds off their holders' counts of open holds. */
  private async releaseHolders(tx: Tx, holds: readonly BudgetHoldRow[]): Promise<void> {
    const by = new Map<string, number>()
    for (const h of holds) by.set(h.holder, (by.get(h.holder) ?? 0) + 1)
    for (const [principal, n] of by) {
      await store.changeHolder(tx.db, {
        principal,
        delta: -n,
        limit: this.deps.config.maxHoldsPerPrincipal,
      })
    }
  }

  /** What `announce` publishes, as a hook to run after the commit. */
  private announcement(
    row: BudgetRow,
    change: string,
    now: number,
    data: Record<string, unknown> = {},
  ): () => void {
    return () =>
      this.deps.bus.publish({
        topic: budgetTopic(row.hop),
        type: `budget.${change}`,
        at: now,
        data: {
          hop: row.hop,
          state: row.state,
          ...(row.transfer === null ? {} : { transferId: row.transfer }),
          ...data,
        },
      })
  }

  private announce(
    tx: Tx,
    row: BudgetRow,
    change: string,
    now: number,
    data: Record<string, unknown> = {},
  ): void {
    tx.afterCommit(this.announcement(row, change, now, data))
  }

  private toView(row: BudgetRow): BudgetView {
    const now = this.deps.clock.now()
    // A read of a budget past its expiry answers it expired at once, as the reaper will close it.
    const lapsed = row.state === 'open' && row.expires_at <= now
    const open = row.state === 'open' && !lapsed
    const state = lapsed || row.closed_reason === 'expired' ? 'expired' : open ? 'open' : 'closed'
    return {
      hop: row.hop,
      parent: row.parent,
      iss: row.iss,
      aud: row.aud,
      unit: row.unit,
      grantedMicros: row.granted_micros,
      reservedMicros: open ? row.reserved_micros : 0,
      heldMicros: open ? row.held_micros : 0,
      spentMicros: row.spent_micros,
      remainingMicros: open ? remainingOf(row) : 0,
      releasedMicros: lapsed ? row.granted_micros - row.spent_micros : row.released_micros,
      rateMicrosPerSecond: row.rate_micros,
      state,
      closedReason: lapsed ? 'expired' : row.closed_reason,
      children: open ? row.children : 0,
      holds: open ? row.holds : 0,
      crossings: row.crossings,
      reporters: reportersOf(row),
      expiresAt: iso(row.expires_at),
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
      closedAt: row.closed_at === null ? (lapsed ? iso(row.expires_at) : null) : iso(row.closed_at),
    }
  }

  private toHoldView(hold: BudgetHoldRow, budget: BudgetRow, repeated: boolean): HoldView {
    return {
      holdId: hold.id,
      hop: hold.hop,
      holder: hold.holder,
      idempotencyKey: hold.idempotency_key,
      amountMicros: hold.amount_micros,
      state: hold.state as HoldView['state'],
      settledMicros: hold.settled_micros,
      expiresAt: iso(hold.expires_at),
      createdAt: iso(hold.created_at),
      settledAt: hold.settled_at === null ? null : iso(hold.settled_at),
      repeated,
      budget: this.toView(budget),
    }
  }
}

function entry(
  hop: string,
  kind: string,
  key: string,
  amount: number,
  reporter: string,
  now: number,
): BudgetEntryRow {
  return {
    hop,
    kind,
    key,
    amount_micros: amount,
    charged: 1,
    remaining_micros: null,
    reporter,
    note: null,
    hold_id: null,
    receipt: null,
    created_at: now,
  }
}

function toEntryView(e: BudgetEntryRow) {
  return {
    kind: e.kind,
    key: e.key,
    amountMicros: e.amount_micros,
    charged: e.charged === 1,
    remainingMicros: e.remaining_micros,
    reporter: e.reporter,
    note: e.note,
    receipt: e.receipt,
    at: iso(e.created_at),
  }
}

/** An entry's place among a batch's: its hop and key. */
const keyOf = (hop: string, key: string) => `${hop}\0${key}`

/** The entries of one kind already at a batch's (hop, key) pairs, by `keyOf`. */
async function priorEntries(
  db: Tx['db'],
  kind: string,
  at: readonly { hop: string; key: string }[],
): Promise<Map<string, BudgetEntryRow>> {
  const rows = await store.findEntriesAt(db, kind, at)
  return new Map(rows.map((e) => [keyOf(e.hop, e.key), e]))
}

const remainingOf = (b: BudgetRow) =>
  b.granted_micros - b.reserved_micros - b.held_micros - b.spent_micros
const reportersOf = (b: BudgetRow) => JSON.parse(b.reporters) as string[]
const ancestorsOf = (b: BudgetRow) => JSON.parse(b.ancestors) as string[]
const partyOf = (b: BudgetRow, caller: string) =>
  b.iss === caller || b.aud === caller || reportersOf(b).includes(caller)

function closedError(b: BudgetRow, extra: Record<string, unknown> = {}): BatonError {
  if (b.closed_reason === 'expired') return expiredError(b, extra)
  return new BatonError('budget_closed', `The budget closed: ${b.closed_reason ?? 'closed'}`, {
    hop: b.hop,
    reason: b.closed_reason,
    ...extra,
  })
}

function expiredError(b: BudgetRow, extra: Record<string, unknown> = {}): BatonError {
  return new BatonError('budget_expired', 'The budget passed its expiry', {
    hop: b.hop,
    expiresAt: iso(b.expires_at),
    ...extra,
  })
}

function limitReached(scope: string, limit: number): BatonError {
  return new BatonError('budget_limit_reached', `At most ${limit} (${scope})`, { scope, limit })
}

function keyConflict(prior: BudgetEntryRow): BatonError {
  return new BatonError(
    'idempotency_conflict',
    'This key was already reported with another amount',
    {
      amountMicros: prior.amount_micros,
    },
  )
}

/** The refusal of a report that would have crossed its budget, as it was recorded. */
function exceeded(
  recorded: BudgetEntryRow,
  budget: BudgetRow,
  kind: BudgetCrossing['kind'],
): BatonError {
  return new BatonError(
    'budget_exceeded',
    'The report would cross the budget; nothing was charged and the delegator was told',
    {
      hop: budget.hop,
      unit: budget.unit,
      kind,
      requestedMicros: recorded.amount_micros,
      remainingMicros: recorded.remaining_micros,
      recorded: true,
    },
  )
}
