import { randomBytes } from 'node:crypto'
import {
  type AckView,
  BatonError,
  canonicalJson,
  createMessageBodyDigest,
  createMessageReceipt,
  type InboxQuery,
  MESSAGE_LIMITS,
  type MessagePageView,
  type MessageView,
  RECEIPT_VERSION,
  type SendMessageInput,
  type SentMessageView,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { ed25519Signer, nodeDigest } from '../crypto.js'
import type { EventBus } from '../events/bus.js'
import type { WaitRegistry, WaitSignal } from '../events/wait.js'
import { assertAdmitted, principalTopic } from '../identity/admission.js'
import type { HubSigner } from '../identity/hub-key.js'
import type { IdentityService } from '../identity/service.js'
import type { Database } from '../store/database.js'
import { activitySeries, iso as isoOrNull, num, parseStored } from '../store/operator-reads.js'
import { consumeDailyQuotasUpTo, quotaExceeded } from '../store/quota.js'
import type { MessageRow } from '../store/schema.js'
import type { BatchGroup, Carrying, GroupOutcome, Tx, WriteBatcher } from '../store/transaction.js'
import { traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'

/** What the message service needs from the rest of the hub. */
/** A send as `sendMany` writes it: checked, its body made canonical and digested. */
interface PendingSend {
  sender: string
  msg: SendMessageInput
  canonical: string
  digest: string
  trace: Carrying['trace']
}

export interface MessageDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: Config['messages']
  /** Messages a principal may send per UTC day. */
  messagesPerDay: number
  /** The hub's key, which signs every receipt. */
  signer: HubSigner
  /** Every long poll of the hub; answers waiters when the hub begins shutting down. */
  waits: WaitRegistry
  /** Whose admission decides whether a recipient may be sent to. */
  identity: Pick<IdentityService, 'findPrincipals'>
}

/** The quota scope counting a principal's sent messages. */
export const MESSAGE_QUOTA_SCOPE = 'messages.send'

/** The event topic of a principal's inbox; an event is a hint to re-read. */
export const inboxTopic = (principal: string) => `inbox:${principal}`

/** The event topic of a sender's sent messages (acknowledgements). */
export const outboxTopic = (principal: string) => `outbox:${principal}`

const ID_RE = /^msg_[A-Za-z0-9_-]{22}$/
const iso = (ms: number) => new Date(ms).toISOString()

/** One inbox long poll: the page it asked for and how long it waits. */
interface InboxWaiter {
  recipient: string
  after: number
  limit: number
  unacked: boolean
  waitMs: number
}

/**
 * One read of an inbox, shared by every waiter on it whatever its cursor and page size: the
 * messages after `base` (the inbox's newest sequence when the first waiter came), oldest first.
 */
interface SharedInbox {
  base: number
  messages: MessageView[]
  /** More messages after `base` than one read holds. */
  full: boolean
}

// Messages one shared read holds; a waiter whose page may go past them reads its own page.
const SHARED_MESSAGES = MESSAGE_LIMITS.maxPageSize

// A waiter's view that the shared read cannot answer: it reads its own page (see `waitFns`).
const OWN_READ = Symbol('own read')
type InboxWaitView = MessageView[] | typeof OWN_READ

/**
 * Durable messages between admitted agents (seed 000): idempotency keys, one global sequence,
 * hub-signed receipts, inbox cursors, long-poll waits and acknowledgements. HTTP and MCP call
 * these same functions with the verified principal.
 */
export class MessageService {
  /** When each principal last started a read that found nothing, for the poll floor. */
  private readonly emptyPolls = new Map<string, number>()

  constructor(private readonly deps: MessageDeps) {}

  /**
   * Sends a message. seed 000: a repeat with the same recipient, body and idempotencyKey answers
   * the same id and the same receipt bytes; the key with anything else is `idempotency_conflict`.
   * `msg` is parsed by the operation's schema; the depth and the canonical size are checked here.
   */
  async send(
    sender: string,
    msg: SendMessageInput,
    { carry, trace }: Carrying = {},
  ): Promise<SentMessageView> {
    if (nestsDeeperThan(msg.body, MESSAGE_LIMITS.maxDepth)) {
      throw new BatonError(
        'invalid_request',
        `The body nests arrays and objects deeper than ${MESSAGE_LIMITS.maxDepth} levels`,
        { field: 'body', max_depth: MESSAGE_LIMITS.maxDepth },
      )
    }
    const canonical = canonicalJson(msg.body)
    const size = Buffer.byteLength(canonical, 'utf8')
    const limit = this.deps.config.maxBodyBytes
    if (size > limit) {
      throw new BatonError(
        'message_too_large',
        `The body is ${size} bytes as canonical JSON; at most ${limit} are accepted`,
        { limit, size },
      )
    }
    const digest = createMessageBodyDigest(msg.body, nodeDigest)
    return this.deps.batcher.runIn(
      this.sends,
      { sender, msg, canonical, digest, trace },
      // Two sends raced on one key (another instance): the loser rolled back; now it finds the winner.
      { rerunOnUniqueViolation: true, ...(carry ? { carry } : {}) },
    )
  }

  /** Sends that arrive together, written set-based in one transaction (`sendMany`). */
  private readonly sends: BatchGroup<PendingSend, SentMessageView> = {
    many: (db, inputs) => this.sendMany(db, inputs),
  }

  /**
   * Writes many sends at once: one read of the keys already used, one of the recipients, one
   * step of the global sequence for all, the daily quotas counted per sender as far as each
   * allows, and one insert of every message; each answered in order as its own send would be.
   */
  private async sendMany(
    db: Tx['db'],
    inputs: PendingSend[],
  ): Promise<GroupOutcome<SentMessageView>[]> {
    const now = this.deps.clock.now()
    const keyOf = (sender: string, key: string) => `${sender}\0${key}`
    const prior = new Map(
      (
        await store.findBySenderKeys(
          db,
          inputs.map((i) => ({ sender: i.sender, idempotencyKey: i.msg.idempotencyKey })),
        )
      ).map((r) => [keyOf(r.sender, r.idempotency_key), r]),
    )
    const admitted = new Set(
      (
        await this.deps.identity.findPrincipals(db, [
          ...new Set(inputs.map((i) => i.msg.recipient)),
        ])
      )
        .filter((r) => r.state === 'approved')
        .map((r) => r.principal),
    )
    // What each input is: a repeat of a stored (or earlier in this batch) send, a refusal, or new.
    type Plan =
      | { repeat: MessageRow }
      | { error: BatonError }
      | { fresh: true }
      | { sameAs: number }
    const firstOfKey = new Map<string, number>()
    const plans: Plan[] = inputs.map((input, i) => {
      const key = keyOf(input.sender, input.msg.idempotencyKey)
      const stored = prior.get(key)
      if (stored) return this.repeatOf(stored, input)
      const earlier = firstOfKey.get(key)
      if (earlier !== undefined) return { sameAs: earlier }
      firstOfKey.set(key, i)
      if (!admitted.has(input.msg.recipient)) {
        // Pending, rejected and suspended keys answer like unknown ones: no probing of admission.
        return {
          error: new BatonError('recipient_unknown', 'No admitted agent has this principal', {
            field: 'recipient',
          }),
        }
      }
      return { fresh: true }
    })
    const uses = new Map<string, number>()
    inputs.forEach((input, i) => {
      if ('fresh' in plans[i]!) uses.set(input.sender, (uses.get(input.sender) ?? 0) + 1)
    })
    const counted = await consumeDailyQuotasUpTo(db, {
      scope: MESSAGE_QUOTA_SCOPE,
      uses,
      limit: this.deps.messagesPerDay,
      now,
    })
    const nth = new Map<string, number>()
    inputs.forEach((input, i) => {
      if (!('fresh' in plans[i]!)) return
      const k = (nth.get(input.sender) ?? 0) + 1
      nth.set(input.sender, k)
      if (k > counted.get(input.sender)!) {
        plans[i] = { error: quotaExceeded(MESSAGE_QUOTA_SCOPE, this.deps.messagesPerDay, now) }
      }
    })
    const fresh = inputs.flatMap((_input, i) => ('fresh' in plans[i]! ? [i] : []))
    let sequence = fresh.length > 0 ? await store.nextSequences(db, fresh.length) : 0
    const rows = new Map<number, MessageRow>()
    for (const i of fresh) {
      const { sender, msg, canonical, digest, trace } = inputs[i]!
      const id = `msg_${randomBytes(16).toString('base64url')}`
      const receipt = createMessageReceipt(
        {
          v: RECEIPT_VERSION,
          messageId: id,
          sequence,
          sender,
          recipient: msg.recipient,
          bodyDigest: digest,
          createdAt: iso(now),
        },
        { kid: this.deps.signer.kid, sign: ed25519Signer(this.deps.signer.privateKey) },
      )
      rows.set(i, {
        id,
        sequence: sequence++,
        sender,
        recipient: msg.recipient,
        body: canonical,
        body_digest: digest,
        idempotency_key: msg.idempotencyKey,
        receipt,
        created_at: now,
        acked_at: null,
        ...traceColumns(trace),
      })
    }
    await store.insertMessages(db, [...rows.values()])
    return inputs.map((input, i): GroupOutcome<SentMessageView> => {
      const row = rows.get(i)
      if (row) {
        return {
          ok: true,
          value: toSent(row),
          after: () =>
            this.deps.bus.publish({
              topic: inboxTopic(row.recipient),
              type: 'message.created',
              at: now,
              data: { id: row.id, sequence: row.sequence },
            }),
        }
      }
      const plan = plans[i]!
      if ('repeat' in plan) return { ok: true, value: toSent(plan.repeat) }
      if ('error' in plan) return { ok: false, error: plan.error }
      if ('fresh' in plan) throw new Error('a fresh send has its row')
      // A repeat of a send earlier in this batch: answered as that send is.
      const earlier = rows.get(plan.sameAs)
      const first = plans[plan.sameAs]!
      if (!earlier)
        return {
          ok: false,
          error:
            'error' in first
              ? first.error
              : quotaExceeded(MESSAGE_QUOTA_SCOPE, this.deps.messagesPerDay, now),
        }
      const again = this.repeatOf(earlier, input)
      return 'repeat' in again ? { ok: true, value: toSent(again.repeat) } : { ok: false, ...again }
    })
  }

  /** A send under a key already used: the stored answer when it is the same send, else a conflict. */
  private repeatOf(
    stored: MessageRow,
    input: PendingSend,
  ): { repeat: MessageRow } | { error: BatonError } {
    if (stored.recipient === input.msg.recipient && stored.body_digest === input.digest) {
      return { repeat: stored }
    }
    return {
      error: new BatonError(
        'idempotency_conflict',
        'This idempotencyKey already sent a different message (another recipient or body)',
        { id: stored.id, field: 'idempotencyKey' },
      ),
    }
  }

  /**
   * Reads the caller's own inbox after an exclusive global sequence, oldest first. With `wait`
   * it answers as soon as a message for the caller commits, or empty when the time is up.
   */
  async list(
    recipient: string,
    {
      after = 0,
      limit = MESSAGE_LIMITS.defaultPageSize,
      unacked = false,
      wait = 0,
    }: InboxQuery = {},
    signal?: WaitSignal,
    address?: string,
  ): Promise<MessagePageView> {
    const waitMs = Math.min(wait, this.deps.config.maxWaitSeconds) * 1000
    const startedAt = this.deps.clock.now()
    this.assertPollInterval(recipient, startedAt)
    const waiter: InboxWaiter = { recipient, after, limit, unacked, waitMs }
    const messages =
      waitMs === 0 ? await this.readPage(waiter) : await this.waitFor(waiter, signal, address)
    if (messages.length === 0) this.rememberEmptyPoll(recipient, startedAt)
    else this.emptyPolls.delete(recipient)
    return { messages, nextAfter: messages.at(-1)?.sequence ?? after }
  }

  private async readPage(q: InboxWaiter): Promise<MessageView[]> {
    const rows = await store.listInbox(this.deps.database.db, q)
    return rows.map(toMessageView)
  }

  /** Acknowledges a message addressed to the caller; a repeat answers the first ackedAt. */
  async ack(recipient: string, id: string, { carry }: Carrying = {}): Promise<AckView> {
    if (!ID_RE.test(id)) throw notFound(id)
    const row = await this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const changed = await store.markAcked(tx.db, id, recipient, now)
      const current = await store.findForRecipient(tx.db, id, recipient)
      if (!current) throw notFound(id)
      if (changed) {
        tx.afterCommit(() =>
          this.deps.bus.publish({
            topic: outboxTopic(current.sender),
            type: 'message.acked',
            at: now,
            data: { id, sequence: current.sequence },
          }),
        )
      }
      return current
    })
    return { id: row.id, sequence: row.sequence, ackedAt: iso(row.acked_at!) }
  }

  /**
   * The hub's own poll floor: a read that starts less than the minimum interval after the
   * caller's last read that found nothing is refused with Retry-After. Reads that find messages
   * (paging through a backlog) are not held back. seed 000 asks agents for 30 s between polls.
   */
  private assertPollInterval(principal: string, now: number): void {
    const min = this.deps.config.pollMinIntervalMs
    const last = this.emptyPolls.get(principal)
    if (min === 0 || last === undefined || now - last >= min) return
    const retryAfter = Math.max(1, Math.ceil((last + min - now) / 1000))
    throw new BatonError(
      'rate_limited',
      `Poll the inbox at most once per ${min} ms when it is empty`,
      { retry_after: retryAfter, min_interval_ms: min },
      { 'retry-after': String(retryAfter) },
    )
  }

  private rememberEmptyPoll(principal: string, at: number): void {
    const min = this.deps.config.pollMinIntervalMs
    if (min === 0) return
    if (this.emptyPolls.size >= 10_000) {
      for (const [p, t] of this.emptyPolls) if (at - t >= min) this.emptyPolls.delete(p)
    }
    this.emptyPolls.set(principal, at)
  }

  /**
   * Waits for the caller's inbox to hold something new. Every waiter on one inbox (and one
   * `unacked`) shares one read per change, whatever its cursor and page size, and each read
   * checks first that the caller is still admitted, so a suspension ends the wait with the
   * refusal a new request would get, never with messages.
   */
  private async waitFor(
    waiter: InboxWaiter,
    signal?: WaitSignal,
    address?: string,
  ): Promise<MessageView[]> {
    const topic = inboxTopic(waiter.recipient)
    const { last } = await this.deps.waits.wait({
      key: `${topic} ${waiter.unacked}`,
      topics: [topic, principalTopic(waiter.recipient)],
      ...this.waitFns,
      viewKey: `${waiter.after} ${waiter.limit}`,
      // Not changesOnlyWithEvents: an acknowledgement changes what an inbox read answers and is
      // published on the sender's outbox, so a joining waiter reads (one read per joining burst).
      data: waiter,
      address,
      signal,
    })
    return last === OWN_READ ? this.readPage(waiter) : last
  }

  // The functions of every inbox wait, made once: a waiter is only its `InboxWaiter` record.
  private readonly waitFns = {
    // The first read of an inbox's waiters only finds where the inbox ends; later ones read what
    // came after that. A read that finds what the last one found answers that same value.
    read: async (w: InboxWaiter, previous: SharedInbox | undefined): Promise<SharedInbox> => {
      const { db } = this.deps.database
      await assertAdmitted(db, w.recipient)
      if (!previous) {
        return { base: await store.inboxTop(db, w), messages: [], full: false }
      }
      const rows = await store.listInbox(db, {
        recipient: w.recipient,
        after: previous.base,
        limit: SHARED_MESSAGES + 1,
        unacked: w.unacked,
      })
      const full = rows.length > SHARED_MESSAGES
      if (full) rows.length = SHARED_MESSAGES
      if (full === previous.full && sameMessages(previous.messages, rows)) return previous
      return { base: previous.base, messages: rows.map(toMessageView), full }
    },
    view: (shared: SharedInbox, w: InboxWaiter): InboxWaitView => {
      // Messages at or before `base` are not in the read: a cursor before it reads its own page
      // (it has messages, so it answers at once, as a read without a wait would).
      if (w.after < shared.base) return OWN_READ
      const page: MessageView[] = []
      for (const m of shared.messages) {
        if (m.sequence <= w.after) continue
        page.push(m)
        if (page.length === w.limit) return page
      }
      return shared.full ? OWN_READ : page
    },
    ready: (v: InboxWaitView) => v === OWN_READ || v.length > 0,
    timeoutMs: (_first: InboxWaitView, w: InboxWaiter) => w.waitMs,
  }

  /** How many messages wait unacknowledged, and messages per minute over the last hour. */
  async operatorCounts(): Promise<{ unacked: number; sent: number[] }> {
    const db = this.deps.database.db
    const [unacked, sent] = await Promise.all([
      store.countUnacked(db),
      activitySeries(db, 'messages', 'created_at', this.deps.clock.now()),
    ])
    return { unacked, sent }
  }

  /** Per recipient: how many messages, how many wait unacknowledged, where its sequence is. */
  async operatorSummary() {
    return (await store.recipientSummary(this.deps.database.db)).map((r) => ({
      principal: r.recipient,
      total: num(r.total),
      unacked: num(r.unacked),
      lastSequence: num(r.last_sequence),
      oldestUnackedSequence: r.oldest_unacked === null ? null : num(r.oldest_unacked),
      lastAt: isoOrNull(num(r.last_at)),
    }))
  }

  /** Messages to or from a principal, for the operator: metadata only, never bodies. */
  async operatorList(principal: string) {
    return (await store.listForOperator(this.deps.database.db, principal)).map((m) => ({
      id: m.id,
      sequence: num(m.sequence),
      sender: m.sender,
      recipient: m.recipient,
      direction: m.recipient === principal ? 'in' : 'out',
      bodyDigest: m.body_digest,
      bodyChars: num(m.body_chars),
      createdAt: isoOrNull(m.created_at),
      ackedAt: isoOrNull(m.acked_at),
    }))
  }

  /** One message's body, only when the operator asks for it. */
  async operatorBody(id: string) {
    const body = await store.findBody(this.deps.database.db, id)
    return body === undefined ? undefined : { id, body: parseStored(body) }
  }
}

