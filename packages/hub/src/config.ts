import path from 'node:path'
import {
  BUDGET_LIMITS,
  COMPUTE_LIMITS,
  DEFAULT_SKEW_SECONDS,
  HANDOFF_LIMITS,
  HOME_LIMITS,
  MESSAGE_LIMITS,
  parseWholeNumber,
  RESOURCE_LIMITS,
  TRANSFER_LIMITS,
} from '@baton/protocol'
import type { BudgetConfig } from './budgets/service.js'
import { DEFAULT_MAX_JSON_ELEMENTS } from './http/json-guard.js'

/** Everything the hub can be told at start, from flags and the environment. */
export interface Config {
  host: string
  port: number
  dataDir: string
  /** PostgreSQL connection string; when absent the hub uses a SQLite file under dataDir. */
  databaseUrl: string | undefined
  /** SQLite: run the write connection on a worker thread, off the event loop. */
  sqliteWriterThread: boolean
  logLevel: string
  /** OpenTelemetry span export (OTLP over HTTP); off while no endpoint is set. */
  tracing: { tracesUrl: string | undefined; serviceName: string }
  /** Trust X-Forwarded-For from these proxies: false, true (any), a hop count, or addresses/CIDRs. */
  trustProxy: boolean | number | string[]
  /** Host names `/mcp` also accepts beyond the derived ones (`name` or `name:port`; `*`: any). */
  allowedHosts: string[]
  /** Browser origins `/mcp` also accepts beyond the hub's own (`*`: any). */
  allowedOrigins: string[]
  bodyLimitBytes: number
  /** Most array items and object members in one JSON body (`body_too_many_elements`). */
  bodyMaxElements: number
  handoff: {
    ttlMs: number
    maxPayloadBytes: number
    maxNoteChars: number
    maxStates: number
    maxWaitSeconds: number
    dailyCreatesPerIp: number
    cleanupIntervalMs: number
  }
  notify: {
    allowLoopback: boolean
    timeoutMs: number
    /** First retry delay of a signal; each later one doubles, with jitter, up to backoffMaxMs. */
    backoffBaseMs: number
    backoffMaxMs: number
    /** A signal not delivered this long after its move is dead (kept for inspection). */
    horizonMs: number
    pollIntervalMs: number
  }
  resources: {
    maxBytes: number
    grantMaxTtlMs: number
    /** Most resources one listing page answers; a larger `limit` answers this many. */
    maxPageSize: number
  }
  messages: {
    /** Largest message body as canonical JSON. */
    maxBodyBytes: number
    /** Least time between inbox reads that find nothing, per principal (0: no floor). */
    pollMinIntervalMs: number
    /** Longest long-poll wait; longer waits are clamped. */
    maxWaitSeconds: number
  }
  home: {
    /** Largest home file content, in UTF-8 bytes. */
    maxFileBytes: number
    /** Most files one listing page answers; a larger `limit` is refused. */
    maxPageSize: number
  }
  /** Caps on what an A2A task may make the hub keep and repeat; a message's own size is `messages.maxBodyBytes`. */
  a2a: A2aConfig
  /** Session transfer (seed 004). */
  transfer: TransferConfig
  /** Compute jobs and runtimes (seed 000 json-expr-v1). */
  compute: ComputeConfig
  /** Budgets on delegations (issue 28). */
  budgets: BudgetConfig
  dashboard: {
    /** Most event streams one dashboard session may hold open at once. */
    streamsPerSession: number
    /** Most dashboard event streams open on this instance at once. */
    streamsMax: number
  }
  /** Largest number of writes committed together in one transaction. */
  maxBatch: number
  /** How long graceful shutdown waits for in-flight requests. */
  shutdownGraceMs: number
  /** Limits on client connections, against slow and piled-up senders. */
  connections: ConnectionsConfig
  /** Caps on concurrent long polls, per hub instance. */
  waits: {
    /** Most waits open on one handoff, inbox or transfer. */
    maxPerTopic: number
    /** Most waits open from one client address. */
    maxPerAddress: number
  }
  identity: {
    /** `approval` (default): new keys wait for an operator; `open`: approved at once. */
    admission: 'approval' | 'open'
    /** How far a signature's `created` may be from the hub's clock, either way. */
    skewMs: number
    /** The external origin clients sign `@target-uri` against; else the hub's own listen address. */
    publicUrl: string | undefined
    /** The operator's bearer secret for /admin/v1; the admin API is off without it. */
    adminToken: string | undefined
    /** When set, the hub's private key is stored sealed (AES-256-GCM) under a key derived from it. */
    hubKeySecret: string | undefined
    /** New keys one client address may enrol per hour. */
    enrolPerAddressPerHour: number
    quotas: { requestsPerDay: number; storedBytes: number; messagesPerDay: number }
  }
}

