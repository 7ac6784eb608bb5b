import { setImmediate as yieldToIo } from 'node:timers/promises'
import { BatonError } from '@baton/protocol'
import type { EventBus } from './bus.js'

/** Caps on concurrent long polls, counted per hub instance. */
export interface WaitLimits {
  /** Most waits held open on one topic (one handoff, inbox or transfer). */
  maxPerTopic: number
  /** Most waits held open by one client address. */
  maxPerAddress: number
}

/**
 * One long poll. Waiters with the same `key` share every read, so `key` must name everything
 * `read` depends on; what differs between them (a token, a caller) is applied by `view`.
 */
export interface WaitSpec<S, V> {
  key: string
  /** Topics whose events are hints to re-read; the first one is the topic the cap counts. */
  topics: readonly [string, ...string[]]
  /** Reads the truth from the database, once for every waiter of the key. */
  read: () => Promise<S>
  /** This waiter's answer from a shared read; throws the waiter's own refusal. */
  view: (shared: S) => V
  /** Whether `value` answers the wait, given the first one. */
  ready: (value: V, first: V) => boolean
  /** How long to wait after the first read, in milliseconds; 0 answers at once. */
  timeoutMs: (first: V) => number
  /** The client address the per-address cap counts; none for local callers (stdio). */
  address?: string | undefined
  signal?: AbortSignal | undefined
}

// The registry stores waiters of every value type side by side; each spec only ever sees its own.
type AnySpec = WaitSpec<unknown, unknown>
type Result = { ok: true; value: unknown } | { ok: false; error: unknown }

// Waiters answered between turns of the event loop: thousands answered by one read must not hold
// off every other request (a /healthz, a move) while their responses are written.
const ANSWER_SLICE = 256

interface Waiter {
  spec: AnySpec
  /** The first read generation that may answer it: one that started after it joined. */
  from: number
  hasFirst: boolean
  first: unknown
  /** Time is up, the hub is closing or the caller left: the next read answers it as it is. */
  due: boolean
  holdsTopicSlot: boolean
  timer: NodeJS.Timeout | undefined
  onAbort: (() => void) | undefined
  resolve: (answer: { first: unknown; last: unknown }) => void
  reject: (error: unknown) => void
}

interface Group {
  key: string
  read: () => Promise<unknown>
  waiters: Set<Waiter>
  /** Reads started so far. */
  gen: number
  reading: boolean
  /** Something asked for a read while one ran: exactly one more runs after it. */
  again: boolean
  unsubscribe: (() => void)[]
}

/**
 * Every long poll of the hub: per key one bus subscription and at most one read in flight,
 * shared by every waiter of the key (single-flight). An event, a new waiter or a timeout during
 * a read schedules exactly one more read after it, so no change is missed and a burst of
 * waiters or events costs two reads, not one per waiter. Events are only hints; every answer
 * comes from a read of the database.
 */
export class WaitRegistry {
  private readonly groups = new Map<string, Group>()
  private readonly perTopic = new Map<string, number>()
  private readonly perAddress = new Map<string, number>()
  private closed = false
  /** Shared reads run so far; for tests and metrics. */
  reads = 0

  constructor(
    private readonly bus: EventBus,
    closing: Promise<void>,
    private readonly limits: WaitLimits,
  ) {
    void closing.then(() => {
      this.closed = true
      for (const group of this.groups.values()) this.dueNow(group, [...group.waiters])
    })
  }

  /** Waits held open now, past their first read (what the per-topic cap counts); for tests and metrics. */
  waiting = 0

