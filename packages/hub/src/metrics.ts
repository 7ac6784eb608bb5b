import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { EventBus } from './events/bus.js'

/** The codes of a signed request refused for its signature (seed 000; RFC 9421, RFC 9530). */
const SIGNATURE_FAILURES = new Set([
  'signature_missing',
  'signature_malformed',
  'unknown_key',
  'signature_invalid',
  'digest_mismatch',
  'signature_stale',
  'signature_replayed',
])

/** The hub's Prometheus metrics, one registry per hub so several hubs can share a process. */
export function createMetrics() {
  const registry = new Registry()
  // prom-client's default names already start with process_ or nodejs_.
  collectDefaultMetrics({ register: registry, prefix: 'baton_' })
  let transferStates: (() => Promise<Record<string, number>>) | undefined
  let waitCount: (() => number) | undefined
  return {
    registry,
    httpRequests: new Counter({
      name: 'baton_http_requests_total',
      help: 'HTTP requests answered, by method, route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'baton_http_request_duration_seconds',
      help: 'Time to answer an HTTP request',
      labelNames: ['method', 'route'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: 'baton_write_batch_size',
      help: 'Writes committed together in one transaction (group commit)',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers: [registry],
    }),
    handoffMoves: new Counter({
      name: 'baton_handoff_moves_total',
      help: 'Handoff move requests, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    notifyDeliveries: new Counter({
      name: 'baton_notify_deliveries_total',
      help: 'notify_url deliveries, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    connectionsRefused: new Counter({
      name: 'baton_connections_refused_total',
      help: 'Connections closed on accept because their client address held the most allowed',
      registers: [registry],
    }),
    eventListenerUp: new Gauge({
      name: 'baton_event_listener_up',
      help: 'Whether the PostgreSQL LISTEN session of the event bus is connected (1) or reconnecting (0)',
      registers: [registry],
    }),
    signatureFailures: new Counter({
      name: 'baton_signature_failures_total',
      help: 'Signed requests refused for their signature, by error code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    commitDuration: new Histogram({
      name: 'baton_write_commit_duration_seconds',
      help: 'Time from the start of a group-commit transaction to its answer',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    openWaits: new Gauge({
      name: 'baton_open_waits',
      help: 'Long-poll waits (handoffs, messages, transfers) listening for a change',
      registers: [registry],
      collect() {
        if (waitCount) this.set(waitCount())
      },
    }),
    sseClients: new Gauge({
      name: 'baton_sse_clients',
      help: 'Dashboard event streams (server-sent events) open',
      registers: [registry],
    }),
    transfers: new Gauge({
      name: 'baton_transfers',
      help: 'Session transfers stored, by state',
      labelNames: ['state'] as const,
      registers: [registry],
      async collect() {
        if (!transferStates) return
        const counts = await transferStates()
        this.reset()
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
      },
    }),
    /** Where the open-waits gauge reads its count at each scrape. */
    countWaitsWith(read: () => number): void {
      waitCount = read
    },
    /** Where the transfers gauge reads its counts at each scrape. */
    countTransfersWith(read: () => Promise<Record<string, number>>): void {
      transferStates = read
    },
    /** Counts an error answered to a client when it is a signature failure. */
    recordError(code: string): void {
      if (SIGNATURE_FAILURES.has(code)) this.signatureFailures.inc({ code })
    },
  }
}

/**
 * An event bus that keeps `gauge` at the number of its subscriptions open (those whose topic
 * `counts`); the hub hands it to features whose only subscriptions are waits and streams.
 */
export function countingBus(
  bus: EventBus,
  gauge: Gauge,
  counts: (topic: string) => boolean = () => true,
): EventBus {
  return {
    publish: (event) => bus.publish(event),
    close: () => bus.close(),
    listenerCount: () => bus.listenerCount?.() ?? 0,
    subscribe(topic, listener) {
      const unsubscribe = bus.subscribe(topic, listener)
      if (!counts(topic)) return unsubscribe
      gauge.inc()
      let open = true
      return () => {
        if (open) gauge.dec()
        open = false
        unsubscribe()
      }
    },
  }
}

/** The metrics object every part of the hub records into. */
export type Metrics = ReturnType<typeof createMetrics>
