import { createHash, randomBytes, randomUUID } from 'node:crypto'
import {
  A2A_INTERRUPTED_STATES,
  A2A_LIST_PAGE_SIZE,
  A2A_RELAY_EXTENSION_URI,
  A2A_TERMINAL_STATES,
  type A2aArtifact,
  type A2aGetTaskInput,
  type A2aListTasksInput,
  type A2aMessage,
  type A2aPushConfig,
  type A2aPushConfigRef,
  type A2aPushConfigView,
  type A2aRelayUpdate,
  type A2aSendMessageParams,
  type A2aSetPushConfigInput,
  type A2aStreamEvent,
  type A2aTaskState,
  type A2aTaskStatusView,
  type A2aTaskView,
  BatonError,
  toA2aPageToken,
} from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { A2aConfig } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { WaitRegistry, WaitSignal } from '../events/wait.js'
import { checkNotifyUrl, newEventId, notifyTarget } from '../handoffs/notify.js'
import type { IdentityService } from '../identity/service.js'
import type { Database } from '../store/database.js'
import { requestHash } from '../store/idempotency.js'
import { countStates, iso as isoOrNull, num, parseStored } from '../store/operator-reads.js'
import { changeStoredBytes, consumeDailyQuota, tryChangeStoredBytes } from '../store/quota.js'
import type {
  A2aArtifactRow,
  A2aEventRow,
  A2aPushConfigRow,
  A2aPushQueueRow,
  A2aTaskRow,
  NotifyOutboxRow,
  Schema,
} from '../store/schema.js'
import { type Carrying, type Tx, transaction, type WriteBatcher } from '../store/transaction.js'
import { type HandedTrace, traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'

/** What the A2A service needs from the rest of the hub. */
export interface A2aDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  waits: WaitRegistry
  /**
   * Delivers push notifications: the fan-out of a committed send adds its signals to the outbox
   * in its own transaction, then kicks delivery.
   */
  notify: {
    kick(): void
    enqueue(db: Kysely<Schema>, rows: Omit<NotifyOutboxRow, 'seq'>[]): Promise<void>
  }
  allowLoopbackNotify: boolean
  /** The caps on push configs and on what one task holds. */
  limits: A2aConfig
  /** The largest message with its metadata, in bytes of JSON: the hub's message limit. */
  maxMessageBytes: number
  /** The stored bytes a principal may hold; its queued push notifications count against it. */
  storedBytesQuota: number
  /** The longest a blocking send or a `currentGeneration` read is held open. */
  maxWaitMs: number
  /** Sends a principal may make per UTC day, counted as its Baton messages are. */
  sendsPerDay: number
  /**
   * Witnesses a signed handoff context carried in a message (seed 003) and answers what rides
   * back in the reply's metadata; refusals are thrown.
   */
  witness?:
    | ((sender: string, agent: string, message: A2aMessage, by: Carrying) => Promise<unknown>)
    | undefined
  /** Whose admission decides whether a new task's addressee is an agent of this hub. */
  identity: Pick<IdentityService, 'findPrincipal'>
  /** Budgets carried by the hops tasks witness: a task that ends closes its hop's budget. */
  budgets?: { close(tx: Tx, hop: string, reason: string, now: number): Promise<void> }
}

/** The reason a task's end gives the budget of the hop it carried (seed 003's nearest states). */
const BUDGET_REASONS: Readonly<Record<string, string>> = {
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_REJECTED: 'rejected',
}

/** The quota scope counting a principal's A2A sends (a repeat of a messageId is not counted). */
export const A2A_SEND_QUOTA_SCOPE = 'a2a.send'

/** The event topic of one A2A task; an event is a hint to re-read. */
export const a2aTaskTopic = (id: string) => `a2a:${id}`

const iso = (ms: number) => new Date(ms).toISOString()
/** Thrown inside a write when another writer moved the task after it was read. */
const MOVED = new Error('a2a task moved')

/** One change to append: its kind and its wire body. */
type Change =
  | { kind: 'created'; message: A2aMessage; status: A2aTaskStatusView }
  | { kind: 'message'; message: A2aMessage; witnessed?: unknown }
  | { kind: 'status'; status: A2aTaskStatusView; witnessed?: unknown }
  | { kind: 'artifact'; artifact: A2aArtifact; append: boolean; lastChunk: boolean }

/** The role of a caller on a task it can see. */
type Role = 'owner' | 'agent'

/**
 * A send as its transaction committed it (the task row it wrote), or the earlier send a repeat
 * names (its task and generation); its answer is read from this after the commit.
 */
interface Sent {
  taskId: string
  generation: number
  row?: A2aTaskRow
  repeated: boolean
}

/** The answer of a send: the task, and whether it is a repeat of an earlier send. */
export interface SendResult {
  task: A2aTaskView
  repeated: boolean
}

/** Events a stream reads at once. */
const STREAM_PAGE = 256

/** Queued sends one fan-out pass takes at once. */
const FAN_OUT_PAGE = 16

/**
 * The last segment of the outbox event id of an A2A notification whose bytes were charged to a
 * principal's stored bytes (its config's owner, named in `charged_to`; before migration 018, the
 * author of its event), so only those are given back when it is delivered or dead.
 */
const CHARGED = 'c'

/**
 * The hub as a durable A2A task relay (issue 16). A task is addressed to an admitted principal
 * (its agent) by the sender that created it (its owner); both may read it and nobody else can
 * tell it from a missing one. Every change appends one event with the next `generation` (A2A
 * dev-1.1, PR 1810) by compare-and-set on the task row, durably, before it is answered; the
 * JSON-RPC face and the operations call these same functions.
 */
export class A2aService {
  private fanning: Promise<void> | undefined
  private fanAgain = false

  constructor(private readonly deps: A2aDeps) {}

