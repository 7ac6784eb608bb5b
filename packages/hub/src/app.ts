import { contractLimitsOf } from '@baton/protocol'
import type { Logger } from 'pino'
import { A2aService } from './a2a/service.js'
import { witnessA2a } from './a2a/witness.js'
import { BudgetService } from './budgets/service.js'
import { type Clock, systemClock } from './clock.js'
import { createComputePool } from './compute/pool.js'
import { ComputeRunner } from './compute/runner.js'
import { ComputeService, EMBEDDED_RUNTIME, QUEUE_TOPIC } from './compute/service.js'
import type { Config } from './config.js'
import { type EventBus, MemoryEventBus } from './events/bus.js'
import { PgEventBus } from './events/pg-bus.js'
import { WaitRegistry } from './events/wait.js'
import { GrantService } from './grants/service.js'
import { Notifier } from './handoffs/notify.js'
import { prune as pruneOutbox } from './handoffs/outbox-store.js'
import { HandoffService } from './handoffs/service.js'
import { HomeService } from './home/service.js'
import { hubRefPolicy } from './hops/refs.js'
import { HopService } from './hops/service.js'
import { loadHubSigner } from './identity/hub-key.js'
import { IdentityService } from './identity/service.js'
import { principalUsage } from './identity/usage.js'
import { startPeriodic } from './jobs/cleanup.js'
import { createLogger } from './log.js'
import { MessageService } from './messages/service.js'
import { countingBus, createMetrics, type Metrics } from './metrics.js'
import { ResourceService } from './resources/service.js'
import { SessionService } from './sessions/service.js'
import { type Database, openDatabase, ping } from './store/database.js'
import { pruneIdempotencyKeys } from './store/idempotency.js'
import { pruneQuotaCounters } from './store/quota.js'
import { KeySealer } from './store/sealing.js'
import { countStatements, transaction, WriteBatcher } from './store/transaction.js'
import { startTracing, type Tracing } from './telemetry/tracing.js'
import { TransferService } from './transfers/service.js'
import { TokenKeyring } from './transfers/tokens.js'
import { VERSION } from './version.js'

/** Every service of the hub, built once from config; HTTP, MCP and jobs all use this one object. */
export interface AppContext {
  version: string
  config: Config
  log: Logger
  clock: Clock
  metrics: Metrics
  /** OpenTelemetry spans, exported when an OTLP endpoint is configured; a no-op otherwise. */
  tracing: Tracing
  database: Database
  /** Seals the hub's keys at rest. */
  sealer: KeySealer
  batcher: WriteBatcher
  bus: EventBus
  /** Every long poll: shared reads per topic, and the caps on concurrent waits. */
  waits: WaitRegistry
  notifier: Notifier
  handoffs: HandoffService
  identity: IdentityService
  /** The operator's signed-out dashboard sessions. */
  sessions: SessionService
  resources: ResourceService
  grants: GrantService
  messages: MessageService
  home: HomeService
  transfers: TransferService
  /** The hub as a delegation witness for signed handoff contexts (seed 003). */
  hops: HopService
  /** Budgets on delegations: a ledger per hop, attenuated down the chain (issue 28). */
  budgets: BudgetService
  /** Compute jobs and runtimes (seed 000 json-expr-v1). */
  compute: ComputeService
  /** The hub as a durable A2A task relay (issue 16). */
  a2a: A2aService
  isClosing(): boolean
  /** Marks the hub as closing and answers every waiter now, before in-flight requests finish. */
  beginShutdown(): void
  /** Stops jobs, releases waiters, finishes queued writes and closes the database. */
  close(): Promise<void>
  /** Runs the cleanup jobs once now; for tests and operators. */
  runCleanup(): Promise<void>
}

/** Assembles the hub from its config; tests inject a clock and a log destination. */
export async function createApp(
  config: Config,
  opts: { clock?: Clock; log?: Logger; bus?: EventBus } = {},
): Promise<AppContext> {
  const log = opts.log ?? createLogger(config.logLevel)
  const clock = opts.clock ?? systemClock
  const metrics = createMetrics()
  // Before the database opens: PostgreSQL without BATON_HUB_KEY_SECRET refuses to start.
  const sealer = KeySealer.load({ ...config, hubKeySecret: config.identity.hubKeySecret, log })
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqliteWriterThread: config.sqliteWriterThread,
    log,
  })
  let bus: EventBus | undefined
  const tracing = await startTracing(config.tracing, VERSION, log).catch(async (error) => {
    await database.close().catch(() => {})
    throw error
  })
  try {
    return await assemble(config, opts, { log, clock, metrics, tracing, database, sealer }, (b) => {
      bus = b
    })
  } catch (error) {
    // Nothing is left open by a hub that failed to start (a sealed key without its secret, say).
    await bus?.close().catch(() => {})
    await database.close().catch(() => {})
    await tracing.shutdown()
    throw error
  }
}