type Env = Record<string, string | undefined>

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = parseWholeNumber(raw, { min })
  if (n === undefined) {
    throw new Error(
      `${name} must be a whole number of at least ${min} (digits, at most 15), got ${JSON.stringify(raw)}`,
    )
  }
  return n
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (/^(1|true|yes|on)$/i.test(raw)) return true
  if (/^(0|false|no|off)$/i.test(raw)) return false
  throw new Error(`${name} must be true or false, got ${JSON.stringify(raw)}`)
}

function trustProxy(raw: string | undefined): Config['trustProxy'] {
  if (raw === undefined || raw === '' || /^(0|false|no|off)$/i.test(raw)) return false
  if (/^(true|yes|on)$/i.test(raw)) return true
  const hops = parseWholeNumber(raw)
  if (hops !== undefined) return hops
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

/** The environment variables the hub reads, with what each sets; `baton serve --help` prints it. */
export const ENV_DOC: Record<string, string> = {
  BATON_HOST: 'address to listen on (default 127.0.0.1)',
  BATON_PORT: 'port to listen on (default 8080; 0 picks a free one)',
  BATON_DATA_DIR: 'directory for the SQLite file (default ./data)',
  DATABASE_URL: 'PostgreSQL connection string; selects PostgreSQL instead of SQLite',
  BATON_SQLITE_WRITER_THREAD:
    'SQLite: run the write connection (statements and the commit fsync) on a worker thread (default false: statements in the event loop, each commit made durable by an fdatasync on the thread pool)',
  BATON_LOG_LEVEL:
    'pino log level (default info: one line per request, 4xx at warn and 5xx at error)',
  BATON_OTLP_ENDPOINT:
    'OTLP/HTTP receiver base URL (http://collector:4318) to export OpenTelemetry spans to, as JSON, to <url>/v1/traces; falls back to OTEL_EXPORTER_OTLP_ENDPOINT; unset: no spans and no OpenTelemetry code loaded',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'the OpenTelemetry name for BATON_OTLP_ENDPOINT',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:
    'full OTLP/HTTP traces URL, used as given; wins over the two base URLs',
  OTEL_SERVICE_NAME: 'service.name of exported spans (default baton-hub)',
  OTEL_SDK_DISABLED: 'true turns span export off whatever endpoint is set',
  BATON_TRUST_PROXY:
    'trust X-Forwarded-For: false, true, a hop count, or comma-separated addresses/CIDRs',
  BATON_ALLOWED_HOSTS:
    'extra comma-separated Host names (name or name:port, * for any) /mcp accepts; default: the public URL host, the listen address, and loopback names when listening on loopback or every interface',
  BATON_ALLOWED_ORIGINS:
    'extra comma-separated browser origins (https://app.example, * for any) /mcp accepts; default: the hub own origin only',
  BATON_BODY_LIMIT_BYTES: 'largest request body (default 1048576)',
  BATON_BODY_MAX_ELEMENTS:
    'most array items and object members in one JSON body, counted before it is parsed (default 20000)',
  BATON_HANDOFF_TTL_SECONDS: 'handoff lifetime from creation (default 86400)',
  BATON_HANDOFF_MAX_PAYLOAD_BYTES: 'largest handoff payload as JSON (default 16384)',
  BATON_HANDOFF_MAX_NOTE_CHARS: 'longest note (default 500)',
  BATON_HANDOFF_MAX_STATES: 'most states in a custom machine (default 12)',
  BATON_HANDOFF_MAX_WAIT_SECONDS: `longest wait; longer waits are clamped (default ${HANDOFF_LIMITS.maxWaitSeconds})`,
  BATON_HANDOFF_DAILY_QUOTA: 'handoff creations per client IP per UTC day (default 100)',
  BATON_CLEANUP_INTERVAL_SECONDS: 'how often expired handoffs are removed (default 60)',
  BATON_NOTIFY_ALLOW_LOOPBACK:
    'let notify_url reach loopback addresses, for tests and local use (default false)',
  BATON_NOTIFY_TIMEOUT_MS: 'timeout of one notify delivery (default 5000)',
  BATON_NOTIFY_HORIZON_SECONDS:
    'how long a notify signal is retried before it is dead and kept for inspection (default 86400)',
  BATON_NOTIFY_BACKOFF_BASE_MS:
    'first notify retry delay; each later one doubles, with jitter (default 1000)',
  BATON_NOTIFY_BACKOFF_MAX_SECONDS: 'longest delay between notify retries (default 3600)',
  BATON_RESOURCE_MAX_BYTES: 'largest resource data as JSON (default 262144)',
  BATON_GRANT_MAX_TTL_SECONDS: 'longest lifetime of a grant (default 2592000, 30 days)',
  BATON_RESOURCE_MAX_PAGE_SIZE:
    'most resources one listing page answers; a larger limit answers this many (default 100)',
  BATON_MESSAGE_MAX_BYTES: 'largest message body as canonical JSON (default 65536)',
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS:
    'least time between inbox reads that find nothing, per principal; sooner answers 429 (default 1000)',
  BATON_MESSAGE_MAX_WAIT_SECONDS: `longest inbox long-poll; longer waits are clamped (default ${MESSAGE_LIMITS.maxWaitSeconds})`,
  BATON_HOME_MAX_FILE_BYTES: 'largest home file content in UTF-8 bytes (default 262144)',
  BATON_HOME_MAX_PAGE_SIZE:
    'most home files one listing page answers; a larger limit is refused (default 1000)',
  BATON_A2A_PUSH_CONFIGS_PER_TASK: 'most push notification configs on one A2A task (default 10)',
  BATON_A2A_PUSH_CONFIGS_PER_PRINCIPAL:
    'most A2A push notification configs one principal may hold over all tasks (default 100)',
  BATON_A2A_PUSH_HOSTS_PER_PRINCIPAL:
    'most distinct hosts the A2A push notification configs of one principal may name (default 10)',
  BATON_A2A_ARTIFACTS_PER_TASK: 'most distinct artifacts on one A2A task (default 256)',
  BATON_A2A_EVENTS_PER_TASK:
    'most events (messages, status changes, artifact updates) of one A2A task (default 2000)',
  BATON_A2A_TASK_MAX_BYTES:
    'most bytes of events one A2A task may hold; bounds what GetTask answers (default 4194304)',
  BATON_A2A_LIST_PAGE_MAX_BYTES:
    'stored bytes of the A2A tasks one ListTasks page shows before it stops early with a nextPageToken; one task at least (default 8388608)',
  BATON_MAX_BATCH: 'most writes committed together in one transaction (default 256)',
  BATON_SHUTDOWN_GRACE_MS: 'how long shutdown waits for in-flight requests (default 10000)',
  BATON_WAIT_MAX_PER_TOPIC:
    'most long polls open at once on one handoff, inbox or transfer, per instance; more answer 429 (default 100)',
  BATON_WAIT_MAX_PER_ADDRESS:
    'most long polls open at once from one client address, per instance; more answer 429 (default 1000)',
  BATON_ADMISSION:
    'approval (default: new keys wait for an operator) or open (approved at once; local use)',
  BATON_SIGNATURE_SKEW_SECONDS:
    'how far a signature created time may be from the hub clock (default 60)',
  BATON_PUBLIC_URL:
    'external origin (https://host[:port]) clients sign @target-uri against; unset: the listen address only (set it behind a proxy)',
  BATON_HUB_KEY_SECRET:
    'seal the hub private key and transfer token keys in the database under this secret (32+ characters; every instance needs it; required with DATABASE_URL; default for SQLite: a key file hub.kek in BATON_DATA_DIR)',
  BATON_ADMIN_TOKEN:
    'operator bearer secret (at least 32 characters) for /admin/v1; unset turns the admin API off',
  BATON_QUOTA_REQUESTS_PER_DAY: 'signed requests per principal per UTC day (default 10000)',
  BATON_QUOTA_STORED_BYTES: 'bytes a principal may store (default 10485760)',
  BATON_QUOTA_MESSAGES_PER_DAY: 'messages a principal may send per UTC day (default 1000)',
  BATON_TRANSFER_TTL_SECONDS:
    'how long a transfer may stay staged, provisioned or pushed before it expires (default 1800)',
  BATON_TRANSFER_GRACE_SECONDS:
    'how long an insolvent transfer runs on before it is terminated (default 60)',
  BATON_TRANSFER_REAP_INTERVAL_MS:
    'how often expired and insolvent-past-grace transfers are terminated (default 1000)',
  BATON_TRANSFER_TOKEN_TTL_SECONDS: 'lifetime of a minted transfer token (default 300)',
  BATON_TRANSFER_TOKEN_KEYS:
    'transfer token HMAC keys as kid:secret,kid2:secret2 (first signs, all verify; secrets of 32+ characters); unset: one generated key kept in the database',
  BATON_TRANSFER_TIERS:
    'runtime tiers as name:maxBudgetMicros:maxRateMicrosPerSecond,... (default small:10000000:1000,standard:100000000:10000,large:1000000000:100000)',
  BATON_TRANSFER_RUNTIMES:
    'comma-separated did:key principals allowed to claim transfers as runtimes; unset: any admitted principal',
  BATON_TRANSFER_LEASE_SECONDS:
    'how long a runtime process holds the lease to run a transfer without renewing it (default 15)',
  BATON_SNAPSHOT_MAX_BYTES: 'largest snapshot request body (default 33554432)',
  BATON_COMPUTE_EMBEDDED:
    'run json-expr-v1 jobs in the hub itself on a worker pool (default true; false leaves them to remote runtimes)',
  BATON_COMPUTE_WORKERS: 'worker threads of the embedded runtime (default 2, or 1 on one core)',
  BATON_COMPUTE_IDLE_SECONDS:
    'the embedded runtime starts its worker threads for the first job and ends them after this many seconds without one (default 60)',
  BATON_COMPUTE_LEASE_SECONDS:
    'how long a runtime holds a claimed job without renewing it before the job is reclaimed (default 15)',
  BATON_COMPUTE_RUNTIME_TTL_SECONDS:
    'how long a runtime counts as live after its last heartbeat (default 10)',
  BATON_COMPUTE_MAX_ATTEMPTS:
    'claims of one job before it fails with compute_runtime_lost (default 3)',
  BATON_COMPUTE_MAX_WAIT_SECONDS: `longest job long-poll; longer waits are clamped (default ${COMPUTE_LIMITS.maxWaitSeconds})`,
  BATON_TRANSFER_MAX_WAIT_SECONDS: `longest transfer long-poll; longer waits are clamped (default ${TRANSFER_LIMITS.maxWaitSeconds})`,
  BATON_COMPUTE_UNAVAILABLE_GRACE_SECONDS:
    'a waiting job whose language has had no live runtime for this long ends failed with compute_unavailable (default 60)',
  BATON_COMPUTE_RUNTIMES:
    'comma-separated did:key principals allowed to serve compute as remote runtimes (they see the programs and inputs of the jobs they claim); * for any admitted principal; unset: none, only the embedded runtime',
  BATON_QUOTA_COMPUTE_JOBS_PER_DAY:
    'compute jobs a principal may submit per UTC day (default 1000)',
  BATON_QUOTA_COMPUTE_STEPS_PER_DAY:
    'evaluation steps a principal may use per UTC day (default 100000000)',
  BATON_QUOTA_COMPUTE_CONCURRENT: 'compute jobs a principal may have queued or running (default 8)',
  BATON_BUDGET_HOLD_SECONDS:
    'how long a budget hold lasts unsettled when the reserve names no ttlSeconds (default 120)',
  BATON_BUDGET_HOLD_MAX_SECONDS:
    'the longest budget hold; a longer ttlSeconds is clamped, as is any hold to its budget expiry (default 3600)',
  BATON_BUDGET_MAX_CHILDREN:
    'open sub-delegations one budget may hold reservations for; more answer budget_limit_reached (default 64)',
  BATON_BUDGET_MAX_TREE:
    'budgets under one root budget over its life, itself included; a sub-offer past it answers budget_limit_reached (default 1000)',
  BATON_BUDGET_MAX_HOLDS: 'open holds on one budget; more answer budget_limit_reached (default 64)',
  BATON_BUDGET_MAX_HOLDS_PER_PRINCIPAL:
    'open budget holds of one principal over every budget; more answer budget_limit_reached (default 256)',
  BATON_BUDGET_MAX_ENTRIES:
    'spend, reserve and settle reports (charged or refused) one budget keeps; more answer budget_limit_reached (default 100000)',
  BATON_BUDGET_MAX_REPORTERS: 'reporters a delegate may name on one budget, at most 32 (default 8)',
  BATON_BUDGET_REAP_INTERVAL_MS:
    'how often budget holds and budgets past their expiry are released (default 1000)',
  BATON_DASHBOARD_STREAMS_PER_SESSION:
    'most dashboard event streams one signed-in session may hold open; more answer 429 (default 4)',
  BATON_DASHBOARD_STREAMS_MAX:
    'most dashboard event streams open on one instance; more answer 429 (default 100)',
  BATON_HEADERS_TIMEOUT_MS:
    'time a client has to send a request header section; slower connections are closed (default 10000)',
  BATON_REQUEST_TIMEOUT_MS:
    'time a client has to send a whole request, body included; slower connections are closed (default 60000)',
  BATON_KEEP_ALIVE_TIMEOUT_MS:
    'how long an idle keep-alive connection stays open between requests (default 72000)',
  BATON_MAX_CONNECTIONS_PER_ADDRESS:
    'open connections one client address may hold; more are closed at once; 0 turns the cap off (default 256)',
  BATON_ENROL_PER_ADDRESS_PER_HOUR:
    'new keys one client address may enrol per hour; more answer 429 rate_limited (default 20)',
}

/** Where spans go: the OTLP/HTTP traces URL from the hub's or OpenTelemetry's own variables. */
function tracingConfig(env: Env): Config['tracing'] {
  const serviceName = env.OTEL_SERVICE_NAME || 'baton-hub'
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') {
    return { tracesUrl: undefined, serviceName }
  }
  const base = env.BATON_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT
  // OTLP exporter specification: a base endpoint gets the signal's path, v1/traces, appended.
  const tracesUrl =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ||
    (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined)
  if (tracesUrl !== undefined && !/^https?:\/\//.test(tracesUrl)) {
    throw new Error(`The OTLP endpoint must be an http(s) URL, got ${JSON.stringify(tracesUrl)}`)
  }
  return { tracesUrl, serviceName }
}