  /**
   * `SendMessage`: creates a task addressed to `tenant`, or continues `message.taskId`. The owner
   * sends user messages; the agent sends its replies, status changes and artifacts to its own
   * task (the artifacts and state under {@link A2A_RELAY_EXTENSION_URI}). A repeat of a `messageId`
   * by the same principal answers the first result; the same id with another request is
   * `idempotency_conflict`. A stale `ifGenerationMatch` is `a2a_generation_mismatch`.
   */
  async send(
    principal: string,
    params: A2aSendMessageParams,
    signal?: WaitSignal,
    address?: string,
    { carry, trace }: Carrying = {},
  ): Promise<SendResult> {
    const { message } = params
    const update: A2aRelayUpdate = params.metadata?.[A2A_RELAY_EXTENSION_URI] ?? {}
    checkMessageSize(params, this.deps.maxMessageBytes)
    const expected = params.configuration?.ifGenerationMatch ?? update.ifGenerationMatch
    const hash = requestHash({ ...params, configuration: undefined, expected })
    const push = params.configuration?.taskPushNotificationConfig
    if (push) checkPushConfig(push, this.deps.allowLoopbackNotify)
    const historyLength = params.configuration?.historyLength
    // A repeat, a reused messageId and an unknown addressee are answered before a carried offer
    // is witnessed, so none of them leaves a hop behind.
    const db = this.deps.database.db
    const first = await this.priorSend(db, principal, message.messageId, hash)
    if (first) return { task: await this.answer(db, first, historyLength), repeated: true }
    if (message.taskId === undefined) await this.addressee(this.deps.database.db, params.tenant)
    const witnessed = await this.witness(principal, params, carry)
    const run = () =>
      this.deps.batcher.carrying(carry).run(async (tx): Promise<Sent> => {
        const prior = await this.priorSend(tx.db, principal, message.messageId, hash)
        if (prior) return { ...prior, repeated: true }
        const now = this.deps.clock.now()
        await consumeDailyQuota(tx.db, {
          scope: A2A_SEND_QUOTA_SCOPE,
          subject: principal,
          limit: this.deps.sendsPerDay,
          now,
        })
        const row =
          message.taskId === undefined
            ? await this.create(tx, principal, params, now, witnessed, push, trace)
            : await this.continueTask(tx, principal, params, update, expected, now, witnessed, {
                push,
                trace,
              })
        // By reference: a repeat reads the task as it stood at this generation again.
        await store.insertSend(tx.db, {
          principal,
          message_id: message.messageId,
          request_hash: hash,
          task_id: row.id,
          answer: '',
          generation: row.generation,
          created_at: now,
        })
        return { taskId: row.id, generation: row.generation, row, repeated: false }
      })
    const sent = await this.retryingRace(run)
    // The answer is read after the commit, as a repeat reads it: the send's transaction (the one
    // writer SQLite has) never waits for a view to be read and built.
    const result = { task: await this.answer(db, sent, historyLength), repeated: sent.repeated }
    // A2A 1.0: a send waits for a terminal or interrupted state unless returnImmediately; only
    // the owner's sends wait, since the agent's own sends are that answer. A repeat answers the
    // task as the first send committed it, at once.
    const owner = result.task.metadata[A2A_RELAY_EXTENSION_URI] as { owner?: string }
    const blocking = params.configuration?.returnImmediately !== true
    if (blocking && !result.repeated && owner.owner === principal) {
      return { task: await this.settled(principal, result.task, signal, address), repeated: false }
    }
    return result
  }

  /** `GetTask`; with `currentGeneration` it long-polls until the task's generation passes it. */
  async get(principal: string, params: A2aGetTaskInput, signal?: WaitSignal, address?: string) {
    const db = this.deps.database.db
    const row = await this.visible(db, principal, params.id)
    const current = params.currentGeneration
    if (current === undefined || row.generation > current) {
      return this.view(db, row, params.historyLength)
    }
    const { last } = await this.deps.waits.wait({
      key: `${a2aTaskTopic(row.id)} ${current}`,
      topics: [a2aTaskTopic(row.id)],
      read: () => store.findTask(db, row.id),
      view: (r) => r!,
      ready: (r) => r.generation > current,
      timeoutMs: () => this.deps.maxWaitMs,
      address,
      signal,
    })
    return this.view(db, last, params.historyLength)
  }

  /**
   * `ListTasks`: the tasks the caller sent or is the agent of, most recently changed first. A
   * page also stops before the task that would take it past the page byte budget (each task
   * counted by its stored bytes, known before its view is read), with a `nextPageToken` to go
   * on from; it always holds at least one task.
   */
  async list(principal: string, params: A2aListTasksInput = {}) {
    const limit = params.pageSize ?? A2A_LIST_PAGE_SIZE.default
    const filter = { principal, contextId: params.contextId, state: params.status }
    const before = params.pageToken
    const db = this.deps.database.db
    const rows = await store.listTasks(db, { ...filter, before, limit: limit + 1 })
    const artifacts = params.includeArtifacts === true
    // A view without history or artifacts shows the task's row alone.
    const shows = artifacts || params.historyLength !== 0
    const budget = this.deps.limits.maxListPageBytes
    const page: A2aTaskRow[] = []
    let bytes = 0
    for (const r of rows.slice(0, limit)) {
      const size = shows ? Number(r.stored_bytes) : 0
      if (page.length > 0 && bytes + size > budget) break
      bytes += size
      page.push(r)
    }
    // One task at a time: a page of 100 never queues hundreds of reads on the pool at once.
    const tasks: A2aTaskView[] = []
    for (const r of page) tasks.push(await this.view(db, r, params.historyLength, artifacts))
    const last = page.at(-1)
    const more = rows.length > page.length
    return {
      tasks,
      nextPageToken:
        more && last ? toA2aPageToken({ updatedAt: last.updated_at, id: last.id }) : '',
      pageSize: limit,
      totalSize: await store.countTasks(db, filter),
    }
  }

  /** `CancelTask`: the owner or the agent ends a task that has not ended yet. */
  async cancel(
    principal: string,
    params: { id: string },
    { carry, trace }: Carrying = {},
  ): Promise<A2aTaskView> {
    const task = await this.retryingRace(() =>
      this.deps.batcher.carrying(carry).run(async (tx) => {
        const row = await this.visible(tx.db, principal, params.id, true)
        if (A2A_TERMINAL_STATES.has(row.state)) {
          throw new BatonError('a2a_task_not_cancelable', 'The task has already ended', {
            state: row.state,
            currentGeneration: row.generation,
          })
        }
        const now = this.deps.clock.now()
        const status: A2aTaskStatusView = { state: 'TASK_STATE_CANCELED', timestamp: iso(now) }
        return this.append(tx, row, principal, [{ kind: 'status', status }], now, { trace })
      }),
    )
    return this.view(this.deps.database.db, task)
  }

  /**
   * The events of a visible task after an exclusive generation, for streams and resubscription;
   * `ended` says the stream is over (a terminal or interrupted state with nothing left to send).
   */
  async eventsAfter(principal: string, id: string, after: number) {
    const db = this.deps.database.db
    const row = await this.visible(db, principal, id)
    // A stream resumed from far back reads its events a page at a time, never a whole log at once.
    const events = await store.eventsAfter(db, id, after, STREAM_PAGE)
    const more = events.length === STREAM_PAGE
    return {
      task: row,
      events: events.map((e) => ({ generation: e.generation, event: toStreamEvent(row, e) })),
      more,
      ended: !more && (A2A_TERMINAL_STATES.has(row.state) || A2A_INTERRUPTED_STATES.has(row.state)),
    }
  }

  /** The task as it stands now, for the first event of a stream. */
  async snapshot(principal: string, id: string): Promise<A2aTaskView> {
    const db = this.deps.database.db
    return this.view(db, await this.visible(db, principal, id))
  }

