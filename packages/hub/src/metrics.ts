import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/** The hub's Prometheus metrics, one registry per hub so several hubs can share a process. */
export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'baton_process_' })
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
  }
}

/** The metrics object every part of the hub records into. */
export type Metrics = ReturnType<typeof createMetrics>