/** Whether rows read now are the messages read before, acknowledgements included. */
function sameMessages(before: MessageView[], rows: MessageRow[]): boolean {
  if (before.length !== rows.length) return false
  return rows.every((r, i) => {
    const m = before[i]!
    return m.id === r.id && (m.ackedAt === null) === (r.acked_at === null)
  })
}

/** Tells, without recursion, whether a parsed JSON value nests deeper than `max` levels. */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (v === null || typeof v !== 'object') continue
    if (depth + 1 > max) return true
    for (const child of Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

function notFound(id: string): BatonError {
  return new BatonError('message_not_found', `No message ${JSON.stringify(id)} in your inbox`)
}

function toSent(row: MessageRow): SentMessageView {
  return {
    id: row.id,
    sequence: row.sequence,
    sender: row.sender,
    recipient: row.recipient,
    bodyDigest: row.body_digest,
    createdAt: iso(row.created_at),
    receipt: row.receipt,
  }
}

function toMessageView(row: MessageRow): MessageView {
  return {
    id: row.id,
    sequence: row.sequence,
    sender: row.sender,
    recipient: row.recipient,
    body: JSON.parse(row.body),
    createdAt: iso(row.created_at),
    ackedAt: row.acked_at === null ? null : iso(row.acked_at),
    ...traceFields(row),
  }
}