  /** Waits until a visible task's generation passes `after`, or the time is up. */
  async waitForChange(
    principal: string,
    id: string,
    after: number,
    signal?: WaitSignal,
    address?: string,
  ): Promise<number> {
    const db = this.deps.database.db
    const { last } = await this.deps.waits.wait({
      key: `${a2aTaskTopic(id)} ${after}`,
      topics: [a2aTaskTopic(id)],
      read: () => store.findTask(db, id),
      view: (r) => {
        if (!r || (r.owner !== principal && r.agent !== principal)) throw taskNotFound(id)
        return r
      },
      ready: (r) => r.generation > after,
      timeoutMs: () => this.deps.maxWaitMs,
      address,
      signal,
    })
    return last.generation
  }

  /** `CreateTaskPushNotificationConfig`: a party to a task sets a webhook for its changes. */
  async setPushConfig(
    principal: string,
    params: A2aSetPushConfigInput,
    { carry }: Carrying = {},
  ): Promise<A2aPushConfigView> {
    const { taskId } = params
    checkPushConfig(params, this.deps.allowLoopbackNotify)
    const row = await this.deps.batcher.carrying(carry).run(async (tx) => {
      // The task's row lock orders the config writes of both its parties for the per-task cap.
      const task = await this.visible(tx.db, principal, taskId, true)
      // An ended task changes no more: a config would never be used, and would count nowhere.
      if (A2A_TERMINAL_STATES.has(task.state)) {
        throw new BatonError('a2a_task_ended', 'The task has ended; nothing more will be pushed', {
          state: task.state,
          currentGeneration: task.generation,
        })
      }
      return this.putPushConfig(tx, principal, taskId, params)
    })
    return toPushView(row)
  }

  /**
   * Writes a push config checked by {@link checkPushConfig} in the caller's transaction, for a
   * task the caller can see. Both ways to set one come here: `CreateTaskPushNotificationConfig`,
   * and a config in `SendMessage`'s configuration, written in the send's transaction before its
   * events, so the task's creation (or the message that set it) is pushed to it too. The caps
   * are checked before the config is written: per task, per principal (whose usage row, updated
   * first, orders the principal's config writes on every instance) and its distinct hosts.
   */
  private async putPushConfig(
    tx: Tx,
    principal: string,
    taskId: string,
    params: A2aPushConfig,
  ): Promise<A2aPushConfigRow> {
    const limits = this.deps.limits
    const row: A2aPushConfigRow = {
      task_id: taskId,
      id: params.id || randomUUID(),
      owner: principal,
      url: notifyTarget(params.url),
      token: params.token || null,
      created_at: this.deps.clock.now(),
    }
    const replaced = await store.deletePushConfig(tx.db, taskId, row.id, principal)
    if (!replaced) {
      const limit = limits.maxPushConfigsPerPrincipal
      if (!(await store.changePushUsage(tx.db, principal, 1, limit))) {
        throw new BatonError(
          'a2a_push_configs_exceeded',
          `You hold the most push configs the hub keeps per principal (${limit})`,
          { limit },
        )
      }
      if ((await store.countPushConfigs(tx.db, taskId)) >= limits.maxPushConfigsPerTask) {
        throw new BatonError(
          'a2a_task_push_configs_exceeded',
          `The task has the most push configs the hub keeps (${limits.maxPushConfigsPerTask})`,
          { limit: limits.maxPushConfigsPerTask },
        )
      }
    }
    const live = await store.pushUrlsOf(tx.db, principal, [...A2A_TERMINAL_STATES])
    const hosts = new Set(live.map(hostOf))
    if (!hosts.has(hostOf(row.url)) && hosts.size >= limits.maxPushHostsPerPrincipal) {
      throw new BatonError(
        'a2a_push_hosts_exceeded',
        `Your push configs name the most distinct hosts the hub pushes to (${limits.maxPushHostsPerPrincipal})`,
        { limit: limits.maxPushHostsPerPrincipal, field: 'url' },
      )
    }
    await store.insertPushConfig(tx.db, row)
    return row
  }

  /**
   * The headers a delivery of an A2A push notification carries beside the hub's signature: the
   * token of the config it was queued for (A2A 1.0 `TaskPushNotificationConfig.token`), in the
   * header the official SDKs send and read. Answers undefined for other signals, and for a
   * config deleted since or set without a token.
   */
  async notificationHeaders(row: NotifyOutboxRow): Promise<Record<string, string> | undefined> {
    const tag = row.event_id.startsWith(EVENT_PREFIX) ? row.event_id.split('.')[1] : undefined
    if (tag === undefined) return undefined
    const configs = await store.pushConfigsOf(this.deps.database.db, row.handoff_id)
    const config = configs.find((c) => c.url === row.url && configTag(c) === tag)
    return config?.token ? { [NOTIFICATION_TOKEN_HEADER]: config.token } : undefined
  }

  async getPushConfig(principal: string, params: A2aPushConfigRef): Promise<A2aPushConfigView> {
    const db = this.deps.database.db
    await this.visible(db, principal, params.taskId)
    const row = await store.findPushConfig(db, params.taskId, params.id, principal)
    if (!row) throw pushNotFound()
    return toPushView(row)
  }

  async listPushConfigs(principal: string, params: { taskId: string }) {
    const db = this.deps.database.db
    await this.visible(db, principal, params.taskId)
    const rows = await store.pushConfigsOf(db, params.taskId, principal)
    return { configs: rows.map(toPushView), nextPageToken: '' }
  }

  async deletePushConfig(
    principal: string,
    params: A2aPushConfigRef,
    { carry }: Carrying = {},
  ): Promise<Record<string, never>> {
    await this.deps.batcher.carrying(carry).run(async (tx) => {
      const task = await this.visible(tx.db, principal, params.taskId, true)
      if (!(await store.deletePushConfig(tx.db, params.taskId, params.id, principal))) {
        throw pushNotFound()
      }
      // The configs of an ended task stopped counting when it ended.
      if (!A2A_TERMINAL_STATES.has(task.state)) await store.changePushUsage(tx.db, principal, -1, 0)
    })
    return {}
  }

  /**
   * The task and generation a `messageId` the principal sent before with the same request
   * answered, or undefined when it is new; the same id with another request is
   * `idempotency_conflict`.
   */
  private async priorSend(
    db: Tx['db'],
    principal: string,
    messageId: string,
    hash: string,
  ): Promise<{ taskId: string; generation: number } | undefined> {
    const prior = await store.findSend(db, principal, messageId)
    if (!prior) return undefined
    if (prior.request_hash !== hash) {
      throw new BatonError(
        'idempotency_conflict',
        'This messageId was already sent with a different request',
        { field: 'message.messageId', taskId: prior.task_id },
      )
    }
    return { taskId: prior.task_id, generation: prior.generation }
  }