  /**
   * Waits until a read is `ready`, the time is up (answered by one more read), the caller goes
   * away or the hub shuts down. Over a cap it is refused with `rate_limited` and Retry-After.
   */
  wait<S, V>(spec: WaitSpec<S, V>): Promise<{ first: V; last: V }> {
    const { address } = spec
    if (address !== undefined) {
      const n = this.perAddress.get(address) ?? 0
      if (n >= this.limits.maxPerAddress) {
        return Promise.reject(tooMany('client address', this.limits.maxPerAddress))
      }
      this.perAddress.set(address, n + 1)
    }
    return new Promise((resolve, reject) => {
      const anySpec = spec as unknown as AnySpec
      let group = this.groups.get(spec.key)
      if (!group) group = this.open(anySpec)
      const waiter: Waiter = {
        spec: anySpec,
        from: group.gen + 1,
        hasFirst: false,
        first: undefined,
        due: this.closed,
        holdsTopicSlot: false,
        timer: undefined,
        onAbort: undefined,
        resolve: resolve as Waiter['resolve'],
        reject,
      }
      group.waiters.add(waiter)
      const joined = group
      if (spec.signal) {
        waiter.onAbort = () => this.abort(joined, waiter)
        spec.signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      this.requestRead(group)
    })
  }

  private open(spec: AnySpec): Group {
    const group: Group = {
      key: spec.key,
      read: spec.read,
      waiters: new Set(),
      gen: 0,
      reading: false,
      again: false,
      unsubscribe: [],
    }
    // Subscribed before the first read, so an event committed during it is not lost.
    for (const topic of spec.topics) {
      group.unsubscribe.push(this.bus.subscribe(topic, () => this.requestRead(group)))
    }
    this.groups.set(spec.key, group)
    return group
  }

  private requestRead(group: Group): void {
    if (group.reading) {
      group.again = true
      return
    }
    void this.run(group)
  }

  private async run(group: Group): Promise<void> {
    group.reading = true
    do {
      group.again = false
      const gen = ++group.gen
      this.reads++
      let result: Result
      try {
        result = { ok: true, value: await group.read() }
      } catch (error) {
        result = { ok: false, error }
      }
      let answered = 0
      for (const waiter of group.waiters) {
        if (waiter.from > gen) continue
        this.apply(group, waiter, result)
        if (++answered % ANSWER_SLICE === 0) await yieldToIo()
      }
    } while (group.again && group.waiters.size > 0)
    group.reading = false
    if (group.waiters.size === 0) this.close(group)
  }

  private apply(group: Group, w: Waiter, result: Result): void {
    if (!result.ok) {
      this.finish(group, w, result.error)
      return
    }
    let value: unknown
    try {
      value = w.spec.view(result.value)
    } catch (error) {
      this.finish(group, w, error)
      return
    }
    if (w.hasFirst) {
      if (w.due || w.spec.ready(value, w.first)) this.settle(group, w, value)
      return
    }
    w.first = value
    w.hasFirst = true
    const ms = w.due ? 0 : w.spec.timeoutMs(value)
    if (ms <= 0 || w.spec.ready(value, value)) {
      this.settle(group, w, value)
      return
    }
    // Counted only once the first read let the caller in: a stranger's wait (a wrong token, an
    // id it may not see) is answered at once and never takes a slot from the topic's own callers.
    const topic = w.spec.topics[0]
    const n = this.perTopic.get(topic) ?? 0
    if (n >= this.limits.maxPerTopic) {
      this.finish(group, w, tooMany('topic', this.limits.maxPerTopic))
      return
    }
    this.perTopic.set(topic, n + 1)
    w.holdsTopicSlot = true
    this.waiting++
    w.timer = setTimeout(() => this.dueNow(group, [w]), ms)
  }

  /** Answers these waiters with the next read, whatever it says. */
  private dueNow(group: Group, waiters: Waiter[]): void {
    for (const w of waiters) {
      w.due = true
      w.from = group.gen + 1
    }
    this.requestRead(group)
  }

  private abort(group: Group, w: Waiter): void {
    // Nothing will read the answer; one already read is enough, else the pending read ends it.
    if (w.hasFirst) this.settle(group, w, w.first)
    else w.due = true
  }

  private settle(group: Group, w: Waiter, last: unknown): void {
    this.release(group, w)
    w.resolve({ first: w.first, last })
  }

  private finish(group: Group, w: Waiter, error: unknown): void {
    this.release(group, w)
    w.reject(error)
  }

  private release(group: Group, w: Waiter): void {
    if (!group.waiters.delete(w)) return
    clearTimeout(w.timer)
    if (w.onAbort) w.spec.signal?.removeEventListener('abort', w.onAbort)
    if (w.holdsTopicSlot) {
      decrement(this.perTopic, w.spec.topics[0])
      this.waiting--
    }
    if (w.spec.address !== undefined) decrement(this.perAddress, w.spec.address)
    if (group.waiters.size === 0 && !group.reading) this.close(group)
  }

  private close(group: Group): void {
    if (this.groups.get(group.key) !== group) return
    this.groups.delete(group.key)
    for (const unsubscribe of group.unsubscribe) unsubscribe()
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1
  if (n <= 0) counts.delete(key)
  else counts.set(key, n)
}

function tooMany(scope: 'topic' | 'client address', limit: number): BatonError {
  return new BatonError(
    'rate_limited',
    `Too many waits open on this ${scope === 'topic' ? 'item' : scope}; at most ${limit}`,
    { retry_after: 1, limit, scope: scope === 'topic' ? 'topic' : 'address' },
    { 'retry-after': '1' },
  )
}
