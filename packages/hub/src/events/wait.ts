import { setImmediate as yieldToIo } from 'node:timers/promises'
import { BatonError } from '@baton/protocol'
import type { EventBus } from './bus.js'

/** What a wait's abort listener is given; an AbortSignal's Event is one. */
export interface WaitAbortEvent {
  readonly target: unknown
}

/**
 * How a wait hears that its caller left. An AbortSignal is one; so is anything that keeps
 * `aborted` and calls its 'abort' listeners once with itself as `target` (the HTTP face's own,
 * which costs a tenth of a controller and its signal).
 */
export interface WaitSignal {
  readonly aborted: boolean
  addEventListener(
    type: 'abort',
    listener: (event: WaitAbortEvent) => void,
    options?: { once?: boolean },
  ): void
  removeEventListener(type: 'abort', listener: (event: WaitAbortEvent) => void): void
}

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
 *
 * The functions get the waiter's own `data` as their last argument, so a caller can pass the
 * same functions for every wait (made once, not per request) and keep a waiter to one record.
 */
export interface WaitSpec<S, V, D = undefined> {
  key: string
  /** Topics whose events are hints to re-read; the first one is the topic the cap counts. */
  topics: readonly [string, ...string[]]
  /**
   * Reads the truth from the database, once for every waiter of the key, given the data of the
   * waiter that opened the key's group (it may use only what the key names) and the key's last
   * read. Answering that same value when nothing changed lets every waiter hold one value.
   */
  read: (data: D, previous: S | undefined) => Promise<S>
  /** This waiter's answer from a shared read; throws the waiter's own refusal. */
  view: (shared: S, data: D) => V
  /**
   * Waiters of a key with the same `viewKey` get the same view of a read (and the same refusal):
   * `view` runs once per read for all of them. Name in it everything `view` depends on.
   */
  viewKey?: string | undefined
  /** Whether `value` answers the wait, given the first one. */
  ready: (value: V, first: V, data: D) => boolean
  /** How long to wait after the first read, in milliseconds; 0 answers at once. */
  timeoutMs: (first: V, data: D) => number
  data?: D
  /**
   * The read's answer changes only with an event on `topics` (time may change a view, which
   * `view` and `timeoutMs` apply): a waiter joining while the key's last read is current (no
   * event since it started) takes its first value from that read instead of a read of its own.
   */
  changesOnlyWithEvents?: boolean
  /** The client address the per-address cap counts; none for local callers (stdio). */
  address?: string | undefined
  signal?: WaitSignal | undefined
}

// The registry stores waiters of every value type side by side; each spec only ever sees its own.
type AnySpec = WaitSpec<unknown, unknown, unknown>
type Result = { ok: true; value: unknown } | { ok: false; error: unknown }

// A view shared by the waiters of one `viewKey` for one read; `error` set when it refused.
type View = { ok: true; value: unknown } | { ok: false; error: unknown }

// Deadlines are kept in buckets of this many milliseconds under one interval timer, armed only
// while some wait is open: for 5,000 waiters, a timer each took 20-35 ms to arm and clear and
// about 0.5 MiB more heap, buckets 2-7 ms. A wait ends at most one bucket after its deadline.
const TICK_MS = 100

// Waiters answered between turns of the event loop: thousands answered by one read must not hold
// off every other request (a /healthz, a move) while their responses are written.
const ANSWER_SLICE = 256

// A waiter keeps what it needs of its spec, not the spec: the caller's spec object, its key and
// its topics (new strings per request) would otherwise stay for as long as the wait is open.
interface Waiter {
  data: unknown
  view: AnySpec['view']
  viewKey: string | undefined
  ready: AnySpec['ready']
  timeoutMs: AnySpec['timeoutMs']
  /** The topic the per-topic cap counts: the group's copy of the string when it is the same. */
  topic: string
  address: string | undefined
  signal: WaitSignal | undefined
  /** The first read generation that may answer it: one that started after it joined. */
  from: number
  hasFirst: boolean
  first: unknown
  /** Time is up, the hub is closing or the caller left: the next read answers it as it is. */
  due: boolean
  holdsTopicSlot: boolean
  group: Group
  /** The deadline bucket it is in, while it waits. */
  tick: number | undefined
  resolve: (answer: { first: unknown; last: unknown }) => void
  reject: (error: unknown) => void
}