  /**
   * A send's answer, read outside its transaction: the task as it stood at the send's generation,
   * from the committed row the send wrote, or read again for a repeat.
   */
  private async answer(db: Tx['db'], sent: Omit<Sent, 'repeated'>, historyLength?: number) {
    let row = sent.row
    if (!row) {
      const found = await store.findTask(db, sent.taskId)
      if (!found) throw taskNotFound(sent.taskId)
      row = await this.asOf(db, found, sent.generation)
    }
    return this.view(db, row, historyLength)
  }

  /**
   * A task row as it stood at an earlier generation: its status is the newest one set at or
   * before it; the view reads only events up to the row's generation.
   */
  private async asOf(db: Tx['db'], row: A2aTaskRow, generation: number): Promise<A2aTaskRow> {
    if (generation >= row.generation) return row
    const set = await store.statusEventAt(db, row.id, generation)
    const status = set ? (JSON.parse(set.body).status as A2aTaskStatusView) : undefined
    return {
      ...row,
      generation,
      ...(status ? { status: JSON.stringify(status), state: status.state } : {}),
    }
  }

  /** The agent a new task is addressed to: an approved principal named by `tenant`. */
  private async addressee(db: Tx['db'], tenant: string | undefined): Promise<string> {
    if (!tenant) {
      throw new BatonError(
        'invalid_request',
        'tenant names the agent a new task is addressed to (an admitted principal)',
        {
          field: 'tenant',
          fix: 'Set tenant to the did:key of the agent: build the A2A client from the card at /.well-known/agent-card.json?tenant=<did:key>, whose interface carries it into every request.',
        },
      )
    }
    const addressee = await this.deps.identity.findPrincipal(db, tenant)
    if (addressee?.state !== 'approved') {
      // Pending, rejected and suspended keys answer like unknown ones: no probing of admission.
      throw new BatonError('recipient_unknown', 'No admitted agent has this principal', {
        field: 'tenant',
      })
    }
    return tenant
  }

  /**
   * A signed handoff context in the message, checked by the hop service before anything is
   * written (a refused one changes nothing); a repeat is answered by the hop service as a
   * retransmission. Answers what rides back in the task's metadata.
   */
  private async witness(
    principal: string,
    params: A2aSendMessageParams,
    carry: Carrying['carry'],
  ): Promise<unknown> {
    if (!this.deps.witness || params.message.metadata === undefined) return undefined
    let agent = params.tenant ?? ''
    if (params.message.taskId !== undefined) {
      agent = (await this.visible(this.deps.database.db, principal, params.message.taskId)).agent
    }
    return this.deps.witness(principal, agent, params.message, { carry })
  }

  /** A task the caller is a party to, or the answer a missing id gets. */
  async visible(db: Tx['db'], principal: string, id: string, lock = false): Promise<A2aTaskRow> {
    const row = await store.findTask(db, id, lock && this.deps.database.caps.lockRowsForUpdate)
    if (!row || (row.owner !== principal && row.agent !== principal)) throw taskNotFound(id)
    return row
  }

  /** The caller's role on a task row it can see. */
  private role(row: A2aTaskRow, principal: string): Role {
    return row.owner === principal ? 'owner' : 'agent'
  }

  private async create(
    tx: Tx,
    owner: string,
    params: A2aSendMessageParams,
    now: number,
    witnessed: unknown,
    push: A2aPushConfig | undefined,
    trace: HandedTrace | undefined,
  ): Promise<A2aTaskRow> {
    const agent = await this.addressee(tx.db, params.tenant)
    if (params.message.role !== 'ROLE_USER') {
      throw new BatonError('invalid_request', 'A new task starts with a ROLE_USER message', {
        field: 'message.role',
      })
    }
    const id = `task_${randomBytes(16).toString('base64url')}`
    const status: A2aTaskStatusView = { state: 'TASK_STATE_SUBMITTED', timestamp: iso(now) }
    const message: A2aMessage = {
      ...params.message,
      taskId: id,
      contextId: params.message.contextId ?? id,
    }
    const body = JSON.stringify({
      message,
      status,
      ...(witnessed === undefined ? {} : { witnessed }),
    })
    const bytes = Buffer.byteLength(body, 'utf8')
    this.checkTaskBytes(0, bytes)
    const row: A2aTaskRow = {
      id,
      context_id: message.contextId!,
      owner,
      agent,
      state: status.state,
      generation: 1,
      status: JSON.stringify(status),
      created_at: now,
      updated_at: now,
      stored_bytes: bytes,
      hop: witnessedHop(witnessed) ?? null,
    }
    await store.insertTask(tx.db, row)
    await changeStoredBytes(tx.db, {
      principal: owner,
      delta: bytes,
      limit: this.deps.storedBytesQuota,
    })
    if (push) await this.putPushConfig(tx, owner, id, push)
    const events: A2aEventRow[] = [
      {
        task_id: id,
        generation: 1,
        kind: 'created',
        author: owner,
        body,
        at: now,
        artifact_id: null,
        ...traceColumns(trace),
      },
    ]
    await store.insertEvents(tx.db, events)
    await this.signal(tx, row, events, owner, true)
    return row
  }

  private async continueTask(
    tx: Tx,
    principal: string,
    params: A2aSendMessageParams,
    update: A2aRelayUpdate,
    expected: number | undefined,
    now: number,
    witnessed: unknown,
    { push, trace }: { push: A2aPushConfig | undefined; trace: HandedTrace | undefined },
  ): Promise<A2aTaskRow> {
    const row = await this.visible(tx.db, principal, params.message.taskId!, true)
    if (expected !== undefined && row.generation !== expected) throw mismatch(row.generation)
    if (A2A_TERMINAL_STATES.has(row.state)) {
      throw new BatonError('a2a_task_ended', 'The task has ended and takes no more messages', {
        state: row.state,
        currentGeneration: row.generation,
      })
    }
    const role = this.role(row, principal)
    const wantRole = role === 'owner' ? 'ROLE_USER' : 'ROLE_AGENT'
    if (params.message.role !== wantRole) {
      throw new BatonError(
        'a2a_role_mismatch',
        `The ${role} of a task sends ${wantRole} messages`,
        {
          field: 'message.role',
          role,
        },
      )
    }
    if (role === 'owner' && (update.state !== undefined || update.artifacts !== undefined)) {
      throw new BatonError(
        'a2a_role_mismatch',
        'Only the agent of a task sets its state and artifacts; the owner cancels with CancelTask',
        { field: `metadata.${A2A_RELAY_EXTENSION_URI}`, role },
      )
    }
    if (params.message.contextId !== undefined && params.message.contextId !== row.context_id) {
      throw new BatonError('a2a_context_mismatch', 'contextId differs from the task’s', {
        field: 'message.contextId',
        contextId: row.context_id,
      })
    }
    const message: A2aMessage = { ...params.message, contextId: row.context_id }
    if (update.artifacts !== undefined && update.artifacts.length > 0) {
      const known = await store.artifactIds(tx.db, row.id)
      for (const a of update.artifacts) known.add(a.artifact.artifactId)
      const limit = this.deps.limits.maxArtifactsPerTask
      if (known.size > limit) {
        throw new BatonError(
          'a2a_task_artifacts_exceeded',
          `The task would have more than the ${limit} artifacts the hub keeps for one task`,
          { limit, currentGeneration: row.generation },
        )
      }
    }
    const changes: Change[] = []
    for (const a of update.artifacts ?? []) {
      changes.push({
        kind: 'artifact',
        artifact: a.artifact,
        append: a.append ?? false,
        lastChunk: a.lastChunk ?? false,
      })
    }
    // A2A 1.0: a status's message is part of the task's history; a bare message is its own event.
    const seen = witnessed === undefined ? {} : { witnessed }
    if (update.state !== undefined) {
      const status: A2aTaskStatusView = { state: update.state, message, timestamp: iso(now) }
      changes.push({ kind: 'status', status, ...seen })
    } else {
      changes.push({ kind: 'message', message, ...seen })
    }
    this.checkEvents(row, changes.length)
    if (push) await this.putPushConfig(tx, principal, row.id, push)
    return this.append(tx, row, principal, changes, now, { capped: true, trace })
  }

