/** A change notification: a hint to re-read, never the truth itself (the database is). */
export interface BatonEvent {
  topic: string
  type: string
  at: number
  data: Record<string, unknown>
}

/** A listener gets every event published on a topic it subscribed to. */
export type Listener = (event: BatonEvent) => void

/**
 * The event bus every feature publishes committed changes to. In one process it is in-memory;
 * across hub instances the same interface rides on PostgreSQL LISTEN/NOTIFY.
 */
export interface EventBus {
  /** Publishes to every subscriber of `event.topic` and of the wildcard topic `*`. */
  publish(event: BatonEvent): void
  /** Subscribes to a topic; the returned function unsubscribes. */
  subscribe(topic: string, listener: Listener): () => void
  /** How many listeners are subscribed in this process, over all topics; for tests and metrics. */
  listenerCount?(): number
  close(): Promise<void>
}

/** The in-process bus. */
export class MemoryEventBus implements EventBus {
  private readonly topics = new Map<string, Set<Listener>>()

  publish(event: BatonEvent): void {
    for (const key of [event.topic, '*']) {
      const set = this.topics.get(key)
      if (!set) continue
      for (const listener of [...set]) {
        try {
          listener(event)
        } catch {
          // a listener's failure is its own; other listeners still hear the event
        }
      }
    }
  }

  subscribe(topic: string, listener: Listener): () => void {
    let set = this.topics.get(topic)
    if (!set) {
      set = new Set()
      this.topics.set(topic, set)
    }
    set.add(listener)
    return () => {
      const current = this.topics.get(topic)
      if (!current) return
      current.delete(listener)
      if (current.size === 0) this.topics.delete(topic)
    }
  }

  /** How many listeners are subscribed, over all topics; for tests and metrics. */
  listenerCount(): number {
    let n = 0
    for (const set of this.topics.values()) n += set.size
    return n
  }

  async close(): Promise<void> {
    this.topics.clear()
  }
}
