import { randomBytes } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import {
  BatonError,
  createContentDigest,
  createSignature,
  type NotifySignal,
} from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { Gauge, type Registry } from 'prom-client'
import type { Clock } from '../clock.js'
import { ed25519Signer, nodeDigest } from '../crypto.js'
import type { HubSigner } from '../identity/hub-key.js'
import { type CheckedAddress, checkFetchUrl, isPublicAddress, resolvePublic } from '../net/ssrf.js'
import type { Database } from '../store/database.js'
import type { HandoffMoveRow, NotifyOutboxRow, Schema } from '../store/schema.js'
import { transaction } from '../store/transaction.js'
import { traceFields } from '../telemetry/trace-context.js'
import * as outbox from './outbox-store.js'

/** Whether a signal may be delivered to `address` (see `net/ssrf.ts`). */
export const isDeliverableAddress = isPublicAddress

/**
 * Checks a notify_url when a handoff is created: an absolute http(s) URL with a host, no
 * credentials, and no special-purpose address or special-use name (`net/ssrf.ts`).
 */
export function checkNotifyUrl(raw: string, allowLoopback: boolean): URL {
  const checked = checkFetchUrl(raw, allowLoopback)
  if (!checked.ok) {
    throw new BatonError('invalid_notify_url', `notify_url is refused (${checked.reason})`, {
      field: 'notify_url',
      reason: checked.reason,
    })
  }
  return checked.url
}

/** The URL a signal is posted to and signed for: the notify_url as parsed, without a fragment. */
export function notifyTarget(raw: string): string {
  const url = new URL(raw)
  url.hash = ''
  return url.href
}

/** A fresh event id: stable for every attempt of one signal, so receivers can drop repeats. */
export function newEventId(): string {
  return `evt_${randomBytes(16).toString('base64url')}`
}

/** The outbox row of the signal a committed move sends to `url` (seed 002: no payload, no token). */
export function toSignalRow(
  move: HandoffMoveRow,
  ended: boolean,
  url: string,
): Omit<NotifyOutboxRow, 'seq'> {
  const signal: NotifySignal = {
    event_id: newEventId(),
    handoff_id: move.handoff_id,
    state: move.to_state,
    version: move.version,
    ended,
    at: new Date(move.at).toISOString(),
  }
  return {
    event_id: signal.event_id,
    url: notifyTarget(url),
    handoff_id: move.handoff_id,
    version: move.version,
    body: JSON.stringify(signal),
    status: 'pending',
    attempts: 0,
    created_at: move.at,
    next_at: move.at,
    leased_until: 0,
    lease_owner: null,
    last_outcome: null,
    done_at: null,
    // The receiver continues the trace of the move it is told of (W3C Trace Context headers).
    trace: move.trace,
    trace_state: move.trace_state,
  }
}

/** The outcome of one delivery attempt, for metrics, logs and tests. */
export type DeliveryOutcome = 'delivered' | 'refused-address' | 'failed'

/** The components a signal's signature covers (RFC 9421 §2.2, RFC 9530). */
export const SIGNAL_COMPONENTS = ['@method', '@target-uri', 'content-digest'] as const

/**
 * Posts one signal: resolves the host now and refuses it if any answer is special-purpose,
 * connects to the address it checked (no second lookup to rebind), signs the request with the
 * hub's key (RFC 9421), follows no redirects and gives up after `timeoutMs`.
 */
export async function postSignal(
  target: string,
  body: string,
  opts: {
    allowLoopback: boolean
    timeoutMs: number
    signer?: HubSigner | undefined
    now?: number
    resolve?: (host: string) => Promise<CheckedAddress[]>
    /** Headers a feature sends with its own signals, beside the signature (which they cannot replace). */
    headers?: Record<string, string> | undefined
  },
): Promise<DeliveryOutcome> {
  const url = new URL(target)
  const address = await resolvePublic(url, opts.allowLoopback, opts.resolve).catch(() => null)
  if (address === null) return 'failed'
  if (address === undefined) return 'refused-address'
  const bytes = Buffer.from(body, 'utf8')
  const headers: Record<string, string> = {
    ...opts.headers,
    'content-type': 'application/json',
    'content-digest': createContentDigest(bytes, nodeDigest),
  }
  if (opts.signer) {
    const signed = createSignature(
      { method: 'POST', targetUri: target, headers },
      {
        keyid: opts.signer.kid,
        components: SIGNAL_COMPONENTS,
        created: Math.floor((opts.now ?? Date.now()) / 1000),
      },
      ed25519Signer(opts.signer.privateKey),
    )
    headers['signature-input'] = signed.signatureInput
    headers.signature = signed.signature
  }
  const mod = url.protocol === 'https:' ? https : http
  return new Promise<DeliveryOutcome>((resolve) => {
    const req = mod.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': bytes.length, 'user-agent': 'baton-notify/2' },
        timeout: opts.timeoutMs,
        // Connect to the address just checked, never to a second answer from DNS.
        lookup: (_h, options, cb) => {
          if ((options as { all?: boolean }).all) {
            ;(cb as unknown as (e: null, a: CheckedAddress[]) => void)(null, [address])
          } else cb(null, address.address, address.family)
        },
      },
      (res) => {
        res.resume()
        res.on('end', () => {
          const code = res.statusCode ?? 0
          // A redirect is not followed: it counts as not delivered.
          resolve(code >= 200 && code < 300 ? 'delivered' : 'failed')
        })
        res.on('error', () => resolve('failed'))
      },
    )
    const timer = setTimeout(() => req.destroy(new Error('timeout')), opts.timeoutMs)
    req.on('close', () => clearTimeout(timer))
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', () => resolve('failed'))
    req.end(bytes)
  })
}