  /** Refuses a send that would take a task past its cap on events, before anything is written. */
  private checkEvents(row: A2aTaskRow, adding: number): void {
    const limit = this.deps.limits.maxEventsPerTask
    if (row.generation + adding > limit) {
      throw new BatonError(
        'a2a_task_events_exceeded',
        `The task would pass the ${limit} events the hub keeps for one task`,
        { limit, currentGeneration: row.generation },
      )
    }
  }

  /** Refuses events that would take a task past its cap on stored bytes. */
  private checkTaskBytes(used: number, adding: number): void {
    const limit = this.deps.limits.maxTaskBytes
    if (used + adding > limit) {
      throw new BatonError(
        'a2a_task_too_large',
        `The task would pass the ${limit} bytes the hub keeps for one task`,
        { limit, used },
      )
    }
  }

  /**
   * Appends changes to a task read in this transaction: one event and one generation each, by
   * compare-and-set on the generation read (seed-free rule of DESIGN: never read-then-write).
   * A send's changes (`capped`) are held to the task's byte cap; a cancel's one status is not,
   * so a full task can still be ended. Each event records the request's `trace`.
   */
  private async append(
    tx: Tx,
    row: A2aTaskRow,
    author: string,
    changes: Change[],
    now: number,
    { capped = false, trace }: { capped?: boolean; trace?: HandedTrace | undefined } = {},
  ): Promise<A2aTaskRow> {
    let generation = row.generation
    let status = row.status
    let state = row.state
    let bytes = 0
    const events: A2aEventRow[] = []
    for (const change of changes) {
      generation++
      if (change.kind === 'status') {
        status = JSON.stringify(change.status)
        state = change.status.state
      }
      const { kind, ...body } = change
      // A message leaves the state as it is; the state is kept with it for its stream event.
      const stored = JSON.stringify(kind === 'message' ? { ...body, state } : body)
      bytes += Buffer.byteLength(stored, 'utf8')
      events.push({
        task_id: row.id,
        generation,
        kind,
        author,
        body: stored,
        at: now,
        artifact_id: change.kind === 'artifact' ? change.artifact.artifactId : null,
        ...traceColumns(trace),
      })
    }
    const used = Number(row.stored_bytes)
    if (capped) this.checkTaskBytes(used, bytes)
    const next = { state, generation, status, updated_at: now, stored_bytes: used + bytes }
    if (!(await store.advanceTask(tx.db, row.id, row.generation, next))) throw MOVED
    // The task's owner keeps the task, so its events count against the owner's stored bytes; a
    // cancel (not capped) is never refused by it, so a task can always be ended.
    await changeStoredBytes(tx.db, {
      principal: row.owner,
      delta: bytes,
      limit: capped ? this.deps.storedBytesQuota : undefined,
    })
    await store.insertEvents(tx.db, events)
    await store.foldArtifacts(tx.db, artifactWrites(row.id, events, changes))
    const moved = { ...row, ...next }
    if (!A2A_TERMINAL_STATES.has(row.state) && A2A_TERMINAL_STATES.has(state)) {
      await this.releasePushUsage(tx, row.id)
      await this.closeBudget(tx, row, events, state, now)
    }
    await this.signal(tx, moved, events, author, capped)
    return moved
  }

  /**
   * Issue 28: a task that ends ends the work of the hop its first message carried (kept on its
   * row) or one these events carry, so that hop's budget closes in the same transaction,
   * releasing what was unspent to its parent, as a status that ends the hop does.
   */
  private async closeBudget(
    tx: Tx,
    row: A2aTaskRow,
    events: readonly A2aEventRow[],
    state: string,
    now: number,
  ): Promise<void> {
    const budgets = this.deps.budgets
    const reason = BUDGET_REASONS[state]
    if (!budgets || reason === undefined) return
    const hops = new Set<string>(row.hop === null ? [] : [row.hop])
    for (const e of events) {
      const digest = witnessedHop(witnessedOf(e))
      if (digest !== undefined) hops.add(digest)
    }
    for (const hop of hops) await budgets.close(tx, hop, reason, now)
  }

  /**
   * An ended task changes no more, so once it ends its push configs stop counting against their
   * owners' caps (they stay until its last notifications, which read them, are delivered).
   */
  private async releasePushUsage(tx: Tx, taskId: string): Promise<void> {
    for (const [owner, n] of await store.pushConfigOwners(tx.db, taskId)) {
      await store.changePushUsage(tx.db, owner, -n, 0)
    }
  }

