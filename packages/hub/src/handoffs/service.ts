import {
  type AdvanceInput,
  BatonError,
  type CreatedHandoffView,
  type CreateHandoffInput,
  type HandoffView,
  type MoveResultView,
  type MoveView,
  type WaitView,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { EventBus } from '../events/bus.js'
import { shareAnswer } from '../events/shared-answer.js'
import type { WaitRegistry, WaitSignal } from '../events/wait.js'
import type { Database } from '../store/database.js'
import { onceByKey } from '../store/idempotency.js'
import { activitySeries, iso as isoOrNull, num, parseStored } from '../store/operator-reads.js'
import { consumeDailyQuota } from '../store/quota.js'
import type { HandoffMoveRow, HandoffRow, NotifyOutboxRow } from '../store/schema.js'
import {
  type BatchGroup,
  type Carrying,
  countCommit,
  type GroupOutcome,
  type Tx,
  type WriteBatcher,
} from '../store/transaction.js'
import { type HandedTrace, traceColumns, traceFields } from '../telemetry/trace-context.js'
import { KnownHandoffs, type PredictedMove, predictMove } from './known.js'
import { AutocommitLane } from './lane.js'
import { allowedNext, isFinal, type Machine, parseMachine } from './machine.js'
import { checkNotifyUrl, toSignalRow } from './notify.js'
import { insertSignals } from './outbox-store.js'
import * as store from './store.js'
import { hashToken, isHandoffId, matchToken, newHandoffId, newToken } from './tokens.js'

/** Who is calling, as far as a token handoff cares. */
export interface CallerContext extends Carrying {
  /** The client address, for the per-IP creation quota. */
  ip: string
  /** An Idempotency-Key the caller sent with a create. */
  idempotencyKey?: string | undefined
}

/**
 * Delivers the notify outbox. Signals are written in the transaction of their move; the sink is
 * only told, after commit, that there is something to deliver. Delivery never blocks a move.
 */
export interface NotifySink {
  kick(): void
}

/** What a handoff service needs from the rest of the hub. */
export interface HandoffDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: Config['handoff']
  notify: NotifySink
  allowLoopbackNotify: boolean
  /** Every long poll of the hub; answers waiters when the hub begins shutting down. */
  waits: WaitRegistry
  onMove?: (outcome: 'moved' | 'repeated' | 'conflict') => void
  /** Hears the size of each batch of moves committed as one statement, outside the batcher. */
  onBatch?: (size: number) => void
  /** Hears how long each such statement took, in seconds. */
  onCommitted?: (seconds: number) => void
  /** Most moves in one such statement (BATON_MAX_BATCH). */
  maxBatch?: number
  /**
   * Most such statements in flight at once (default: the dialect's write concurrency); 0 commits
   * every move through the batcher.
   */
  fastMovesInFlight?: number
}

const iso = (ms: number) => new Date(ms).toISOString()

/** The event topic of one handoff. */
export const handoffTopic = (id: string) => `handoff:${id}`

/**
 * Token handoffs (seed 002): a JSON payload, two tokens shown once, a forward-only machine moved
 * by compare-and-set on `from`, nonces that make moves safe to repeat, waits, notify signals,
 * expiry and a per-IP creation quota. HTTP and MCP call these same functions.
 */
export class HandoffService {
  /** The immutable facts of handoffs this instance created or moved lately. */
  readonly known = new KnownHandoffs()
  private readonly lane: AutocommitLane<FastMove, MoveResultView> | undefined

  constructor(private readonly deps: HandoffDeps) {
    const inFlight = deps.fastMovesInFlight ?? deps.database.caps.writeConcurrency
    if (deps.database.caps.oneTripWrites && inFlight > 0) {
      this.lane = new AutocommitLane({
        maxBatch: deps.maxBatch ?? 256,
        inFlight,
        commit: (moves) => this.moveFast(moves),
        careful: (m) => deps.batcher.runIn(this.moves, m),
        onBatch: deps.onBatch,
        onCommitted: deps.onCommitted,
      })
    }
  }

