import type { EventBus } from './bus.js'

/** What a long poll needs: where to listen, how to read, and when the answer is ready. */
export interface WaitOptions<V> {
  bus: EventBus
  topic: string
  /** Reads the truth from the database; events are only hints to call it again. */
  read: () => Promise<V>
  /** Whether `value` answers the wait, given the first read. */
  ready: (value: V, first: V) => boolean
  /** How long to wait after the first read, in milliseconds; 0 answers at once. */
  timeoutMs: (first: V) => number
  /** Resolves when the hub shuts down, which answers every waiter. */
  closing: Promise<void>
  signal?: AbortSignal | undefined
}

/**
 * The race-free long poll every wait in the hub uses: subscribe before the first read, re-arm
 * before every re-read (so an event during a read is not lost), and answer as soon as a read is
 * ready, the time is up, the caller goes away or the hub shuts down.
 */
export async function waitForChange<V>(o: WaitOptions<V>): Promise<{ first: V; last: V }> {
  let wake: () => void = () => {}
  let woken = new Promise<void>((r) => {
    wake = r
  })
  const unsubscribe = o.bus.subscribe(o.topic, () => wake())
  let timer: NodeJS.Timeout | undefined
  try {
    const first = await o.read()
    const ms = o.timeoutMs(first)
    if (ms <= 0 || o.ready(first, first)) return { first, last: first }
    let done = false
    const timeout = new Promise<void>((r) => {
      timer = setTimeout(r, ms)
    }).then(() => {
      done = true
    })
    const stop = Promise.race([
      new Promise<void>((r) => o.signal?.addEventListener('abort', () => r(), { once: true })),
      o.closing,
    ]).then(() => {
      done = true
    })
    for (;;) {
      await Promise.race([woken, timeout, stop])
      woken = new Promise<void>((r) => {
        wake = r
      })
      const last = await o.read()
      if (done || o.ready(last, first)) return { first, last }
    }
  } finally {
    clearTimeout(timer)
    unsubscribe()
  }
}