/** Reads the configuration from the environment, then applies flag overrides on top. */
export function loadConfig(
  env: Env = process.env,
  flags: Partial<Record<string, string>> = {},
): Config {
  const merged: Env = { ...env }
  const flagToEnv: Record<string, string> = {
    host: 'BATON_HOST',
    port: 'BATON_PORT',
    'data-dir': 'BATON_DATA_DIR',
    'database-url': 'DATABASE_URL',
    'log-level': 'BATON_LOG_LEVEL',
    'trust-proxy': 'BATON_TRUST_PROXY',
  }
  for (const [flag, value] of Object.entries(flags)) {
    const name = flagToEnv[flag]
    if (name && value !== undefined) merged[name] = value
  }
  return {
    host: merged.BATON_HOST || '127.0.0.1',
    port: int(merged, 'BATON_PORT', 8080),
    dataDir: path.resolve(merged.BATON_DATA_DIR || './data'),
    databaseUrl: merged.DATABASE_URL || undefined,
    sqliteWriterThread: bool(merged, 'BATON_SQLITE_WRITER_THREAD', false),
    logLevel: merged.BATON_LOG_LEVEL || 'info',
    tracing: tracingConfig(merged),
    trustProxy: trustProxy(merged.BATON_TRUST_PROXY),
    allowedHosts: list(merged.BATON_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
    allowedOrigins: list(merged.BATON_ALLOWED_ORIGINS).map((o) => {
      if (o === '*') return o
      const url = URL.canParse(o) ? new URL(o) : undefined
      if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
        throw new Error(`BATON_ALLOWED_ORIGINS must list http(s) origins, got ${JSON.stringify(o)}`)
      }
      return url.origin
    }),
    bodyLimitBytes: int(merged, 'BATON_BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    bodyMaxElements: int(merged, 'BATON_BODY_MAX_ELEMENTS', DEFAULT_MAX_JSON_ELEMENTS, 1),
    handoff: {
      ttlMs: int(merged, 'BATON_HANDOFF_TTL_SECONDS', HANDOFF_LIMITS.ttlMs / 1000, 1) * 1000,
      maxPayloadBytes: int(
        merged,
        'BATON_HANDOFF_MAX_PAYLOAD_BYTES',
        HANDOFF_LIMITS.maxPayloadBytes,
        1,
      ),
      maxNoteChars: int(merged, 'BATON_HANDOFF_MAX_NOTE_CHARS', HANDOFF_LIMITS.maxNoteChars, 0),
      maxStates: int(merged, 'BATON_HANDOFF_MAX_STATES', HANDOFF_LIMITS.maxStates, 2),
      maxWaitSeconds: int(
        merged,
        'BATON_HANDOFF_MAX_WAIT_SECONDS',
        HANDOFF_LIMITS.maxWaitSeconds,
        0,
      ),
      dailyCreatesPerIp: int(
        merged,
        'BATON_HANDOFF_DAILY_QUOTA',
        HANDOFF_LIMITS.dailyCreatesPerIp,
        0,
      ),
      cleanupIntervalMs: int(merged, 'BATON_CLEANUP_INTERVAL_SECONDS', 60, 1) * 1000,
    },
    notify: {
      allowLoopback: bool(merged, 'BATON_NOTIFY_ALLOW_LOOPBACK', false),
      timeoutMs: int(merged, 'BATON_NOTIFY_TIMEOUT_MS', 5000, 1),
      backoffBaseMs: int(merged, 'BATON_NOTIFY_BACKOFF_BASE_MS', 1000, 1),
      backoffMaxMs: int(merged, 'BATON_NOTIFY_BACKOFF_MAX_SECONDS', 3600, 1) * 1000,
      horizonMs: int(merged, 'BATON_NOTIFY_HORIZON_SECONDS', 86_400, 1) * 1000,
      pollIntervalMs: 1000,
    },
    resources: {
      maxBytes: int(merged, 'BATON_RESOURCE_MAX_BYTES', RESOURCE_LIMITS.maxBytes, 1),
      grantMaxTtlMs:
        int(merged, 'BATON_GRANT_MAX_TTL_SECONDS', RESOURCE_LIMITS.grantMaxTtlMs / 1000, 1) * 1000,
      maxPageSize: int(merged, 'BATON_RESOURCE_MAX_PAGE_SIZE', RESOURCE_LIMITS.maxPageSize, 1),
    },
    messages: {
      maxBodyBytes: int(merged, 'BATON_MESSAGE_MAX_BYTES', MESSAGE_LIMITS.maxBodyBytes, 1),
      pollMinIntervalMs: int(merged, 'BATON_MESSAGE_POLL_MIN_INTERVAL_MS', 1000, 0),
      maxWaitSeconds: int(
        merged,
        'BATON_MESSAGE_MAX_WAIT_SECONDS',
        MESSAGE_LIMITS.maxWaitSeconds,
        0,
      ),
    },
    home: {
      maxFileBytes: int(merged, 'BATON_HOME_MAX_FILE_BYTES', HOME_LIMITS.maxFileBytes, 1),
      maxPageSize: int(merged, 'BATON_HOME_MAX_PAGE_SIZE', HOME_LIMITS.maxPageSize, 1),
    },
    a2a: {
      maxPushConfigsPerTask: int(merged, 'BATON_A2A_PUSH_CONFIGS_PER_TASK', 10, 0),
      maxPushConfigsPerPrincipal: int(merged, 'BATON_A2A_PUSH_CONFIGS_PER_PRINCIPAL', 100, 0),
      maxPushHostsPerPrincipal: int(merged, 'BATON_A2A_PUSH_HOSTS_PER_PRINCIPAL', 10, 0),
      maxArtifactsPerTask: int(merged, 'BATON_A2A_ARTIFACTS_PER_TASK', 256, 0),
      maxEventsPerTask: int(merged, 'BATON_A2A_EVENTS_PER_TASK', 2000, 1),
      maxTaskBytes: int(merged, 'BATON_A2A_TASK_MAX_BYTES', 4 * 1024 * 1024, 1024),
      maxListPageBytes: int(merged, 'BATON_A2A_LIST_PAGE_MAX_BYTES', 8 * 1024 * 1024, 1024),
    },
    transfer: transferConfig(merged),
    compute: computeConfig(merged),
    budgets: budgetConfig(merged),
    dashboard: {
      streamsPerSession: int(merged, 'BATON_DASHBOARD_STREAMS_PER_SESSION', 4, 1),
      streamsMax: int(merged, 'BATON_DASHBOARD_STREAMS_MAX', 100, 1),
    },
    maxBatch: int(merged, 'BATON_MAX_BATCH', 256, 1),
    shutdownGraceMs: int(merged, 'BATON_SHUTDOWN_GRACE_MS', 10_000, 0),
    connections: connectionsConfig(merged),
    waits: {
      maxPerTopic: int(merged, 'BATON_WAIT_MAX_PER_TOPIC', 100, 1),
      maxPerAddress: int(merged, 'BATON_WAIT_MAX_PER_ADDRESS', 1000, 1),
    },
    identity: identityConfig(merged),
  }
}

function identityConfig(env: Env): Config['identity'] {
  const admission = env.BATON_ADMISSION || 'approval'
  if (admission !== 'approval' && admission !== 'open') {
    throw new Error(`BATON_ADMISSION must be approval or open, got ${JSON.stringify(admission)}`)
  }
  let publicUrl: string | undefined
  if (env.BATON_PUBLIC_URL) {
    const url = new URL(env.BATON_PUBLIC_URL)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error('BATON_PUBLIC_URL must be an http(s) origin')
    }
    publicUrl = url.origin
  }
  const adminToken = env.BATON_ADMIN_TOKEN || undefined
  if (adminToken !== undefined && adminToken.length < 32) {
    throw new Error('BATON_ADMIN_TOKEN must be at least 32 characters')
  }
  const hubKeySecret = env.BATON_HUB_KEY_SECRET || undefined
  if (hubKeySecret !== undefined && hubKeySecret.length < 32) {
    throw new Error('BATON_HUB_KEY_SECRET must be at least 32 characters')
  }
  return {
    admission,
    skewMs: int(env, 'BATON_SIGNATURE_SKEW_SECONDS', DEFAULT_SKEW_SECONDS, 1) * 1000,
    publicUrl,
    adminToken,
    hubKeySecret,
    enrolPerAddressPerHour: int(env, 'BATON_ENROL_PER_ADDRESS_PER_HOUR', 20, 0),
    quotas: {
      requestsPerDay: int(env, 'BATON_QUOTA_REQUESTS_PER_DAY', 10_000, 0),
      storedBytes: int(env, 'BATON_QUOTA_STORED_BYTES', 10 * 1024 * 1024, 0),
      messagesPerDay: int(env, 'BATON_QUOTA_MESSAGES_PER_DAY', 1000, 0),
    },
  }
}