  /**
   * Creates a handoff; a repeat with the same Idempotency-Key and body answers the first result.
   * `body` is already validated by the operation's schema (`createHandoff`).
   */
  async create(body: CreateHandoffInput, caller: CallerContext): Promise<CreatedHandoffView> {
    const { config } = this.deps
    const payloadJson = JSON.stringify(body.payload)
    const payloadBytes = Buffer.byteLength(payloadJson, 'utf8')
    if (payloadBytes > config.maxPayloadBytes) {
      throw new BatonError(
        'payload_too_large',
        `The payload is ${payloadBytes} bytes as JSON; at most ${config.maxPayloadBytes} are accepted`,
        { limit: config.maxPayloadBytes, size: payloadBytes },
      )
    }
    const machine = parseMachine(body, config.maxStates)
    if (body.notify_url !== undefined)
      checkNotifyUrl(body.notify_url, this.deps.allowLoopbackNotify)

    const key = caller.idempotencyKey
    return this.deps.batcher.run(
      async (tx) => {
        const now = this.deps.clock.now()
        const scope = { scope: 'handoff.create', key, request: body, now }
        return onceByKey(tx.db, scope, async () => {
          await consumeDailyQuota(tx.db, {
            scope: 'handoff.create',
            subject: caller.ip,
            limit: config.dailyCreatesPerIp,
            now,
          })
          const id = newHandoffId()
          const ownerToken = newToken('owner')
          const receiverToken = newToken('receiver')
          const state = machine.states[0]!
          const row: HandoffRow = {
            id,
            owner_token_hash: hashToken(ownerToken),
            receiver_token_hash: hashToken(receiverToken),
            state,
            version: 1,
            ended: 0,
            payload: payloadJson,
            note: body.note ?? null,
            notify_url: body.notify_url ?? null,
            machine: JSON.stringify(machine),
            created_at: now,
            updated_at: now,
            expires_at: now + config.ttlMs,
            ...traceColumns(caller.trace),
          }
          await store.insertHandoff(tx.db, row)
          const view: CreatedHandoffView = {
            handoff_id: id,
            owner_token: ownerToken,
            receiver_token: receiverToken,
            state,
            version: 1,
            ended: false,
            machine,
            created_at: iso(now),
            expires_at: iso(now + config.ttlMs),
          }
          tx.afterCommit(() => {
            if (this.lane) this.known.remember(row)
            this.deps.bus.publish({
              topic: handoffTopic(id),
              type: 'handoff.created',
              at: now,
              data: { handoff_id: id, state, version: 1, ended: false },
            })
          })
          return view
        })
      },
      // Two creates raced on one Idempotency-Key: the loser rolled back; now it finds the winner.
      { rerunOnUniqueViolation: key !== undefined, carry: caller.carry },
    )
  }

  /** Reads a handoff with either token. */
  async read(id: string, token: string | undefined): Promise<HandoffView> {
    const { row } = await this.authorize(this.deps.database.db, id, token)
    const moves = await store.listMoves(this.deps.database.db, id)
    return toView(row, moves)
  }

  /**
   * Moves a handoff to `to`, only from exactly `input.from` over an allowed step (seed 002).
   * A repeat with the same nonce answers the committed move with `repeated: true`. `body` is
   * already validated by the operation's schema (`advanceHandoff`), `to` a state name by it.
   */
  async advance(
    id: string,
    to: string,
    body: AdvanceInput,
    token: string | undefined,
    { carry, trace }: Carrying = {},
  ): Promise<MoveResultView> {
    if (!token) throw missingToken()
    if (!isHandoffId(id)) throw notFound(id)
    try {
      const request: MoveRequest = { id, to, body, token, trace }
      // A signed request's admission (its nonce, its quota charge) commits in the transaction of
      // the first write it queues, and only the batcher writes it: such a move goes that way.
      const predicted =
        this.lane &&
        !(carry && !carry.taken) &&
        predictMove(this.known.get(id), token, body.from, to, this.deps.clock.now())
      const result = predicted
        ? await this.lane!.run({ ...request, predicted })
        : await this.deps.batcher.runIn(this.moves, request, { carry })
      this.deps.onMove?.(result.repeated ? 'repeated' : 'moved')
      return result
    } catch (error) {
      if (error instanceof BatonError && error.status === 409) this.deps.onMove?.('conflict')
      throw error
    }
  }

