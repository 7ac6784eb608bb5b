import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { BatonEvent, EventBus } from './events/bus.js'

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

/** How long a scrape waits for the database to answer before `baton_up` says 0. */
const UP_TIMEOUT_MS = 2000

/**
 * prom-client's defaults that are gauges named `_total`; Prometheus keeps `_total` for counters.
 * Their values are the sums of `nodejs_active_handles`, `nodejs_active_requests` and
 * `nodejs_active_resources` over their `type` label, which stay.
 */
const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]

/** The hub's Prometheus metrics, one registry per hub so several hubs can share a process. */
export function createMetrics() {
  const registry = new Registry()
  // Unprefixed, as the standard process and Node.js dashboards expect them.
  collectDefaultMetrics({ register: registry })
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name)
  let transferStates: (() => Promise<Record<string, number>>) | undefined
  let waitCount: (() => number) | undefined
  let isUp: (() => Promise<boolean>) | undefined
  const events = createEventMetrics(registry)
  return {
    registry,
    up: new Gauge({
      name: 'baton_up',
      help: 'Whether the hub serves and its database answers (1) or not (0), at each scrape',
      registers: [registry],
      async collect() {
        if (!isUp) return
        let timer: NodeJS.Timeout | undefined
        const late = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), UP_TIMEOUT_MS)
        })
        const up = await Promise.race([isUp().catch(() => false), late])
        clearTimeout(timer)
        this.set(up ? 1 : 0)
      },
    }),
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
        // A database that does not answer leaves the series out, so the scrape still answers
        // and baton_up says why.
        const counts = await transferStates().catch(() => undefined)
        this.reset()
        if (counts) for (const [state, n] of Object.entries(counts)) this.set({ state }, n)
      },
    }),
    /**
     * The gauge of the PostgreSQL LISTEN session of the event bus, made only on PostgreSQL: a
     * SQLite hub has no such session, and a 0 there would read as an outage.
     */
    eventListener(): Gauge {
      return (
        (registry.getSingleMetric('baton_event_listener_up') as Gauge | undefined) ??
        new Gauge({
          name: 'baton_event_listener_up',
          help: 'Whether the PostgreSQL LISTEN session of the event bus is connected (1) or reconnecting (0)',
          registers: [registry],
        })
      )
    },
    /** Where `baton_up` asks, at each scrape, whether the hub serves and its database answers. */
    checkUpWith(read: () => Promise<boolean>): void {
      isUp = read
    },
    /**
     * A bus that counts each event this instance publishes into the domain metrics. Events are
     * published after their write committed, so the counters count committed work; events
     * heard from other instances (PostgreSQL) pass the inner bus only and are not counted twice.
     */
    countEvents(bus: EventBus): EventBus {
      return {
        publish(event) {
          events.record(event)
          bus.publish(event)
        },
        subscribe: (topic, listener) => bus.subscribe(topic, listener),
        close: () => bus.close(),
        listenerCount: () => bus.listenerCount?.() ?? 0,
      }
    },
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

/** The domain counters, one per feature, fed from the committed events. */
function createEventMetrics(registry: Registry) {
  const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new Counter({ name, help, labelNames, registers: [registry] })
  const handoffsCreated = counter('baton_handoffs_created_total', 'Token handoffs created')
  const messagesSent = counter('baton_messages_sent_total', 'Messages sent (committed)')
  const messagesAcked = counter('baton_messages_acked_total', 'Messages acknowledged')
  const computeJobs = counter(
    'baton_compute_jobs_total',
    'Compute job state changes, by the state entered (queued, running, succeeded, failed, canceled)',
    ['state'],
  )
  const a2aTasks = counter(
    'baton_a2a_task_updates_total',
    'A2A task changes committed (a send, a status, an artifact), by the state after the change',
    ['state'],
  )
  const hops = counter(
    'baton_hop_deliveries_total',
    'Signed handoff context deliveries witnessed by the hub, by kind (offer, status, and the notices equivocation, upstream-canceled and budget-crossing)',
    ['kind'],
  )
  const budgets = counter(
    'baton_budget_changes_total',
    'Budget ledger changes committed, by change: granted (a root budget), reserved (from a parent), held, settled, spent, refused (a crossing), released (a budget closed), hold_released (at its expiry)',
    ['change'],
  )
  const admissions = counter(
    'baton_admissions_total',
    'Admission decisions: new keys enrolled (pending, or approved under open admission) and operator decisions, by the state decided',
    ['state'],
  )
  const transfers = counter(
    'baton_transfer_transitions_total',
    'Session transfer state changes, by the state entered',
    ['state'],
  )
  const resources = counter(
    'baton_resource_versions_total',
    'Resource versions written, by change (created: version 1, updated: a later one)',
    ['change'],
  )
  const grants = counter(
    'baton_grant_changes_total',
    'Grants issued, and grants revoked (a revocation counts every grant passed on from it)',
    ['change'],
  )
  const home = counter(
    'baton_home_file_changes_total',
    'Home file revisions written, and home files deleted, by change',
    ['change'],
  )
  const state = (event: BatonEvent) => String(event.data.state ?? 'unknown')
  return {
    record(event: BatonEvent): void {
      const type = event.type
      if (type === 'message.created') messagesSent.inc()
      else if (type === 'message.acked') messagesAcked.inc()
      else if (type === 'handoff.created') handoffsCreated.inc()
      else if (type === 'resource.created') resources.inc({ change: 'created' })
      else if (type === 'resource.updated') resources.inc({ change: 'updated' })
      else if (type === 'grant.created') grants.inc({ change: 'issued' })
      else if (type === 'grant.revoked') {
        grants.inc({ change: 'revoked' }, Number(event.data.revoked ?? 1))
      } else if (type === 'home.written') home.inc({ change: 'written' })
      else if (type === 'home.deleted') home.inc({ change: 'deleted' })
      else if (type === 'principal.enrolled' || type === 'principal.decided') {
        admissions.inc({ state: state(event) })
      } else if (type === 'a2a.task.changed') a2aTasks.inc({ state: state(event) })
      else if (type.startsWith('hop.')) hops.inc({ kind: type.slice(4) })
      // A `budget.changed` event only tells readers to look again (a parent reserved from).
      else if (type.startsWith('budget.') && type !== 'budget.changed') {
        budgets.inc({ change: type.slice(7) })
      }
      // The queue topic repeats a job's event (without its id) as a hint to runtimes; the job's
      // own event counts.
      // The type names the state entered (the event's data may hold the row before the move).
      else if (type.startsWith('compute.job.') && event.data.jobId !== undefined) {
        computeJobs.inc({ state: type.slice(12) })
      } else if (type.startsWith('transfer.') && type !== 'transfer.usage') {
        transfers.inc({ state: state(event) })
      }
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