/** Caps of the A2A relay, each checked before the work it bounds, each with its own code. */
export interface A2aConfig {
  maxPushConfigsPerTask: number
  maxPushConfigsPerPrincipal: number
  /** Distinct hosts (of the URL, without port) over all of one principal's push configs. */
  maxPushHostsPerPrincipal: number
  /** Distinct artifact ids of one task. */
  maxArtifactsPerTask: number
  /** Events of one task: its generation never passes this. */
  maxEventsPerTask: number
  /** UTF-8 bytes of one task's stored events. */
  maxTaskBytes: number
  /**
   * Stored bytes of the tasks one ListTasks page shows (with history or artifacts): a page stops
   * early, with a nextPageToken, before the task that would pass it; it holds one task at least.
   */
  maxListPageBytes: number
}

/** Limits on client connections (Node's HTTP server timeouts and a per-address cap). */
export interface ConnectionsConfig {
  /** Time to receive a request's header section. */
  headersTimeoutMs: number
  /** Time to receive a whole request; a response may take longer (long-poll waits, streams). */
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  /** Open connections per client address; 0: no cap. */
  maxPerAddress: number
}

function connectionsConfig(env: Env): ConnectionsConfig {
  const headersTimeoutMs = int(env, 'BATON_HEADERS_TIMEOUT_MS', 10_000, 1)
  const requestTimeoutMs = int(env, 'BATON_REQUEST_TIMEOUT_MS', 60_000, 1)
  // Node refuses a header timeout longer than the whole request's.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new Error('BATON_HEADERS_TIMEOUT_MS must not exceed BATON_REQUEST_TIMEOUT_MS')
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'BATON_KEEP_ALIVE_TIMEOUT_MS', 72_000, 1),
    maxPerAddress: int(env, 'BATON_MAX_CONNECTIONS_PER_ADDRESS', 256, 0),
  }
}