  /**
   * Moves predicted to commit (`predictMove`) go first in one trip to the database per batch
   * (`store.moveIfAt`), which moves each handoff still in the stated `from` (no locked read);
   * every move it did not make then goes the careful way below, which decides it exactly.
   */
  private async moveFast(moves: FastMove[]): Promise<(GroupOutcome<MoveResultView> | undefined)[]> {
    const now = this.deps.clock.now()
    // One move per handoff in the statement; later ones in the batch follow it the careful way.
    const taken = new Map<string, FastMove>()
    for (const m of moves) if (!taken.has(m.id)) taken.set(m.id, m)
    let moved: Map<string, number>
    try {
      moved = await store.moveIfAt(
        this.deps.database.db,
        this.deps.database.caps.name,
        [...taken.values()].map((m) => ({
          id: m.id,
          from: m.body.from,
          to: m.to,
          actor: m.predicted.actor,
          nonce: m.body.nonce ?? null,
          note: m.body.note ?? null,
          ended: m.predicted.ended,
          ...traceColumns(m.trace),
        })),
        now,
      )
      countCommit(this.deps.database)
    } catch (error) {
      const { caps } = this.deps.database
      // The trip committed nothing (a deadlock or a busy database, or a nonce another move
      // committed first): every move goes the careful way.
      if (caps.isRetryable(error) || caps.isUniqueViolation(error))
        return moves.map(() => undefined)
      throw error
    }
    return moves.map((m) => {
      const version = moved.get(m.id)
      if (version === undefined || taken.get(m.id) !== m) return undefined
      const { actor, machine, ended } = m.predicted
      const move = this.newMove(m, { version: version - 1 }, actor, now)
      if (ended) this.known.forget(m.id)
      const current = { state: m.to, version, ended: ended ? 1 : 0 }
      return {
        ok: true,
        value: toMoveResult(move, machine, current, false),
        after: () => this.announce(move, ended, false),
      }
    })
  }

  /**
   * Moves commit set-based: the moves that arrive together lock and read their handoffs once,
   * are decided in arrival order by the same rules as a single move, and are written with one
   * update and one insert. Should anything go wrong, each move is retried on its own, as a
   * group of one.
   */
  private readonly moves: BatchGroup<MoveRequest, MoveResultView> = {
    many: (db, inputs) => this.moveMany(db, inputs),
  }