  /**
   * Queues a change's push notifications and publishes its bus hint after commit. Nothing is
   * fanned out here: the send's transaction adds one queue row and charges each config's owner
   * for the notifications its configs will get, against that owner's stored-bytes quota; the
   * fan-out to the configs runs after the commit ({@link fanOut}). A send is refused when its
   * author's own configs pass the author's quota (when `capped`: a cancel is never refused); the
   * configs of a party whose quota cannot hold them are left out of this change's fan-out, so
   * one party's configs never refuse the other's sends.
   */
  private async signal(
    tx: Tx,
    row: A2aTaskRow,
    events: A2aEventRow[],
    author: string,
    capped: boolean,
  ): Promise<void> {
    const owners = events.length > 0 ? await store.pushConfigOwners(tx.db, row.id) : new Map()
    const charges: Record<string, number> = {}
    if (owners.size > 0) {
      let bytes = 0
      for (const e of events) bytes += Buffer.byteLength(JSON.stringify(toStreamEvent(row, e)))
      const limit = this.deps.storedBytesQuota
      for (const [owner, configs] of owners) {
        const delta = bytes * configs
        if (owner === author && capped) {
          await changeStoredBytes(tx.db, { principal: owner, delta, limit })
          charges[owner] = delta
        } else if (await tryChangeStoredBytes(tx.db, { principal: owner, delta, limit })) {
          charges[owner] = delta
        }
      }
    }
    const queued = Object.keys(charges).length > 0
    if (queued) {
      await store.insertPushQueue(tx.db, {
        task_id: row.id,
        after_generation: events[0]!.generation - 1,
        through_generation: events.at(-1)!.generation,
        author,
        charged: 0,
        charges: JSON.stringify(charges),
        created_at: row.updated_at,
      })
    }
    tx.afterCommit(() => {
      this.deps.bus.publish({
        topic: a2aTaskTopic(row.id),
        type: 'a2a.task.changed',
        at: row.updated_at,
        data: { id: row.id, generation: row.generation, state: row.state },
      })
      if (queued) this.kickFanOut()
    })
  }

  /** Starts a fan-out pass now, or once more after the one under way. */
  kickFanOut(): void {
    if (this.fanning) {
      this.fanAgain = true
      return
    }
    this.fanning = (async () => {
      do {
        this.fanAgain = false
        // A failed pass leaves its rows queued; the periodic pass runs them again and logs.
        await this.fanOut().catch(() => {})
      } while (this.fanAgain)
    })().finally(() => {
      this.fanning = undefined
    })
  }

  /** Resolves when no fan-out pass is under way; for shutdown and tests. */
  async drainFanOut(): Promise<void> {
    while (this.fanning) await this.fanning
  }

  /**
   * Fans queued sends out to their tasks' configs: each in its own transaction, which takes the
   * queue row and adds one outbox signal per event and config (every instance may run this; a
   * row goes to one). Answers how many sends it fanned out.
   */
  async fanOut(): Promise<number> {
    let done = 0
    for (;;) {
      const due = await store.duePushQueue(this.deps.database.db, FAN_OUT_PAGE)
      let took = 0
      for (const q of due) if (await this.fanOutOne(q)) took++
      done += took
      if (took === 0) break
    }
    if (done > 0) this.deps.notify.kick()
    return done
  }

  private fanOutOne(q: A2aPushQueueRow): Promise<boolean> {
    return transaction(this.deps.database, async (tx) => {
      if (!(await store.claimPushQueue(tx.db, q))) return false
      // Rows queued before migration 018 charged their author for every config.
      const charges: Record<string, number> =
        q.charges === null ? { [q.author]: Number(q.charged) } : JSON.parse(q.charges)
      const payer = (c: A2aPushConfigRow) => (q.charges === null ? q.author : c.owner)
      const row = await store.findTask(tx.db, q.task_id)
      const configs = row
        ? (await store.pushConfigsOf(tx.db, q.task_id)).filter((c) => payer(c) in charges)
        : []
      const span = q.through_generation - q.after_generation
      const events =
        row && configs.length > 0
          ? await store.eventsAfter(tx.db, q.task_id, q.after_generation, span)
          : []
      const bodies = events.map((e) => JSON.stringify(toStreamEvent(row!, e)))
      const signals: Omit<NotifyOutboxRow, 'seq'>[] = []
      const used = new Map<string, number>()
      for (const config of configs) {
        const to = payer(config)
        events.forEach((e, i) => {
          used.set(to, (used.get(to) ?? 0) + Buffer.byteLength(bodies[i]!))
          signals.push({
            event_id: `${newEventId()}.${configTag(config)}.${CHARGED}`,
            url: config.url,
            handoff_id: q.task_id,
            version: e.generation,
            body: bodies[i]!,
            status: 'pending',
            attempts: 0,
            created_at: e.at,
            next_at: e.at,
            leased_until: 0,
            lease_owner: null,
            last_outcome: null,
            done_at: null,
            charged_to: to,
            // The receiver continues the trace of the send that wrote the event.
            trace: e.trace,
            trace_state: e.trace_state,
          })
        })
      }
      // Each charge follows its owner's configs as they are now: one deleted since gives its
      // share back.
      for (const [principal, charged] of Object.entries(charges)) {
        await changeStoredBytes(tx.db, { principal, delta: (used.get(principal) ?? 0) - charged })
      }
      await this.deps.notify.enqueue(tx.db, signals)
      return true
    })
  }

  /**
   * Gives back the stored bytes an A2A notification was charged, in the transaction that records
   * it delivered or dead; other signals are left alone.
   */
  async releaseNotification(db: Kysely<Schema>, row: NotifyOutboxRow): Promise<void> {
    const parts = row.event_id.split('.')
    if (!row.event_id.startsWith(EVENT_PREFIX) || parts.length !== 3 || parts[2] !== CHARGED) {
      return
    }
    // Signals queued before migration 018 were charged to the author of their event.
    const payer = row.charged_to ?? (await store.eventAuthor(db, row.handoff_id, row.version))
    if (payer === undefined) return
    await changeStoredBytes(db, { principal: payer, delta: -Buffer.byteLength(row.body) })
  }