/** A runtime tier's limits (seed 004: tiers and their limits come from config). */
export interface TierLimits {
  maxBudgetMicros: number
  maxRateMicrosPerSecond: number
}

/** Session transfer settings (seed 004). */
export interface TransferConfig {
  ttlMs: number
  graceMs: number
  reapIntervalMs: number
  tokenTtlMs: number
  /** HMAC keys, the first signs; undefined: the hub keeps one generated key in the database. */
  tokenKeys: { kid: string; secret: string }[] | undefined
  tiers: Record<string, TierLimits>
  /** Principals allowed to claim transfers; undefined: any admitted principal. */
  runtimes: string[] | undefined
  leaseMs: number
  snapshotMaxBytes: number
  maxWaitSeconds: number
}

function transferConfig(env: Env): TransferConfig {
  let tokenKeys: TransferConfig['tokenKeys']
  if (env.BATON_TRANSFER_TOKEN_KEYS) {
    tokenKeys = env.BATON_TRANSFER_TOKEN_KEYS.split(',').map((part) => {
      const i = part.indexOf(':')
      const kid = part.slice(0, i).trim()
      const secret = part.slice(i + 1).trim()
      if (i < 1 || !/^[A-Za-z0-9_-]{1,32}$/.test(kid) || secret.length < 32) {
        throw new Error(
          'BATON_TRANSFER_TOKEN_KEYS must be kid:secret,... with kids of [A-Za-z0-9_-] and secrets of at least 32 characters',
        )
      }
      return { kid, secret }
    })
  }
  const tiers: Record<string, TierLimits> = {}
  const tierSpec =
    env.BATON_TRANSFER_TIERS ||
    'small:10000000:1000,standard:100000000:10000,large:1000000000:100000'
  for (const part of tierSpec.split(',')) {
    const m = /^\s*([a-z0-9][a-z0-9_-]{0,63}):(\d{1,15}):(\d{1,15})\s*$/.exec(part)
    if (!m) {
      throw new Error(
        `BATON_TRANSFER_TIERS must be name:maxBudgetMicros:maxRateMicrosPerSecond,..., got ${JSON.stringify(part)}`,
      )
    }
    tiers[m[1]!] = { maxBudgetMicros: Number(m[2]), maxRateMicrosPerSecond: Number(m[3]) }
  }
  const runtimes = env.BATON_TRANSFER_RUNTIMES
    ? env.BATON_TRANSFER_RUNTIMES.split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined
  return {
    ttlMs: int(env, 'BATON_TRANSFER_TTL_SECONDS', TRANSFER_LIMITS.ttlMs / 1000, 1) * 1000,
    graceMs: int(env, 'BATON_TRANSFER_GRACE_SECONDS', TRANSFER_LIMITS.graceMs / 1000, 0) * 1000,
    reapIntervalMs: int(env, 'BATON_TRANSFER_REAP_INTERVAL_MS', 1000, 50),
    tokenTtlMs:
      int(env, 'BATON_TRANSFER_TOKEN_TTL_SECONDS', TRANSFER_LIMITS.tokenTtlMs / 1000, 1) * 1000,
    tokenKeys,
    tiers,
    runtimes,
    leaseMs: int(env, 'BATON_TRANSFER_LEASE_SECONDS', 15, 1) * 1000,
    snapshotMaxBytes: int(env, 'BATON_SNAPSHOT_MAX_BYTES', TRANSFER_LIMITS.snapshotMaxBytes, 1024),
    maxWaitSeconds: int(env, 'BATON_TRANSFER_MAX_WAIT_SECONDS', TRANSFER_LIMITS.maxWaitSeconds, 0),
  }
}