  private async moveMany(
    db: Tx['db'],
    inputs: MoveRequest[],
  ): Promise<GroupOutcome<MoveResultView>[]> {
    const now = this.deps.clock.now()
    const ids = [...new Set(inputs.map((m) => m.id))].sort()
    const rows = await store.lockForMoves(db, ids, this.deps.database.caps.lockRowsForUpdate)
    if (this.lane) for (const r of rows) this.known.remember(r)
    const current = new Map(rows.map((r) => [r.id, { ...r }]))
    const readVersion = new Map(rows.map((r) => [r.id, r.version]))
    const machines = new Map<string, Machine>()
    const withNonce = inputs.filter((m) => m.body.nonce !== undefined)
    const nonces = new Map<string, HandoffMoveRow>()
    if (withNonce.length > 0) {
      const prior = await store.findMovesByNonces(
        db,
        [...new Set(withNonce.map((m) => m.id))],
        [...new Set(withNonce.map((m) => m.body.nonce!))],
      )
      for (const p of prior) nonces.set(`${p.handoff_id}\0${p.nonce}`, p)
    }
    const written: HandoffMoveRow[] = []
    const signals: Omit<NotifyOutboxRow, 'seq'>[] = []
    const outcomes: GroupOutcome<MoveResultView>[] = []
    for (const m of inputs) {
      try {
        const found = current.get(m.id)
        const actor = this.checkAccess(found, m.id, m.token, now)
        const row = found!
        let machine = machines.get(m.id)
        if (!machine) {
          machine = JSON.parse(row.machine) as Machine
          machines.set(m.id, machine)
        }
        const key = `${m.id}\0${m.body.nonce}`
        const decided = decideMove(row, machine, m.to, m.body, nonces.get(key))
        if (decided.repeat) {
          outcomes.push({ ok: true, value: toMoveResult(decided.repeat, machine, row, true) })
          continue
        }
        const move = this.newMove(m, row, actor, now)
        if (decided.ended) this.known.forget(m.id)
        Object.assign(row, { state: m.to, version: move.version, ended: decided.ended ? 1 : 0 })
        row.updated_at = now
        written.push(move)
        if (row.notify_url) signals.push(toSignalRow(move, decided.ended, row.notify_url))
        if (m.body.nonce !== undefined) nonces.set(key, move)
        outcomes.push({
          ok: true,
          value: toMoveResult(move, machine, row, false),
          after: () => this.announce(move, decided.ended, row.notify_url !== null),
        })
      } catch (error) {
        if (!(error instanceof BatonError)) throw error
        outcomes.push({ ok: false, error })
      }
    }
    const changed = [...current.values()].filter((r) => r.version !== readVersion.get(r.id))
    if (changed.length > 0) {
      const applied = await store.writeMoves(
        db,
        this.deps.database.caps.name,
        changed.map((r) => ({
          id: r.id,
          state: r.state,
          version: r.version,
          ended: r.ended === 1,
          at: now,
          expect: readVersion.get(r.id)!,
        })),
        written,
      )
      // Rows are locked (or the database is), so this holds; if not, every move is retried alone.
      if (applied !== changed.length) throw new Error('handoffs changed under a locked batch')
      // The signals commit with their moves, in the same transaction: one insert for the group.
      await insertSignals(db, signals)
    }
    return outcomes
  }

  private newMove(
    m: MoveRequest,
    row: { version: number },
    actor: string,
    now: number,
  ): HandoffMoveRow {
    return {
      handoff_id: m.id,
      version: row.version + 1,
      from_state: m.body.from,
      to_state: m.to,
      actor,
      nonce: m.body.nonce ?? null,
      note: m.body.note ?? null,
      at: now,
      ...traceColumns(m.trace),
    }
  }

  /** After commit: the event every listener hears, and a nudge to the outbox if it has a signal. */
  private announce(move: HandoffMoveRow, ended: boolean, signalled: boolean): void {
    this.deps.bus.publish({
      topic: handoffTopic(move.handoff_id),
      type: 'handoff.moved',
      at: move.at,
      data: {
        handoff_id: move.handoff_id,
        state: move.to_state,
        version: move.version,
        ended,
        at: iso(move.at),
      },
    })
    if (signalled) this.deps.notify.kick()
  }

  /**
   * Waits up to `seconds` (clamped to the configured maximum) for the handoff to change or end.
   * `seenVersion` is the version the caller last read, so a change in between is not missed.
   */
  async wait(
    id: string,
    token: string | undefined,
    seconds: number,
    seen?: number,
    signal?: WaitSignal,
    address?: string,
  ): Promise<WaitView> {
    const waitMs = Math.min(seconds, this.deps.config.maxWaitSeconds) * 1000
    if (!token) throw missingToken()
    if (!isHandoffId(id)) throw notFound(id)
    const data: HandoffWaiter = { id, token, seen, waitMs }
    const { first, last } = await this.deps.waits.wait({
      key: handoffTopic(id),
      topics: [handoffTopic(id)],
      ...this.waitFns,
      // Every waiter holding the same token sees the same view: one token check per read.
      viewKey: token,
      // Only a move changes a handoff, and every move publishes on its topic; the expiry is time,
      // which the view and the timeout apply.
      changesOnlyWithEvents: true,
      data,
      address,
      signal,
    })
    return this.waitAnswer(last, changedSince(data, last, first))
  }