/** How the outbox delivers: the SSRF rule, timeouts, backoff and horizon. */
export interface NotifierOptions {
  allowLoopback: boolean
  timeoutMs: number
  /** First retry delay; each later one doubles, up to `backoffMaxMs`, with jitter. */
  backoffBaseMs: number
  backoffMaxMs: number
  /** A signal not delivered this long after its move is dead (kept for inspection). */
  horizonMs: number
  /** How often each instance looks for due signals (other instances' and retries). */
  pollIntervalMs: number
  log?: Logger | undefined
  onOutcome?: ((outcome: DeliveryOutcome) => void) | undefined
  /** A number in [0, 1) for jitter; tests pin it. */
  random?: () => number
  resolve?: (host: string) => Promise<CheckedAddress[]>
}

const BATCH = 16

/**
 * Delivers the notify outbox. Rows are committed with their moves; every instance polls for due
 * rows, claims each with a lease by compare-and-set (so one instance delivers a signal), posts
 * it signed, and on failure schedules the next try with exponential backoff and full jitter until
 * the horizon. Only the oldest pending signal to a URL is ever due, so order per URL holds.
 */
export class Notifier {
  private readonly owner = `n_${randomBytes(9).toString('base64url')}`
  private signer: HubSigner | undefined
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private again = false
  private stopped = true
  private readonly headerSources: ((
    row: NotifyOutboxRow,
  ) => Promise<Record<string, string> | undefined>)[] = []
  private readonly settledHooks: ((db: Kysely<Schema>, row: NotifyOutboxRow) => Promise<void>)[] =
    []

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly opts: NotifierOptions,
  ) {}

  /** Starts delivering, signing with the hub's key; pending signals from before a restart go first. */
  start(signer: HubSigner): void {
    this.signer = signer
    this.stopped = false
    this.timer = setInterval(() => this.kick(), this.opts.pollIntervalMs)
    this.timer.unref()
    this.kick()
  }

  /**
   * Adds headers to the deliveries of a feature's own signals (A2A's notification token), read
   * as each is sent; a source answers undefined for signals that are not its own.
   */
  addHeaders(source: (row: NotifyOutboxRow) => Promise<Record<string, string> | undefined>): void {
    this.headerSources.push(source)
  }

  /**
   * Runs `hook` in the transaction that records a signal delivered or dead, for every signal
   * (a feature's hook answers only for its own): A2A gives back the stored bytes it charged.
   */
  onSettled(hook: (db: Kysely<Schema>, row: NotifyOutboxRow) => Promise<void>): void {
    this.settledHooks.push(hook)
  }

  /**
   * Adds signals to the outbox in the caller's transaction, in one statement; they are delivered
   * after it commits (call {@link kick} then).
   */
  enqueue(db: Kysely<Schema>, rows: Omit<NotifyOutboxRow, 'seq'>[]): Promise<void> {
    return outbox.insertSignals(db, rows)
  }

  /** Looks for due signals now (after a move commits, or on the poll). */
  kick(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = (async () => {
      do {
        this.again = false
        await this.deliverDue().catch((err) => this.opts.log?.warn({ err }, 'notify pass failed'))
      } while (this.again && !this.stopped)
    })().finally(() => {
      this.running = undefined
    })
  }

  /** Resolves when no delivery pass is under way; used at shutdown and in tests. */
  async drain(): Promise<void> {
    while (this.running) await this.running
  }

  /** Stops polling and waits for attempts under way; pending signals stay in the outbox. */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    await this.drain()
  }

  /** One pass: claims and delivers due signals until none is left; answers how many it tried. */
  async deliverDue(): Promise<number> {
    let tried = 0
    for (;;) {
      const now = this.clock.now()
      const heads = await outbox.dueHeads(this.database.db, now, BATCH)
      const mine: NotifyOutboxRow[] = []
      for (const row of heads) {
        if (
          await outbox.claim(this.database.db, row.event_id, this.owner, now, now + this.leaseMs)
        ) {
          mine.push(row)
        }
      }
      if (mine.length === 0) return tried
      await Promise.all(mine.map((row) => this.deliverOne(row)))
      tried += mine.length
    }
  }

  /** Outbox counts by status, and the oldest pending and dead signals (their URL reduced to origin). */
  async queue(limit = 5) {
    const db = this.database.db
    const view = (r: NotifyOutboxRow) => ({
      event_id: r.event_id,
      handoff_id: r.handoff_id,
      version: r.version,
      origin: new URL(r.url).origin,
      attempts: r.attempts,
      last_outcome: r.last_outcome,
      created_at: new Date(Number(r.created_at)).toISOString(),
      next_at: r.status === 'pending' ? new Date(Number(r.next_at)).toISOString() : null,
    })
    return {
      counts: await outbox.countByStatus(db),
      oldestPending: (await outbox.oldest(db, 'pending', limit)).map(view),
      oldestDead: (await outbox.oldest(db, 'dead', limit)).map(view),
    }
  }

  /** Registers `baton_notify_outbox_signals{status}`, read from the database at each scrape. */
  registerMetrics(registry: Registry): void {
    const database = this.database
    new Gauge({
      name: 'baton_notify_outbox_signals',
      help: 'notify signals in the outbox, by status (pending, delivered, dead)',
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        const counts = await outbox.countByStatus(database.db).catch(() => undefined)
        if (counts) for (const [status, n] of Object.entries(counts)) this.set({ status }, n)
      },
    })
  }

  /** The delay before try `attempt + 1`: base·2^(attempt-1), capped, with full jitter. */
  backoffMs(attempt: number): number {
    const ceiling = Math.min(this.opts.backoffMaxMs, this.opts.backoffBaseMs * 2 ** (attempt - 1))
    const random = this.opts.random ?? Math.random
    return Math.max(1, Math.round(ceiling * random()))
  }

  private async extraHeaders(row: NotifyOutboxRow): Promise<Record<string, string> | undefined> {
    const trace = traceFields(row)
    if (this.headerSources.length === 0) return trace.traceparent ? trace : undefined
    const all = await Promise.all(this.headerSources.map((source) => source(row)))
    return Object.assign({}, trace, ...all)
  }

  /** Longer than any one attempt can take, so a live attempt never loses its lease. */
  private get leaseMs(): number {
    return 3 * this.opts.timeoutMs + 30_000
  }

  private async deliverOne(row: NotifyOutboxRow): Promise<void> {
    const outcome = await this.extraHeaders(row)
      .then((headers) =>
        postSignal(row.url, row.body, {
          allowLoopback: this.opts.allowLoopback,
          timeoutMs: this.opts.timeoutMs,
          signer: this.signer,
          now: this.clock.now(),
          headers,
          ...(this.opts.resolve ? { resolve: this.opts.resolve } : {}),
        }),
      )
      .catch(() => 'failed' as const)
    this.opts.onOutcome?.(outcome)
    const now = this.clock.now()
    const attempts = row.attempts + 1
    const log = { event_id: row.event_id, handoff_id: row.handoff_id, attempts, outcome }
    if (outcome === 'delivered') {
      await this.settle(row, {
        status: 'delivered',
        attempts,
        next_at: now,
        last_outcome: outcome,
        done_at: now,
      })
      this.opts.log?.info(log, 'notify delivered')
      return
    }
    const next = now + this.backoffMs(attempts)
    const dead = next > Number(row.created_at) + this.opts.horizonMs
    await this.settle(row, {
      status: dead ? 'dead' : 'pending',
      attempts,
      next_at: dead ? now : next,
      last_outcome: outcome,
      done_at: dead ? now : null,
    })
    if (dead) this.opts.log?.warn(log, 'notify dead: horizon reached')
  }

  /** Records an attempt; a signal that is done runs the settled hooks in the same transaction. */
  private async settle(
    row: NotifyOutboxRow,
    change: Pick<NotifyOutboxRow, 'status' | 'attempts' | 'next_at' | 'last_outcome' | 'done_at'>,
  ): Promise<void> {
    if (change.status === 'pending' || this.settledHooks.length === 0) {
      await outbox.settle(this.database.db, row.event_id, this.owner, change)
      return
    }
    await transaction(this.database, async (tx) => {
      if (!(await outbox.settle(tx.db, row.event_id, this.owner, change))) return
      for (const hook of this.settledHooks) await hook(tx.db, row)
    })
  }
}