function budgetConfig(env: Env): BudgetConfig {
  const maxReporters = int(env, 'BATON_BUDGET_MAX_REPORTERS', 8, 0)
  if (maxReporters > BUDGET_LIMITS.maxReporters) {
    throw new Error(`BATON_BUDGET_MAX_REPORTERS must be at most ${BUDGET_LIMITS.maxReporters}`)
  }
  return {
    holdTtlMs: int(env, 'BATON_BUDGET_HOLD_SECONDS', 120, 1) * 1000,
    maxHoldTtlMs: int(env, 'BATON_BUDGET_HOLD_MAX_SECONDS', 3600, 1) * 1000,
    maxChildren: int(env, 'BATON_BUDGET_MAX_CHILDREN', 64, 0),
    maxTree: int(env, 'BATON_BUDGET_MAX_TREE', 1000, 1),
    maxHolds: int(env, 'BATON_BUDGET_MAX_HOLDS', 64, 0),
    maxHoldsPerPrincipal: int(env, 'BATON_BUDGET_MAX_HOLDS_PER_PRINCIPAL', 256, 0),
    maxEntries: int(env, 'BATON_BUDGET_MAX_ENTRIES', 100_000, 1),
    maxReporters,
    reapIntervalMs: int(env, 'BATON_BUDGET_REAP_INTERVAL_MS', 1000, 50),
  }
}