interface Group {
  key: string
  /** The first topic of the waiter that opened the group. */
  topic: string
  read: (data: unknown, previous: unknown) => Promise<unknown>
  data: unknown
  /** The last read's value, while the group is open. */
  previous: unknown
  /**
   * No event since the last read started, and it succeeded: a joining waiter may use it, even
   * while a read asked for by other waiters (new, due) runs, since no event asked for that one.
   */
  current: boolean
  /** The views of the last read, by `viewKey`. */
  views: Map<string, View>
  /** Waiters a read asked for by no event must answer: those without a first value, or due. */
  fresh: Set<Waiter>
  waiters: Set<Waiter>
  /** Reads started so far. */
  gen: number
  reading: boolean
  /** Something asked for a read while one ran: exactly one more runs after it. */
  again: boolean
  /**
   * An event arrived since the last read started: the next read is for every waiter. A read
   * asked for only by new or due waiters is applied to those alone, so waiters joining one by
   * one do not re-check every waiter already there (which made opening n waits cost n²).
   */
  changed: boolean
  unsubscribe: (() => void)[]
  /** The one bus listener of the group. */
  onEvent: () => void
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
  private readonly deadlines = new Map<number, Set<Waiter>>()
  private ticker: NodeJS.Timeout | undefined
  private lastTick = 0
  private closed = false
  // One abort listener for every waiter, finding its waiter by signal: no closure per waiter.
  private readonly bySignal = new WeakMap<WaitSignal, Waiter>()
  private readonly onAbort = (event: WaitAbortEvent) => {
    const w = this.bySignal.get(event.target as WaitSignal)
    if (w) this.abort(w.group, w)
  }
  /** Shared reads run so far; for tests and metrics. */
  reads = 0
  /** Waits held open past their first read (what the per-topic cap counts); for tests, metrics. */
  waiting = 0
  /** Views computed so far (one per read and `viewKey`, or per waiter without one); for tests. */
  views = 0
  // Who awaits `untilWaiting`: tests order a change after a wait is held by this, not by a pause.
  private readonly heldHooks: { n: number; resolve: () => void }[] = []

  /**
   * Resolves once at least `n` waits are held open past their first read (`waiting`), at once if
   * they already are: a test starts a wait, awaits this, then makes the change it waits for.
   */
  untilWaiting(n: number): Promise<void> {
    if (this.waiting >= n) return Promise.resolve()
    return new Promise((resolve) => this.heldHooks.push({ n, resolve }))
  }

  /** Waiters held, whether or not their first read has answered, and keys open; for tests. */
  get held(): { waiters: number; keys: number } {
    let waiters = 0
    for (const group of this.groups.values()) waiters += group.waiters.size
    return { waiters, keys: this.groups.size }
  }

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