  /** A write that lost a race to another instance is run again, reading the winner's row. */
  private async retryingRace<T>(run: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await run()
      } catch (error) {
        const retry = error === MOVED || this.deps.database.caps.isUniqueViolation(error)
        if (!retry || attempt >= 4) throw error
      }
    }
  }

  /** A2A 1.0 blocking send: the task once terminal or interrupted, or as it is when time is up. */
  private async settled(
    principal: string,
    task: A2aTaskView,
    signal?: WaitSignal,
    address?: string,
  ): Promise<A2aTaskView> {
    if (
      A2A_TERMINAL_STATES.has(task.status.state) ||
      A2A_INTERRUPTED_STATES.has(task.status.state)
    ) {
      return task
    }
    const db = this.deps.database.db
    const { last } = await this.deps.waits.wait({
      key: `${a2aTaskTopic(task.id)} settled`,
      topics: [a2aTaskTopic(task.id)],
      read: () => store.findTask(db, task.id),
      view: (r) => r!,
      ready: (r) => A2A_TERMINAL_STATES.has(r.state) || A2A_INTERRUPTED_STATES.has(r.state),
      timeoutMs: () => this.deps.maxWaitMs,
      address,
      signal,
    })
    return this.view(db, await this.visible(db, principal, last.id))
  }

  /**
   * The task as A2A 1.0 shows it, read from only the events the answer needs: the newest events
   * that may carry its last `historyLength` messages (at most {@link HISTORY_CAP}), its artifact
   * events when it shows artifacts, and the newest event holding the hop it witnessed.
   */
  private async view(
    db: Tx['db'],
    row: A2aTaskRow,
    historyLength?: number,
    withArtifacts = true,
  ): Promise<A2aTaskView> {
    // A2A 1.0 GetTaskRequest.history_length: unset imposes no limit of the client's, zero asks
    // for none, and the server MUST NOT return more than asked but MAY apply a lower limit.
    const want = Math.min(historyLength ?? HISTORY_CAP, HISTORY_CAP)
    const talk: A2aEventRow[] = []
    let messages = 0
    let exhausted = false
    while (messages < want) {
      const limit = want - messages + 1
      const before = talk.at(-1)?.generation ?? row.generation + 1
      const page = await store.talkBefore(db, row.id, before, limit)
      for (const e of page) {
        talk.push(e)
        if (messageOf(e) !== undefined) messages++
      }
      if (page.length < limit) {
        exhausted = true
        break
      }
    }
    const history = talk
      .map(messageOf)
      .filter((m): m is A2aMessage => m !== undefined)
      .slice(0, want)
      .reverse()
    let witnessed = talk.map(witnessedOf).find((w) => w !== undefined)
    if (witnessed === undefined && !exhausted) {
      witnessed = await this.witnessedBefore(db, row.id, talk.at(-1)?.generation)
    }
    const artifacts = withArtifacts ? await this.artifactsAt(db, row.id, row.generation) : []
    // The latest change shown is a talk event (a send ends with its status or message, a cancel
    // is a status), so the history read usually holds it already.
    const trace =
      talk[0]?.generation === row.generation
        ? talk[0]
        : await store.traceAt(db, row.id, row.generation)
    return {
      id: row.id,
      contextId: row.context_id,
      status: JSON.parse(row.status) as A2aTaskStatusView,
      artifacts,
      history,
      generation: row.generation,
      metadata: relayMeta(row, row.generation, {
        ...(witnessed === undefined ? {} : { handoff: witnessed }),
        ...(trace ? traceFields(trace) : {}),
      }),
    }
  }

  /**
   * A task's artifacts as they stood at a generation: one folded row per artifact that existed
   * then. An artifact changed since (a view of an earlier generation, such as a repeat's, or a
   * send that committed after the row was read) is folded again from its own events up to it.
   */
  private async artifactsAt(db: Tx['db'], taskId: string, generation: number) {
    const rows = await store.foldedArtifacts(db, taskId, generation)
    const changed = rows.filter((r) => r.generation > generation).map((r) => r.artifact_id)
    const then = new Map<string, A2aArtifact>()
    const events = await store.artifactEventsOf(db, taskId, changed, generation)
    for (const a of foldArtifacts(events)) then.set(a.artifactId, a)
    const artifacts: A2aArtifact[] = []
    for (const r of rows) {
      const a = r.generation > generation ? then.get(r.artifact_id) : toArtifact(r)
      if (a) artifacts.push(a)
    }
    return artifacts
  }

  /** The hop view of the newest event before `before` that witnessed one, if any. */
  private async witnessedBefore(
    db: Tx['db'],
    taskId: string,
    before: number | undefined,
  ): Promise<unknown> {
    for (let at = before; ; ) {
      const page = await store.talkBefore(db, taskId, at, 16, true)
      const found = page.map(witnessedOf).find((w) => w !== undefined)
      if (found !== undefined || page.length < 16) return found
      at = page.at(-1)!.generation
    }
  }

  /**
   * How many tasks are in each state, for the operator's overview (stored names, such as
   * `TASK_STATE_WORKING`).
   */
  async operatorCounts(): Promise<Record<string, number>> {
    return countStates(this.deps.database.db, 'a2a_tasks')
  }

  // The operator reads every task: the reads above answer only a task's parties, and the
  // operator is none of them.

  /** Tasks for the operator, most recently changed first, optionally in one state (`working`). */
  async operatorList(q: { state?: string | undefined; limit?: number }) {
    const rows = await store.listForOperator(this.deps.database.db, {
      state: q.state ? `TASK_STATE_${q.state.toUpperCase().replace(/-/g, '_')}` : undefined,
      limit: q.limit ?? 200,
    })
    return rows.map(toOperatorTask)
  }

  /**
   * One task and its events, oldest first: kind, author, the state each left the task in, and an
   * artifact's id. A2aMessage and artifact contents are not read out.
   */
  async operatorRead(id: string) {
    const db = this.deps.database.db
    const row = await store.findForOperator(db, id)
    if (!row) return undefined
    const events = await store.eventsForOperator(db, id)
    return {
      ...toOperatorTask(row),
      events: events.map((e) => {
        const body = parseStored(e.body) as {
          state?: unknown
          status?: { state?: unknown }
          artifact?: { artifactId?: unknown }
        } | null
        const state = body?.status?.state ?? body?.state
        const artifact = body?.artifact?.artifactId
        return {
          generation: num(e.generation),
          kind: e.kind,
          author: e.author,
          state: typeof state === 'string' ? operatorState(state) : null,
          artifactId: typeof artifact === 'string' ? artifact : null,
          at: isoOrNull(e.at),
        }
      }),
    }
  }
}

/**
 * The header a push notification carries its config's token in: the one the official A2A SDKs
 * (JavaScript and Python) send and read; A2A 1.0 leaves its name to implementations.
 */
export const NOTIFICATION_TOKEN_HEADER = 'x-a2a-notification-token'

/** How every outbox event id starts; an A2A one ends with its config's tag after a dot. */
const EVENT_PREFIX = 'evt_'

/**
 * Names a push config in the outbox event ids queued for it, so a delivery finds the config's
 * token without a column of its own: a digest of its owner and id, unique per task and URL.
 */
function configTag(config: A2aPushConfigRow): string {
  return createHash('sha256')
    .update(`${config.owner}\n${config.id}`)
    .digest('base64url')
    .slice(0, 22)
}

/** The host a push config's URL names, for the cap on a principal's distinct hosts. */
function hostOf(url: string): string {
  return new URL(url).hostname
}

/**
 * Refuses a message larger than the hub's message limit, with its metadata (the artifacts an
 * agent sends ride there), before anything is read or written.
 */
function checkMessageSize(params: A2aSendMessageParams, limit: number): void {
  const size = Buffer.byteLength(JSON.stringify([params.message, params.metadata ?? null]), 'utf8')
  if (size > limit) {
    throw new BatonError(
      'a2a_message_too_large',
      `The message and its metadata are ${size} bytes as JSON; at most ${limit} are accepted`,
      { limit, size, field: 'message' },
    )
  }
}