  // The functions of every handoff wait, made once: a waiter is only its `HandoffWaiter` record.
  private readonly waitFns = {
    // One read per change for every waiter of the handoff, whichever token each one holds. A
    // handoff still at the version last read is that read again: its history is not re-read, and
    // every waiter that joined meanwhile holds the same view.
    read: async ({ id }: HandoffWaiter, previous: SharedHandoff | undefined) => {
      const { db } = this.deps.database
      const row = await store.findHandoff(db, id)
      if (!row) return undefined
      if (previous && sameHandoffRow(previous.row, row)) return previous
      return { row, view: toView(row, await store.listMoves(db, id)) }
    },
    view: (shared: SharedHandoff | undefined, w: HandoffWaiter) => {
      this.checkAccess(shared?.row, w.id, w.token, this.deps.clock.now())
      return shared!.view
    },
    ready: (v: HandoffView, first: HandoffView, w: HandoffWaiter) =>
      changedSince(w, v, first) || v.ended,
    // A handoff that expires while waited on answers then (with 410).
    timeoutMs: (first: HandoffView, w: HandoffWaiter) =>
      w.waitMs === 0 ? 0 : Math.min(w.waitMs, Date.parse(first.expires_at) - this.deps.clock.now()),
  }

  // Waiters answered by one read get one answer object per (view, changed), not one each.
  private readonly answers = new WeakMap<HandoffView, { true?: WaitView; false?: WaitView }>()

  private waitAnswer(last: HandoffView, changed: boolean): WaitView {
    let byChanged = this.answers.get(last)
    if (!byChanged) {
      byChanged = {}
      this.answers.set(last, byChanged)
    }
    const key = changed ? 'true' : 'false'
    // Every waiter woken with this view gets this one object, encoded once for all of them.
    byChanged[key] ??= shareAnswer({ ...last, changed })
    return byChanged[key]
  }

  /** Removes expired handoffs (cleanup only: reads already answer 410 once expired). */
  async cleanup(): Promise<number> {
    return this.deps.batcher.run((tx) => store.deleteExpired(tx.db, this.deps.clock.now()))
  }

  private async authorize(
    db: Database['db'],
    id: string,
    token: string | undefined,
  ): Promise<{ row: HandoffRow; actor: 'owner' | 'receiver'; machine: Machine }> {
    if (!token) throw missingToken()
    if (!isHandoffId(id)) throw notFound(id)
    const found = await store.findHandoff(db, id)
    const actor = this.checkAccess(found, id, token, this.deps.clock.now())
    const row = found!
    return { row, actor, machine: JSON.parse(row.machine) as Machine }
  }

  /**
   * Which token a caller holds for a handoff. A wrong token answers exactly like a missing
   * handoff, so ids cannot be probed; an expired handoff answers 410 until cleanup removes it.
   */
  private checkAccess(
    row: AccessRow | undefined,
    id: string,
    token: string,
    now: number,
  ): 'owner' | 'receiver' {
    const actor = row
      ? matchToken(token, { owner: row.owner_token_hash, receiver: row.receiver_token_hash })
      : undefined
    if (!row || !actor) throw notFound(id)
    if (isExpired(row, now)) {
      throw new BatonError('handoff_expired', `Handoff ${id} expired at ${iso(row.expires_at)}`, {
        expired_at: iso(row.expires_at),
      })
    }
    return actor
  }

  /**
   * Handoffs by state for the operator: unexpired ones by state, `expired` for those past expiry
   * (seed 002: they read as expired at once, whatever cleanup has done), and the open ones (not
   * ended, unexpired) by state, so a custom machine's final states are left out, not guessed.
   */
  async operatorCounts(): Promise<{
    handoffs: Record<string, number>
    openHandoffs: Record<string, number>
  }> {
    const db = this.deps.database.db
    const now = this.deps.clock.now()
    const [rows, expired] = await Promise.all([
      store.countByState(db, now),
      store.countExpired(db, now),
    ])
    const handoffs: Record<string, number> = {}
    const openHandoffs: Record<string, number> = {}
    for (const r of rows) {
      handoffs[r.state] = (handoffs[r.state] ?? 0) + r.count
      if (r.ended === 0) openHandoffs[r.state] = (openHandoffs[r.state] ?? 0) + r.count
    }
    if (expired > 0) handoffs.expired = expired
    return { handoffs, openHandoffs }
  }