/** The compute settings (seed 000 json-expr-v1 jobs). */
export interface ComputeConfig {
  embedded: boolean
  /** Worker threads of the embedded runtime; undefined: the pool's default. */
  workers: number | undefined
  /** How long the embedded runtime's workers stay without a job before they end. */
  idleMs: number
  leaseMs: number
  runtimeTtlMs: number
  maxAttempts: number
  maxWaitSeconds: number
  /** How long a waiting job's language may have no live runtime before the job fails. */
  unavailableGraceMs: number
  /** Principals allowed to serve compute remotely (a runtime sees its jobs' inputs); `*`: any. */
  runtimes: string[]
  quotas: { jobsPerDay: number; stepsPerDay: number; concurrent: number }
}

function computeConfig(env: Env): ComputeConfig {
  const runtimes = list(env.BATON_COMPUTE_RUNTIMES)
  const workers = env.BATON_COMPUTE_WORKERS
  return {
    embedded: bool(env, 'BATON_COMPUTE_EMBEDDED', true),
    workers: workers ? int(env, 'BATON_COMPUTE_WORKERS', 1, 1) : undefined,
    idleMs: int(env, 'BATON_COMPUTE_IDLE_SECONDS', 60, 0) * 1000,
    leaseMs: int(env, 'BATON_COMPUTE_LEASE_SECONDS', 15, 1) * 1000,
    runtimeTtlMs: int(env, 'BATON_COMPUTE_RUNTIME_TTL_SECONDS', 10, 1) * 1000,
    maxAttempts: int(env, 'BATON_COMPUTE_MAX_ATTEMPTS', 3, 1),
    maxWaitSeconds: int(env, 'BATON_COMPUTE_MAX_WAIT_SECONDS', COMPUTE_LIMITS.maxWaitSeconds, 0),
    unavailableGraceMs: int(env, 'BATON_COMPUTE_UNAVAILABLE_GRACE_SECONDS', 60, 1) * 1000,
    runtimes,
    quotas: {
      jobsPerDay: int(env, 'BATON_QUOTA_COMPUTE_JOBS_PER_DAY', 1000, 0),
      stepsPerDay: int(env, 'BATON_QUOTA_COMPUTE_STEPS_PER_DAY', 100_000_000, 1),
      concurrent: int(env, 'BATON_QUOTA_COMPUTE_CONCURRENT', 8, 1),
    },
  }
}