  /**
   * Waits until a read is `ready`, the time is up (answered by one more read), the caller goes
   * away or the hub shuts down. Over a cap it is refused with `rate_limited` and Retry-After.
   */
  wait<S, V, D = undefined>(spec: WaitSpec<S, V, D>): Promise<{ first: V; last: V }> {
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
      const topic = spec.topics[0]
      const waiter: Waiter = {
        data: anySpec.data,
        view: anySpec.view,
        viewKey: spec.viewKey,
        ready: anySpec.ready,
        timeoutMs: anySpec.timeoutMs,
        topic: topic === group.topic ? group.topic : topic,
        address,
        signal: spec.signal,
        from: group.gen + 1,
        hasFirst: false,
        first: undefined,
        // An abort that came before the wait fires no listener: its caller left already.
        due: this.closed || spec.signal?.aborted === true,
        holdsTopicSlot: false,
        group,
        tick: undefined,
        resolve: resolve as Waiter['resolve'],
        reject,
      }
      group.waiters.add(waiter)
      if (spec.signal) {
        this.bySignal.set(spec.signal, waiter)
        spec.signal.addEventListener('abort', this.onAbort, { once: true })
      }
      if (spec.changesOnlyWithEvents && group.current && !waiter.due) {
        this.apply(group, waiter, { ok: true, value: group.previous }, group.views)
        return
      }
      group.fresh.add(waiter)
      this.requestRead(group)
    })
  }

  private open(spec: AnySpec): Group {
    const group: Group = {
      key: spec.key,
      topic: spec.topics[0],
      read: spec.read,
      data: spec.data,
      previous: undefined,
      current: false,
      views: new Map(),
      fresh: new Set(),
      waiters: new Set(),
      gen: 0,
      reading: false,
      again: false,
      changed: false,
      unsubscribe: [],
      onEvent: () => {
        group.changed = true
        group.current = false
        this.requestRead(group)
      },
    }
    // Subscribed before the first read, so an event committed during it is not lost.
    for (const topic of spec.topics)
      group.unsubscribe.push(this.bus.subscribe(topic, group.onEvent))
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
      const all = group.changed
      group.changed = false
      const gen = ++group.gen
      this.reads++
      let result: Result
      try {
        const value = await group.read(group.data, group.previous)
        group.previous = value
        result = { ok: true, value }
        group.current = !group.changed
      } catch (error) {
        result = { ok: false, error }
        group.current = false
      }
      const views = new Map<string, View>()
      group.views = views
      let answered = 0
      // Nothing changed for a waiter that has its first value and is not due: without an event
      // only the fresh ones are answered.
      for (const waiter of all ? group.waiters : group.fresh) {
        if (waiter.from > gen) continue
        this.apply(group, waiter, result, views)
        if (++answered % ANSWER_SLICE === 0) await yieldToIo()
      }
    } while (group.again && group.waiters.size > 0)
    group.reading = false
    if (group.waiters.size === 0) this.close(group)
  }

  private apply(group: Group, w: Waiter, result: Result, views: Map<string, View>): void {
    if (!result.ok) {
      this.finish(group, w, result.error)
      return
    }
    const view = this.viewOf(w, result.value, views)
    if (!view.ok) {
      this.finish(group, w, view.error)
      return
    }
    const value = view.value
    if (w.hasFirst) {
      if (w.due || w.ready(value, w.first, w.data)) this.settle(group, w, value)
      return
    }
    w.first = value
    w.hasFirst = true
    if (!w.due) group.fresh.delete(w)
    const ms = w.due ? 0 : w.timeoutMs(value, w.data)
    if (ms <= 0 || w.ready(value, value, w.data)) {
      this.settle(group, w, value)
      return
    }
    // Counted only once the first read let the caller in: a stranger's wait (a wrong token, an
    // id it may not see) is answered at once and never takes a slot from the topic's own callers.
    const { topic } = w
    const n = this.perTopic.get(topic) ?? 0
    if (n >= this.limits.maxPerTopic) {
      this.finish(group, w, tooMany('topic', this.limits.maxPerTopic))
      return
    }
    this.perTopic.set(topic, n + 1)
    w.holdsTopicSlot = true
    this.waiting++
    if (this.heldHooks.length > 0) this.wakeHeldHooks()
    this.arm(w, ms)
  }

  private wakeHeldHooks(): void {
    for (let i = this.heldHooks.length - 1; i >= 0; i--) {
      const hook = this.heldHooks[i]!
      if (this.waiting < hook.n) continue
      this.heldHooks.splice(i, 1)
      hook.resolve()
    }
  }

  private viewOf(w: Waiter, shared: unknown, views: Map<string, View>): View {
    const key = w.viewKey
    if (key !== undefined) {
      const known = views.get(key)
      if (known) return known
    }
    let view: View
    this.views++
    try {
      view = { ok: true, value: w.view(shared, w.data) }
    } catch (error) {
      view = { ok: false, error }
    }
    if (key !== undefined) views.set(key, view)
    return view
  }

  private arm(w: Waiter, ms: number): void {
    // Always a bucket after the current one, so never one the ticker has already passed.
    const tick = Math.ceil((Date.now() + ms) / TICK_MS)
    let bucket = this.deadlines.get(tick)
    if (!bucket) {
      bucket = new Set()
      this.deadlines.set(tick, bucket)
    }
    bucket.add(w)
    w.tick = tick
    if (!this.ticker) {
      this.lastTick = Math.floor(Date.now() / TICK_MS)
      this.ticker = setInterval(() => this.onTick(), TICK_MS)
      this.ticker.unref()
    }
  }

  private disarm(w: Waiter): void {
    if (w.tick === undefined) return
    const bucket = this.deadlines.get(w.tick)
    bucket?.delete(w)
    if (bucket?.size === 0) this.deadlines.delete(w.tick)
    w.tick = undefined
    this.stopTickerIfIdle()
  }

  private onTick(): void {
    const now = Math.floor(Date.now() / TICK_MS)
    const due = new Map<Group, Waiter[]>()
    for (let tick = this.lastTick + 1; tick <= now; tick++) {
      const bucket = this.deadlines.get(tick)
      if (!bucket) continue
      this.deadlines.delete(tick)
      for (const w of bucket) {
        w.tick = undefined
        const list = due.get(w.group)
        if (list) list.push(w)
        else due.set(w.group, [w])
      }
    }
    this.lastTick = now
    for (const [group, waiters] of due) this.dueNow(group, waiters)
    this.stopTickerIfIdle()
  }

  private stopTickerIfIdle(): void {
    if (this.deadlines.size > 0 || !this.ticker) return
    clearInterval(this.ticker)
    this.ticker = undefined
  }

  /** Answers these waiters with the next read, whatever it says. */
  private dueNow(group: Group, waiters: Waiter[]): void {
    for (const w of waiters) {
      w.due = true
      w.from = group.gen + 1
      group.fresh.add(w)
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
    group.fresh.delete(w)
    this.disarm(w)
    const { signal } = w
    if (signal) {
      signal.removeEventListener('abort', this.onAbort)
      this.bySignal.delete(signal)
    }
    if (w.holdsTopicSlot) {
      decrement(this.perTopic, w.topic)
      this.waiting--
    }
    if (w.address !== undefined) decrement(this.perAddress, w.address)
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