  /** Moves per minute over the last hour (`ACTIVITY`), oldest first. */
  async operatorActivity(): Promise<number[]> {
    return activitySeries(this.deps.database.db, 'handoff_moves', 'at', this.deps.clock.now())
  }

  /** Handoffs for the operator, most recently changed first; `state` a state, `expired` or `open`. */
  async operatorList(q: { state?: string | undefined; limit?: number }) {
    const now = this.deps.clock.now()
    const rows = await store.listForOperator(this.deps.database.db, now, {
      state: q.state,
      limit: q.limit ?? 200,
    })
    return rows.map((r) => ({
      id: r.id,
      state: r.state,
      version: r.version,
      ended: r.ended === 1,
      expired: isExpired(r, now),
      note: r.note,
      states: (parseStored(r.machine) as { states?: string[] } | null)?.states ?? [],
      createdAt: isoOrNull(r.created_at),
      updatedAt: isoOrNull(r.updated_at),
      expiresAt: isoOrNull(r.expires_at),
    }))
  }

  /** One handoff for the operator with its machine and its moves; no tokens, and no payload. */
  async operatorRead(id: string) {
    const db = this.deps.database.db
    const now = this.deps.clock.now()
    const row = await store.findForOperator(db, id)
    if (!row) return undefined
    const moves = await store.listMoves(db, id)
    return {
      id: row.id,
      state: row.state,
      version: row.version,
      ended: row.ended === 1,
      expired: isExpired(row, now),
      note: row.note,
      hasNotifyUrl: row.notify_url !== null,
      machine: parseStored(row.machine),
      payloadChars: num(row.payload_chars),
      createdAt: isoOrNull(row.created_at),
      updatedAt: isoOrNull(row.updated_at),
      expiresAt: isoOrNull(row.expires_at),
      history: moves.map((m) => ({
        version: m.version,
        from: m.from_state,
        to: m.to_state,
        actor: m.actor,
        note: m.note,
        at: isoOrNull(m.at),
      })),
    }
  }

  /** A handoff's payload, only when the operator asks for it. */
  async operatorPayload(id: string) {
    const payload = await store.findPayload(this.deps.database.db, id)
    return payload === undefined ? undefined : { id, payload: parseStored(payload) }
  }
}

/** One handoff wait: what its shared functions need of the caller. */
interface HandoffWaiter {
  id: string
  token: string
  /** The version the caller has seen; none: the first read's. */
  seen: number | undefined
  waitMs: number
}

/** One read of a waited-on handoff, shared by its waiters. */
interface SharedHandoff {
  row: HandoffRow
  view: HandoffView
}

// Every move raises the version; the rest of a row a view shows changes only with a move, except
// the expiry (a TTL is set at creation) and the tokens, compared too so nothing stale answers.
function sameHandoffRow(a: HandoffRow, b: HandoffRow): boolean {
  return (
    a.version === b.version &&
    a.expires_at === b.expires_at &&
    a.owner_token_hash === b.owner_token_hash &&
    a.receiver_token_hash === b.receiver_token_hash
  )
}

function changedSince(w: HandoffWaiter, v: HandoffView, first: HandoffView): boolean {
  return v.version > (w.seen ?? first.version)
}

/** One move as asked for: the handoff, the state to enter, the body and the token. */
interface MoveRequest {
  id: string
  to: string
  body: AdvanceInput
  token: string
  /** The W3C trace context of the request, recorded with the move. */
  trace?: HandedTrace | undefined
}

/** A move predicted to commit, with what the prediction found. */
interface FastMove extends MoveRequest {
  predicted: PredictedMove
}

