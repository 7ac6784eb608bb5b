import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { Logger } from 'pino'
import { type BatonEvent, type EventBus, type Listener, MemoryEventBus } from './bus.js'

const CHANNEL = 'baton_events'
// PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; events are hints, so a larger one is
// sent without its data and listeners re-read the database as they always must.
const MAX_PAYLOAD = 7000

/**
 * The event bus across hub instances: local listeners hear an event at once, and every other
 * instance hears it through PostgreSQL LISTEN/NOTIFY. A lost connection is re-established.
 */
export class PgEventBus implements EventBus {
  private readonly local = new MemoryEventBus()
  private readonly origin = randomUUID()
  private listener: pg.Client | undefined
  private closed = false
  private readonly pool: pg.Pool

  private constructor(
    private readonly url: string,
    private readonly log?: Logger,
  ) {
    this.pool = new pg.Pool({ connectionString: url, max: 2 })
    this.pool.on('error', () => {})
  }

  /** Connects the listening session and answers the bus once it listens. */
  static async connect(url: string, log?: Logger): Promise<PgEventBus> {
    const bus = new PgEventBus(url, log)
    await bus.listen()
    return bus
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url })
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL || !msg.payload) return
      try {
        const { origin, event } = JSON.parse(msg.payload) as { origin: string; event: BatonEvent }
        if (origin !== this.origin) this.local.publish(event)
      } catch {
        // a malformed notification is not ours to act on
      }
    })
    client.on('error', (err) => {
      this.log?.warn({ err }, 'event listener connection lost')
      this.listener = undefined
      void client.end().catch(() => {})
      if (!this.closed) setTimeout(() => void this.listen().catch(() => {}), 1000).unref()
    })
    await client.connect()
    await client.query(`listen ${CHANNEL}`)
    this.listener = client
  }

  publish(event: BatonEvent): void {
    this.local.publish(event)
    let payload = JSON.stringify({ origin: this.origin, event })
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
      payload = JSON.stringify({ origin: this.origin, event: { ...event, data: {} } })
    }
    this.pending.push(payload)
    if (this.pending.length === 1) setImmediate(() => this.flush())
  }

  private pending: string[] = []

  // Events published together (a batch of moves commits at once) go out in one statement.
  private flush(): void {
    const payloads = this.pending.splice(0)
    if (payloads.length === 0) return
    this.pool
      .query('select pg_notify($1, p) from unnest($2::text[]) as p', [CHANNEL, payloads])
      .catch((err) => this.log?.warn({ err }, 'event notify failed'))
  }

  subscribe(topic: string, listener: Listener): () => void {
    return this.local.subscribe(topic, listener)
  }

  async close(): Promise<void> {
    this.closed = true
    await this.local.close()
    await this.listener?.end().catch(() => {})
    await this.pool.end().catch(() => {})
  }
}
