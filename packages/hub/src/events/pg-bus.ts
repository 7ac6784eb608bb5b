import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { Logger } from 'pino'
import { guardPool } from '../store/database.js'
import { type BatonEvent, type EventBus, type Listener, MemoryEventBus } from './bus.js'

const CHANNEL = 'baton_events'
// PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; events are hints, so a larger one is
// sent without its data and listeners re-read the database as they always must.
const MAX_PAYLOAD = 7000
const RETRY_MS = 1000

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
    private readonly onListening?: (up: boolean) => void,
  ) {
    this.pool = new pg.Pool({ connectionString: url, max: 2 })
    guardPool(this.pool)
  }

  /**
   * Connects the listening session and answers the bus once it listens; `onListening` hears
   * each loss and return of that session.
   */
  static async connect(
    url: string,
    log?: Logger,
    onListening?: (up: boolean) => void,
  ): Promise<PgEventBus> {
    const bus = new PgEventBus(url, log, onListening)
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
    // One handler for the client's whole life: a connection lost at any point (even while the
    // connect or the LISTEN is in flight) is an 'error' here, never an unhandled event.
    let lost = false
    client.on('error', (err) => {
      if (lost) return
      lost = true
      this.log?.warn({ err }, 'event listener connection lost')
      if (this.listener === client) this.listener = undefined
      this.onListening?.(false)
      void client.end().catch(() => {})
      this.relisten()
    })
    try {
      await client.connect()
      await client.query(`listen ${CHANNEL}`)
    } catch (error) {
      lost = true
      void client.end().catch(() => {})
      throw error
    }
    if (this.closed) {
      await client.end().catch(() => {})
      return
    }
    this.listener = client
    this.onListening?.(true)
  }

  // Tries again every second until the listening session is back or the bus is closed: the
  // database may stay away for a while (a restart, a failover), so one failed attempt is no end.
  private relisten(): void {
    if (this.closed || this.retrying) return
    this.retrying = true
    const attempt = () => {
      if (this.closed) return
      this.listen().then(
        () => {
          this.retrying = false
          if (!this.closed) this.log?.info('event listener reconnected')
        },
        () => setTimeout(attempt, RETRY_MS).unref(),
      )
    }
    setTimeout(attempt, RETRY_MS).unref()
  }

  private retrying = false

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

  listenerCount(): number {
    return this.local.listenerCount()
  }

  async close(): Promise<void> {
    this.closed = true
    await this.local.close()
    await this.listener?.end().catch(() => {})
    await this.pool.end().catch(() => {})
  }
}