/** What a token check and a move decision need of a handoff row. */
type AccessRow = Pick<HandoffRow, 'owner_token_hash' | 'receiver_token_hash' | 'expires_at'>
type MoveRow = Pick<HandoffRow, 'state' | 'version' | 'ended'>

/**
 * The rules of one move (seed 002), decided on the handoff as the transaction sees it: both
 * names must be states of its machine; a nonce already committed answers that move again (or is
 * a conflict if it named another move); otherwise the move commits only from exactly `from` and
 * over an allowed step.
 */
function decideMove(
  row: MoveRow,
  machine: Machine,
  to: string,
  body: AdvanceInput,
  prior: HandoffMoveRow | undefined,
): { repeat: HandoffMoveRow; ended?: undefined } | { repeat?: undefined; ended: boolean } {
  for (const [field, name] of [
    ['state', to],
    ['from', body.from],
  ] as const) {
    if (!machine.states.includes(name)) {
      throw new BatonError(
        'unknown_state',
        `${JSON.stringify(name)} is not a state of this handoff`,
        {
          field,
          states: machine.states,
        },
      )
    }
  }
  if (prior) {
    if (prior.to_state !== to || prior.from_state !== body.from) {
      throw new BatonError(
        'idempotency_conflict',
        `Nonce ${JSON.stringify(body.nonce)} already committed ${prior.from_state} -> ${prior.to_state}`,
        conflictContext(row, machine),
      )
    }
    return { repeat: prior }
  }
  if (row.state !== body.from) {
    throw new BatonError(
      'state_conflict',
      `Handoff is in state ${row.state}, not ${body.from}`,
      conflictContext(row, machine),
    )
  }
  if (!allowedNext(machine, row.state).includes(to)) {
    throw new BatonError(
      'transition_not_allowed',
      `Handoff cannot move from ${row.state} to ${to}`,
      {
        ...conflictContext(row, machine),
        allowed_next: allowedNext(machine, row.state),
      },
    )
  }
  return { ended: isFinal(machine, to) }
}

function missingToken(): BatonError {
  return new BatonError('token_missing', 'No bearer token was sent')
}

function notFound(id: string): BatonError {
  return new BatonError('handoff_not_found', `No handoff ${JSON.stringify(id)} for this token`)
}

function conflictContext(row: MoveRow, machine: Machine): Record<string, unknown> {
  return {
    state: row.state,
    version: row.version,
    ended: row.ended === 1,
    allowed_next: allowedNext(machine, row.state),
  }
}

function toMoveView(m: HandoffMoveRow): MoveView {
  return {
    from: m.from_state,
    to: m.to_state,
    version: m.version,
    by: m.actor as MoveView['by'],
    nonce: m.nonce,
    note: m.note,
    at: iso(m.at),
  }
}

function toMoveResult(
  move: HandoffMoveRow,
  machine: Machine,
  current: MoveRow,
  repeated: boolean,
): MoveResultView {
  return {
    handoff_id: move.handoff_id,
    state: move.to_state,
    version: move.version,
    ended: isFinal(machine, move.to_state),
    from: move.from_state,
    by: move.actor as MoveView['by'],
    nonce: move.nonce,
    at: iso(move.at),
    repeated,
    current_state: current.state,
    current_version: current.version,
    current_ended: current.ended === 1,
  }
}

function toView(row: HandoffRow, moves: HandoffMoveRow[]): HandoffView {
  const machine = JSON.parse(row.machine) as Machine
  return {
    handoff_id: row.id,
    state: row.state,
    version: row.version,
    ended: row.ended === 1,
    payload: JSON.parse(row.payload),
    note: row.note,
    machine,
    allowed_next: allowedNext(machine, row.state),
    history: moves.map(toMoveView),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    expires_at: iso(row.expires_at),
    // The trace of the latest write: the last move, or the creation until a move replaces it.
    ...traceFields(moves.at(-1) ?? row),
  }
}

/** seed 002: a handoff past its expiry is expired at once, whatever cleanup has done. */
export const isExpired = (row: { expires_at: number }, now: number) => row.expires_at <= now