/**
 * Checks a push config before anything is written: its URL as a handoff's `notify_url` is
 * checked, and no `authentication` the hub cannot honour. The hub authenticates every
 * notification itself, with its signature and the config's token, so any scheme asked for
 * (Bearer, Basic, …) would be stored and never sent; it is refused instead.
 */
function checkPushConfig(config: A2aPushConfig, allowLoopback: boolean): void {
  checkNotifyUrl(config.url, allowLoopback)
  if (config.authentication !== undefined && config.authentication !== null) {
    throw new BatonError(
      'a2a_push_auth_unsupported',
      'The hub sends no push notification authentication but its signature and the token',
      { field: 'authentication' },
    )
  }
}

/**
 * The most messages a task's `history` carries, whatever `historyLength` asks (A2A 1.0 lets a
 * server apply a lower limit): the newest ones. The rest stay in the event log, which a stream
 * replays from any generation.
 */
export const HISTORY_CAP = 100

/** Baton's metadata on every task and event, for A2A 1.0 peers whose types drop `generation`. */
function relayMeta(row: A2aTaskRow, generation: number, extra?: Record<string, unknown>) {
  return {
    [A2A_RELAY_EXTENSION_URI]: { generation, owner: row.owner, agent: row.agent, ...extra },
  }
}

/** The message an event puts in its task's history, if it puts one. */
function messageOf(e: A2aEventRow): A2aMessage | undefined {
  if (e.kind === 'artifact') return undefined
  const body = JSON.parse(e.body)
  return e.kind === 'status' ? body.status.message : body.message
}

/** The digest of the hop a witnessed view names, if it names one. */
function witnessedHop(witnessed: unknown): string | undefined {
  const digest = (witnessed as { hop?: { digest?: unknown } } | undefined)?.hop?.digest
  return typeof digest === 'string' ? digest : undefined
}

/** The hop view an event recorded as witnessed, if it did. */
function witnessedOf(e: A2aEventRow): unknown {
  return e.kind === 'artifact' ? undefined : JSON.parse(e.body).witnessed
}

/**
 * Folds a task's artifact events, oldest first, into its artifacts as A2A 1.0 shows them, in one
 * pass: each artifact's place is looked up by id, and an append adds its parts to the artifact
 * folded so far (an object of this fold's own), so the fold costs the events' size and no more.
 */
export function foldArtifacts(events: A2aEventRow[]): A2aArtifact[] {
  const artifacts: A2aArtifact[] = []
  const places = new Map<string, number>()
  for (const e of events) {
    const body = JSON.parse(e.body) as { artifact: A2aArtifact; append?: boolean }
    const at = places.get(body.artifact.artifactId)
    if (at === undefined) {
      places.set(body.artifact.artifactId, artifacts.length)
      artifacts.push(body.artifact)
    } else if (body.append) {
      const parts = artifacts[at]!.parts
      for (const part of body.artifact.parts) parts.push(part)
    } else artifacts[at] = body.artifact
  }
  return artifacts
}

/**
 * The folded-artifact writes of one send's changes (`events[i]` is `changes[i]` stored): for each
 * artifact it touches, one replace (its last whole artifact, with what was appended after it in
 * the same send) or one append of its parts.
 */
function artifactWrites(
  taskId: string,
  events: A2aEventRow[],
  changes: Change[],
): { appends: A2aArtifactRow[]; replaces: A2aArtifactRow[] } {
  const writes = new Map<string, { row: A2aArtifactRow; replace: boolean }>()
  changes.forEach((change, i) => {
    if (change.kind !== 'artifact') return
    const id = change.artifact.artifactId
    const generation = events[i]!.generation
    const { head, parts } = store.splitArtifact(change.artifact)
    const known = writes.get(id)
    if (known && change.append) {
      known.row.parts = store.joinParts(known.row.parts, parts)
      known.row.generation = generation
    } else {
      const row = { task_id: taskId, artifact_id: id, seq: generation, generation, head, parts }
      writes.set(id, { row, replace: !change.append })
    }
  })
  const all = [...writes.values()]
  return {
    appends: all.filter((w) => !w.replace).map((w) => w.row),
    replaces: all.filter((w) => w.replace).map((w) => w.row),
  }
}

/** A folded artifact row as A2A 1.0 shows the artifact. */
function toArtifact(r: A2aArtifactRow): A2aArtifact {
  return { ...JSON.parse(r.head), parts: JSON.parse(`[${r.parts}]`) } as A2aArtifact
}

/** One stored event as the StreamResponse of A2A 1.0 a stream or a push notification carries. */
export function toStreamEvent(row: A2aTaskRow, e: A2aEventRow): A2aStreamEvent {
  const body = JSON.parse(e.body)
  const base = { taskId: row.id, contextId: row.context_id }
  const metadata = relayMeta(row, e.generation, traceFields(e))
  switch (e.kind) {
    case 'created':
      return {
        statusUpdate: { ...base, status: body.status, generation: e.generation, metadata },
      }
    case 'message':
      // A2A 1.0: within a task, a party's message reaches the other as a status update.
      return {
        statusUpdate: {
          ...base,
          status: { state: body.state, message: body.message, timestamp: iso(e.at) },
          generation: e.generation,
          metadata,
        },
      }
    case 'status':
      return {
        statusUpdate: { ...base, status: body.status, generation: e.generation, metadata },
      }
    default:
      return {
        artifactUpdate: {
          ...base,
          artifact: body.artifact,
          append: body.append,
          lastChunk: body.lastChunk,
          generation: e.generation,
          metadata,
        },
      }
  }
}

function toPushView(row: A2aPushConfigRow): A2aPushConfigView {
  return {
    id: row.id,
    taskId: row.task_id,
    url: row.url,
    ...(row.token ? { token: row.token } : {}),
  }
}

function taskNotFound(id: string): BatonError {
  return new BatonError('a2a_task_not_found', `No task ${JSON.stringify(id)} you are a party to`)
}

function pushNotFound(): BatonError {
  return new BatonError(
    'a2a_push_config_not_found',
    'No push notification config of yours with this id',
  )
}

function mismatch(current: number): BatonError {
  return new BatonError(
    'a2a_generation_mismatch',
    'The task changed since the generation you state',
    {
      currentGeneration: current,
    },
  )
}

export type { A2aTaskState }

/** A task state as the operator reads it: `TASK_STATE_INPUT_REQUIRED` is `input-required`. */
const operatorState = (state: string) =>
  state
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-')

function toOperatorTask(r: {
  id: string
  context_id: string
  owner: string
  agent: string
  state: string
  generation: number
  created_at: number
  updated_at: number
}) {
  return {
    id: r.id,
    contextId: r.context_id,
    owner: r.owner,
    agent: r.agent,
    state: operatorState(r.state),
    generation: num(r.generation),
    createdAt: isoOrNull(r.created_at),
    updatedAt: isoOrNull(r.updated_at),
  }
}
