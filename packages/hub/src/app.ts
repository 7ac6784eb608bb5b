import type { Logger } from 'pino'
import { type Clock, systemClock } from './clock.js'
import type { Config } from './config.js'
import { type EventBus, MemoryEventBus } from './events/bus.js'
import { PgEventBus } from './events/pg-bus.js'
import { GrantService } from './grants/service.js'
import { Notifier } from './handoffs/notify.js'
import { HandoffService } from './handoffs/service.js'
import { HomeService } from './home/service.js'
import { loadHubSigner } from './identity/hub-key.js'
import { IdentityService } from './identity/service.js'
import { principalUsage } from './identity/usage.js'
import { startPeriodic } from './jobs/cleanup.js'
import { createLogger } from './log.js'
import { MessageService } from './messages/service.js'
import { countingBus, createMetrics, type Metrics } from './metrics.js'
import { ResourceService } from './resources/service.js'
import { ownedBytes } from './resources/store.js'
import { type Database, openDatabase } from './store/database.js'
import { pruneIdempotencyKeys } from './store/idempotency.js'
import { pruneQuotaCounters } from './store/quota.js'
import { transaction, WriteBatcher } from './store/transaction.js'
import { TransferService } from './transfers/service.js'
import { TokenKeyring } from './transfers/tokens.js'
import { VERSION } from './version.js'

export { VERSION }

/** Every service of the hub, built once from config; HTTP, MCP and jobs all use this one object. */
export interface AppContext {
  version: string
  config: Config
  log: Logger
  clock: Clock
  metrics: Metrics
  database: Database
  batcher: WriteBatcher
  bus: EventBus
  notifier: Notifier
  handoffs: HandoffService
  identity: IdentityService
  resources: ResourceService
  grants: GrantService
  messages: MessageService
  home: HomeService
  transfers: TransferService
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
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  let bus: EventBus | undefined
  try {
    return await assemble(config, opts, { log, clock, metrics, database }, (b) => {
      bus = b
    })
  } catch (error) {
    // Nothing is left open by a hub that failed to start (a sealed key without its secret, say).
    await bus?.close().catch(() => {})
    await database.close().catch(() => {})
    throw error
  }
}

async function assemble(
  config: Config,
  opts: { clock?: Clock; log?: Logger; bus?: EventBus },
  base: { log: Logger; clock: Clock; metrics: Metrics; database: Database },
  opened: (bus: EventBus) => void,
): Promise<AppContext> {
  const { log, clock, metrics, database } = base
  const batcher = new WriteBatcher(
    database,
    config.maxBatch,
    (n) => metrics.batchSize.observe(n),
    database.caps.writeConcurrency,
    (seconds) => metrics.commitDuration.observe(seconds),
  )
  // One instance hears its own events in memory; many instances share them through PostgreSQL.
  const bus =
    opts.bus ??
    (config.databaseUrl ? await PgEventBus.connect(config.databaseUrl, log) : new MemoryEventBus())
  opened(bus)
  // The only subscriptions of these features are their long-poll waits.
  const waitBus = countingBus(bus, metrics.openWaits)
  const notifier = new Notifier({
    ...config.notify,
    log,
    onOutcome: (outcome) => {
      metrics.notifyPending.dec()
      metrics.notifyDeliveries.inc({ outcome })
    },
  })
  const notify = {
    enqueue: (...args: Parameters<Notifier['enqueue']>) => {
      metrics.notifyPending.inc()
      notifier.enqueue(...args)
    },
  }
  let closing = false
  let release: () => void = () => {}
  const closingSignal = new Promise<void>((r) => {
    release = r
  })
  const handoffs = new HandoffService({
    database,
    batcher,
    clock,
    bus: waitBus,
    config: config.handoff,
    notify,
    allowLoopbackNotify: config.notify.allowLoopback,
    closing: closingSignal,
    onMove: (outcome) => metrics.handoffMoves.inc({ outcome }),
  })
  const identity = new IdentityService({
    database,
    batcher,
    clock,
    config: config.identity,
    bodyLimitBytes: config.bodyLimitBytes,
    version: VERSION,
    usage: principalUsage,
    bus,
  })
  await identity.init()
  const grants = new GrantService({
    database,
    batcher,
    clock,
    bus,
    maxTtlMs: config.resources.grantMaxTtlMs,
  })
  const resources = new ResourceService({
    database,
    batcher,
    clock,
    bus,
    grants,
    maxBytes: config.resources.maxBytes,
    storedBytesQuota: config.identity.quotas.storedBytes,
  })
  const messages = new MessageService({
    database,
    batcher,
    clock,
    bus: waitBus,
    config: config.messages,
    messagesPerDay: config.identity.quotas.messagesPerDay,
    signer: await loadHubSigner(identity),
    closing: closingSignal,
  })
  const home = new HomeService({
    database,
    batcher,
    clock,
    bus,
    config: config.home,
    storedBytesQuota: config.identity.quotas.storedBytes,
    // One stored-bytes quota covers a principal's resources and its home files.
    storedElsewhere: ownedBytes,
  })
  const transfers = new TransferService({
    database,
    batcher,
    clock,
    bus: waitBus,
    config: config.transfer,
    keyring: await TokenKeyring.load(database, config.transfer.tokenKeys, clock.now()),
    log,
    closing: closingSignal,
  })
  // seed 004: insolvent transfers end within seconds of their grace, not at the next cron.
  const reaperJob = startPeriodic(
    'transfer-reaper',
    config.transfer.reapIntervalMs,
    () => transfers.reap(),
    log,
  )
  const cleanupAll = async () => {
    let removed = await handoffs.cleanup()
    removed += await identity.cleanup()
    removed += await transaction(database, async (tx) => {
      const now = clock.now()
      return (await pruneIdempotencyKeys(tx.db, now)) + (await pruneQuotaCounters(tx.db, now))
    })
    return removed
  }
  const cleanupJob = startPeriodic('cleanup', config.handoff.cleanupIntervalMs, cleanupAll, log)
  metrics.countTransfersWith(() => transfers.countByState())
  log.info({ store: database.describe }, 'database ready')

  return {
    version: VERSION,
    config,
    log,
    clock,
    metrics,
    database,
    batcher,
    // The dashboard's event streams are the bus's only wildcard subscribers.
    bus: countingBus(bus, metrics.sseClients, (topic) => topic === '*'),
    notifier,
    handoffs,
    identity,
    resources,
    grants,
    messages,
    home,
    transfers,
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
      await batcher.flush()
      await notifier.drain()
      await bus.close()
      await database.close()
    },
    runCleanup: () => cleanupJob.runNow(),
  }
}