async function assemble(
  config: Config,
  opts: { clock?: Clock; log?: Logger; bus?: EventBus },
  base: {
    log: Logger
    clock: Clock
    metrics: Metrics
    tracing: Tracing
    database: Database
    sealer: KeySealer
  },
  opened: (bus: EventBus) => void,
): Promise<AppContext> {
  const { log, clock, metrics, tracing, database, sealer } = base
  countStatements(database)
  const batcher = new WriteBatcher(
    database,
    config.maxBatch,
    (n) => metrics.batchSize.observe(n),
    database.caps.writeConcurrency,
    (seconds) => metrics.commitDuration.observe(seconds),
  )
  // One instance hears its own events in memory; many instances share them through PostgreSQL.
  const bus = metrics.countEvents(
    opts.bus ??
      (config.databaseUrl
        ? await PgEventBus.connect(config.databaseUrl, log, (up) =>
            metrics.eventListener().set(up ? 1 : 0),
          )
        : new MemoryEventBus()),
  )
  opened(bus)
  const notifier = new Notifier(database, clock, {
    ...config.notify,
    log,
    onOutcome: (outcome) => metrics.notifyDeliveries.inc({ outcome }),
  })
  notifier.registerMetrics(metrics.registry)
  let closing = false
  let release: () => void = () => {}
  const closingSignal = new Promise<void>((r) => {
    release = r
  })
  const waits = new WaitRegistry(bus, closingSignal, config.waits)
  metrics.countWaitsWith(() => waits.waiting)
  metrics.checkUpWith(async () => !closing && (await ping(database)))
  const handoffs = new HandoffService({
    database,
    batcher,
    clock,
    bus,
    config: config.handoff,
    notify: notifier,
    allowLoopbackNotify: config.notify.allowLoopback,
    waits,
    onMove: (outcome) => metrics.handoffMoves.inc({ outcome }),
    onBatch: (n) => metrics.batchSize.observe(n),
    onCommitted: (seconds) => metrics.commitDuration.observe(seconds),
    maxBatch: config.maxBatch,
  })
  const identity = new IdentityService({
    database,
    batcher,
    clock,
    config: config.identity,
    bodyLimitBytes: config.bodyLimitBytes,
    contractLimits: contractLimitsOf(config),
    version: VERSION,
    usage: principalUsage,
    bus,
    sealer,
  })
  await identity.init()
  const sessions = new SessionService({ database, batcher, bus, clock })
  const grants = new GrantService({
    database,
    batcher,
    clock,
    bus,
    maxTtlMs: config.resources.grantMaxTtlMs,
    // The resource service needs the grants, so it is reached when a grant is decided.
    resources: { findForGrant: (db, id) => resources.findForGrant(db, id) },
  })
  const resources = new ResourceService({
    database,
    batcher,
    clock,
    bus,
    grants,
    maxBytes: config.resources.maxBytes,
    maxPageSize: config.resources.maxPageSize,
    storedBytesQuota: config.identity.quotas.storedBytes,
  })
  const hubSigner = await loadHubSigner(identity)
  const messages = new MessageService({
    database,
    batcher,
    clock,
    bus,
    config: config.messages,
    messagesPerDay: config.identity.quotas.messagesPerDay,
    signer: hubSigner,
    waits,
    identity,
  })
  const home = new HomeService({
    database,
    batcher,
    clock,
    bus,
    config: config.home,
    storedBytesQuota: config.identity.quotas.storedBytes,
  })
  const transfers = new TransferService({
    database,
    batcher,
    clock,
    bus,
    config: config.transfer,
    keyring: await TokenKeyring.load(database, config.transfer.tokenKeys, clock.now(), sealer),
    log,
    waits,
  })
  // A crossing is delivered to the delegator's hop inbox, which the hop service keeps; the hop
  // service opens and closes budgets in its own transactions, so it is reached when one crosses.
  const budgets = new BudgetService({
    database,
    batcher,
    clock,
    bus,
    config: config.budgets,
    notices: { deliver: (tx, d, now) => hops.deliverNotice(tx, d, now) },
  })
  const hops = new HopService({
    database,
    batcher,
    clock,
    bus,
    signer: hubSigner,
    refs: (sender) => hubRefPolicy({ resources, transfers, grants }, sender),
    grants,
    identity,
    budgets,
  })
  const a2a = new A2aService({
    database,
    batcher,
    clock,
    bus,
    waits,
    notify: notifier,
    allowLoopbackNotify: config.notify.allowLoopback,
    limits: config.a2a,
    maxMessageBytes: config.messages.maxBodyBytes,
    storedBytesQuota: config.identity.quotas.storedBytes,
    maxWaitMs: config.messages.maxWaitSeconds * 1000,
    sendsPerDay: config.identity.quotas.messagesPerDay,
    witness: (sender, agent, message, by) => witnessA2a(hops, sender, agent, message, by),
    identity,
    budgets,
  })
  notifier.addHeaders((row) => a2a.notificationHeaders(row))
  notifier.onSettled((db, row) => a2a.releaseNotification(db, row))
  // Sends queued before a restart, or whose pass failed, are fanned out by the next poll.
  const fanOutJob = startPeriodic(
    'a2a-push-fan-out',
    config.notify.pollIntervalMs,
    () => a2a.fanOut().then(() => undefined),
    log,
  )
  // seed 004: insolvent transfers end within seconds of their grace, not at the next cron.
  const reaperJob = startPeriodic(
    'transfer-reaper',
    config.transfer.reapIntervalMs,
    () => transfers.reap(),
    log,
  )
  // Issue 28: holds and budgets are released at their expiry within a second, by any instance.
  const budgetReaper = startPeriodic(
    'budget-reaper',
    config.budgets.reapIntervalMs,
    () => budgets.reap(),
    log,
  )
  const compute = new ComputeService({
    database,
    batcher,
    clock,
    bus,
    waits,
    config: config.compute,
    resources,
    grants,
    log,
  })
  const computeReaper = startPeriodic(
    'compute-reaper',
    Math.max(250, Math.floor(config.compute.leaseMs / 3)),
    () => compute.reap(),
    log,
  )
  // The embedded runtime: `npm start` alone runs json-expr-v1, registered like any runtime.
  let embedded: ComputeRunner | undefined
  let embeddedPool: ReturnType<typeof createComputePool> | undefined
  if (config.compute.embedded) {
    // Lazy: its worker threads (about 20 MiB each) run only while there is work.
    embeddedPool = createComputePool({
      ...(config.compute.workers === undefined ? {} : { size: config.compute.workers }),
      idleMs: config.compute.idleMs,
    })
    const size = embeddedPool.size
    embedded = new ComputeRunner(
      {
        heartbeat: (runtimeId, languages) =>
          compute.heartbeat(EMBEDDED_RUNTIME, { runtimeId, languages }).then(() => {}),
        claim: (runtimeId) => compute.claim(EMBEDDED_RUNTIME, runtimeId),
        renew: (jobId, leaseId) =>
          compute.renew(EMBEDDED_RUNTIME, jobId, { leaseId }).then(() => {}),
        complete: (jobId, result) =>
          compute.complete(EMBEDDED_RUNTIME, jobId, result).then(() => {}),
        stop: (runtimeId) => compute.stopRuntime(EMBEDDED_RUNTIME, runtimeId).then(() => {}),
      },
      embeddedPool,
      {
        languages: ['json-expr-v1'],
        concurrency: size,
        heartbeatMs: Math.max(100, Math.floor(config.compute.runtimeTtlMs / 3)),
        pollMs: 1000,
        renewMs: Math.max(100, Math.floor(config.compute.leaseMs / 3)),
        onWork: (wake) => bus.subscribe(QUEUE_TOPIC, wake),
        log: (event, data) => log.debug({ ...data }, event),
      },
    )
    await embedded.start()
  }
  // Delivered signals are kept one horizon, dead ones a week longer, for inspection.
  const pruneSignals = (db: Database['db'], now: number, horizonMs: number) =>
    pruneOutbox(db, now - horizonMs, now - horizonMs - 7 * 86_400_000)
  const cleanupAll = async () => {
    let removed = await handoffs.cleanup()
    removed += await identity.cleanup()
    removed += await transaction(database, async (tx) => {
      const now = clock.now()
      return (await pruneIdempotencyKeys(tx.db, now)) + (await pruneQuotaCounters(tx.db, now))
    })
    removed += await hops.cleanup()
    removed += await pruneSignals(database.db, clock.now(), config.notify.horizonMs)
    return removed
  }
  const cleanupJob = startPeriodic('cleanup', config.handoff.cleanupIntervalMs, cleanupAll, log)
  metrics.countTransfersWith(() => transfers.countByState())
  // Signals are signed with the key discovery publishes, so receivers can verify them.
  notifier.start(hubSigner)
  log.info({ store: database.describe }, 'database ready')

  return {
    version: VERSION,
    config,
    log,
    clock,
    metrics,
    tracing,
    database,
    sealer,
    batcher,
    // The dashboard's event streams are the bus's only wildcard subscribers.
    bus: countingBus(bus, metrics.sseClients, (topic) => topic === '*'),
    waits,
    notifier,
    handoffs,
    identity,
    sessions,
    resources,
    grants,
    messages,
    home,
    transfers,
    hops,
    budgets,
    compute,
    a2a,
    isClosing: () => closing,
    beginShutdown() {
      closing = true
      release()
    },
    async close() {
      closing = true
      release()
      await cleanupJob.stop()
      await reaperJob.stop()
      await budgetReaper.stop()
      await fanOutJob.stop()
      await a2a.drainFanOut()
      await embedded?.stop()
      await embeddedPool?.close()
      await computeReaper.stop()
      await batcher.flush()
      await notifier.stop()
      await bus.close()
      await database.close()
      await tracing.shutdown()
    },
    runCleanup: () => cleanupJob.runNow(),
  }
}
