import {
  AdvanceInput,
  BatonError,
  type CreatedHandoffView,
  CreateHandoffInput,
  type HandoffView,
  type MoveResultView,
  type MoveView,
  type NotifySignal,
  StateName,
  type WaitView,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import { recallAnswer, rememberAnswer, requestHash } from '../store/idempotency.js'
import { consumeDailyQuota } from '../store/quota.js'
import type { HandoffMoveRow, HandoffRow } from '../store/schema.js'
import type { Tx, WriteBatcher } from '../store/transaction.js'
import { parseInput } from '../validation.js'
import { allowedNext, isFinal, type Machine, parseMachine } from './machine.js'
import { checkNotifyUrl } from './notify.js'
import * as store from './store.js'
import { hashToken, isHandoffId, matchToken, newHandoffId, newToken } from './tokens.js'

/** Who is calling, as far as a token handoff cares. */
export interface CallerContext {
  /** The client address, for the per-IP creation quota. */
  ip: string
  /** An Idempotency-Key the caller sent with a create. */
  idempotencyKey?: string | undefined
}

/** Where committed moves are signalled; delivery is best effort and never blocks a move. */
export interface NotifySink {
  enqueue(url: string, signal: NotifySignal): void
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
  /** Resolves when the hub begins shutting down, releasing waiters. */
  closing: Promise<void>
  onMove?: (outcome: 'moved' | 'repeated' | 'conflict') => void
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
  constructor(private readonly deps: HandoffDeps) {}

  /** Creates a handoff; a repeat with the same Idempotency-Key and body answers the first result. */
  async create(input: unknown, caller: CallerContext): Promise<CreatedHandoffView> {
    const body = parseInput(CreateHandoffInput, input)
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
    if (body.note !== undefined && body.note.length > config.maxNoteChars) {
      throw new BatonError('invalid_request', `The note is longer than ${config.maxNoteChars}`, {
        field: 'note',
      })
    }
    const machine = parseMachine(body, config.maxStates)
    if (body.notify_url !== undefined)
      checkNotifyUrl(body.notify_url, this.deps.allowLoopbackNotify)

    const key = caller.idempotencyKey
    const reqHash = key ? requestHash(body) : ''
    const run = () =>
      this.deps.batcher.run(async (tx) => {
        const now = this.deps.clock.now()
        if (key) {
          const prior = await recallAnswer<CreatedHandoffView>(tx.db, {
            scope: 'handoff.create',
            key,
            requestHash: reqHash,
            now,
          })
          if (prior) return prior.body
        }
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
        await store.insertHandoff(tx.db, {
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
        })
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
        if (key) {
          await rememberAnswer(tx.db, {
            scope: 'handoff.create',
            key,
            requestHash: reqHash,
            now,
            status: 201,
            body: view,
          })
        }
        tx.afterCommit(() =>
          this.deps.bus.publish({
            topic: handoffTopic(id),
            type: 'handoff.created',
            at: now,
            data: { handoff_id: id, state, version: 1, ended: false },
          }),
        )
        return view
      })
    try {
      return await run()
    } catch (error) {
      // Two creates raced on one Idempotency-Key: the loser rolled back; now it finds the winner.
      if (key && this.deps.database.caps.isUniqueViolation(error)) return run()
      throw error
    }
  }

  /** Reads a handoff with either token. */
  async read(id: string, token: string | undefined): Promise<HandoffView> {
    const { row } = await this.authorize(this.deps.database.db, id, token)
    const moves = await store.listMoves(this.deps.database.db, id)
    return toView(row, moves)
  }

  /**
   * Moves a handoff to `to`, only from exactly `input.from` over an allowed step (seed 002).
   * A repeat with the same nonce answers the committed move with `repeated: true`.
   */
  async advance(
    id: string,
    to: string,
    input: unknown,
    token: string | undefined,
  ): Promise<MoveResultView> {
    const body = parseInput(AdvanceInput, input)
    const target = StateName.safeParse(to)
    if (!target.success) {
      throw new BatonError('unknown_state', `${JSON.stringify(to)} is not a state name`, {
        field: 'state',
      })
    }
    if (!token) throw missingToken()
    if (!isHandoffId(id)) throw notFound(id)
    try {
      const result = await this.deps.batcher.run((tx) => this.moveIn(tx, id, to, body, token))
      this.deps.onMove?.(result.repeated ? 'repeated' : 'moved')
      return result
    } catch (error) {
      if (error instanceof BatonError && error.status === 409) this.deps.onMove?.('conflict')
      throw error
    }
  }

  private async moveIn(
    tx: Tx,
    id: string,
    to: string,
    body: AdvanceInput,
    token: string,
  ): Promise<MoveResultView> {
    const now = this.deps.clock.now()
    const { row, actor, machine } = await this.authorize(tx.db, id, token)
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
    if (body.nonce !== undefined) {
      const prior = await store.findMoveByNonce(tx.db, id, body.nonce)
      if (prior) {
        if (prior.to_state !== to || prior.from_state !== body.from) {
          throw new BatonError(
            'idempotency_conflict',
            `Nonce ${JSON.stringify(body.nonce)} already committed ${prior.from_state} -> ${prior.to_state}`,
            conflictContext(row, machine),
          )
        }
        return toMoveResult(prior, machine, row, true)
      }
    }
    // seed 002: a move commits only from exactly the stated state, over an allowed step.
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
        { ...conflictContext(row, machine), allowed_next: allowedNext(machine, row.state) },
      )
    }
    const ended = isFinal(machine, to)
    const moved = await store.casMove(tx.db, {
      id,
      from: body.from,
      to,
      expectVersion: row.version,
      ended,
      at: now,
    })
    if (!moved) {
      // Another instance committed first; answer from what it committed.
      return this.moveIn(tx, id, to, body, token)
    }
    const move: HandoffMoveRow = {
      handoff_id: id,
      version: row.version + 1,
      from_state: body.from,
      to_state: to,
      actor,
      nonce: body.nonce ?? null,
      note: body.note ?? null,
      at: now,
    }
    await store.insertMove(tx.db, move)
    const after: HandoffRow = { ...row, state: to, version: move.version, ended: ended ? 1 : 0 }
    tx.afterCommit(() => {
      const signal: NotifySignal = {
        handoff_id: id,
        state: to,
        version: move.version,
        ended,
        at: iso(now),
      }
      this.deps.bus.publish({
        topic: handoffTopic(id),
        type: 'handoff.moved',
        at: now,
        data: { ...signal },
      })
      if (row.notify_url) this.deps.notify.enqueue(row.notify_url, signal)
    })
    return toMoveResult(move, machine, after, false)
  }

  /**
   * Waits up to `seconds` (clamped to the configured maximum) for the handoff to change or end.
   * `seenVersion` is the version the caller last read, so a change in between is not missed.
   */
  async wait(
    id: string,
    token: string | undefined,
    seconds: unknown,
    seenVersion?: unknown,
    signal?: AbortSignal,
  ): Promise<WaitView> {
    const secs = parseWholeNumber(seconds, 'seconds')
    const seen = seenVersion === undefined ? undefined : parseWholeNumber(seenVersion, 'version')
    const waitMs = Math.min(secs, this.deps.config.maxWaitSeconds) * 1000
    let wake: () => void = () => {}
    let woken = new Promise<void>((r) => {
      wake = r
    })
    const unsubscribe = this.deps.bus.subscribe(handoffTopic(id), () => wake())
    try {
      const first = await this.read(id, token)
      const since = seen ?? first.version
      if (first.version > since || first.ended || waitMs === 0) {
        return { ...first, changed: first.version > since }
      }
      const untilExpiry = Date.parse(first.expires_at) - this.deps.clock.now()
      let timer: NodeJS.Timeout | undefined
      let done = false
      const timeout = new Promise<void>((r) => {
        timer = setTimeout(r, Math.max(0, Math.min(waitMs, untilExpiry)))
      }).then(() => {
        done = true
      })
      const stop = Promise.race([
        new Promise<void>((r) => signal?.addEventListener('abort', () => r(), { once: true })),
        this.deps.closing,
      ]).then(() => {
        done = true
      })
      try {
        // An event is a hint: re-read, and keep waiting if this handoff has not really changed.
        for (;;) {
          await Promise.race([woken, timeout, stop])
          // Re-arm before re-reading, so an event during the read is not lost.
          woken = new Promise<void>((r) => {
            wake = r
          })
          const current = await this.read(id, token)
          if (done || current.version > since || current.ended) {
            return { ...current, changed: current.version > since }
          }
        }
      } finally {
        clearTimeout(timer)
      }
    } finally {
      unsubscribe()
    }
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
    const row = await store.findHandoff(db, id)
    // A wrong token answers exactly like a missing handoff, so ids cannot be probed.
    const actor = row
      ? matchToken(token, { owner: row.owner_token_hash, receiver: row.receiver_token_hash })
      : undefined
    if (!row || !actor) throw notFound(id)
    if (row.expires_at <= this.deps.clock.now()) {
      throw new BatonError('handoff_expired', `Handoff ${id} expired at ${iso(row.expires_at)}`, {
        expired_at: iso(row.expires_at),
      })
    }
    return { row, actor, machine: JSON.parse(row.machine) as Machine }
  }
}

function missingToken(): BatonError {
  return new BatonError('token_missing', 'No bearer token was sent')
}

function notFound(id: string): BatonError {
  return new BatonError('handoff_not_found', `No handoff ${JSON.stringify(id)} for this token`)
}

function parseWholeNumber(value: unknown, field: string): number {
  const n = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new BatonError('invalid_request', `${field} must be a whole number of at least 0`, {
      field,
    })
  }
  return n
}

function conflictContext(row: HandoffRow, machine: Machine): Record<string, unknown> {
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
  current: HandoffRow,
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
  }
}
