import path from 'node:path'
import {
  DEFAULT_SKEW_SECONDS,
  HANDOFF_LIMITS,
  HOME_LIMITS,
  MESSAGE_LIMITS,
  TRANSFER_LIMITS,
} from '@baton/protocol'

/** Everything the hub can be told at start, from flags and the environment. */
export interface Config {
  host: string
  port: number
  dataDir: string
  /** PostgreSQL connection string; when absent the hub uses a SQLite file under dataDir. */
  databaseUrl: string | undefined
  logLevel: string
  /** Trust X-Forwarded-For from these proxies: false, true (any), a hop count, or addresses/CIDRs. */
  trustProxy: boolean | number | string[]
  bodyLimitBytes: number
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
    retryDelayMs: number
  }
  resources: {
    maxBytes: number
    grantMaxTtlMs: number
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
  }
  /** Session transfer (seed 004). */
  transfer: TransferConfig
  /** Largest number of writes committed together in one transaction. */
  maxBatch: number
  /** How long graceful shutdown waits for in-flight requests. */
  shutdownGraceMs: number
  identity: {
    /** `approval` (default): new keys wait for an operator; `open`: approved at once. */
    admission: 'approval' | 'open'
    /** How far a signature's `created` may be from the hub's clock, either way. */
    skewMs: number
    /** The external origin clients sign `@target-uri` against; else the request's scheme and host. */
    publicUrl: string | undefined
    /** The operator's bearer secret for /admin/v1; the admin API is off without it. */
    adminToken: string | undefined
    /** When set, the hub's private key is stored sealed (AES-256-GCM) under a key derived from it. */
    hubKeySecret: string | undefined
    quotas: { requestsPerDay: number; storedBytes: number; messagesPerDay: number }
  }
}

type Env = Record<string, string | undefined>

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < min) {
    throw new Error(`${name} must be an integer of at least ${min}, got ${JSON.stringify(raw)}`)
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
  if (/^\d+$/.test(raw)) return Number(raw)
  return raw
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
  BATON_LOG_LEVEL: 'pino log level (default info)',
  BATON_TRUST_PROXY:
    'trust X-Forwarded-For: false, true, a hop count, or comma-separated addresses/CIDRs',
  BATON_BODY_LIMIT_BYTES: 'largest request body (default 1048576)',
  BATON_HANDOFF_TTL_SECONDS: 'handoff lifetime from creation (default 86400)',
  BATON_HANDOFF_MAX_PAYLOAD_BYTES: 'largest handoff payload as JSON (default 16384)',
  BATON_HANDOFF_MAX_NOTE_CHARS: 'longest note (default 500)',
  BATON_HANDOFF_MAX_STATES: 'most states in a custom machine (default 12)',
  BATON_HANDOFF_MAX_WAIT_SECONDS: 'longest wait; longer waits are clamped (default 25)',
  BATON_HANDOFF_DAILY_QUOTA: 'handoff creations per client IP per UTC day (default 100)',
  BATON_CLEANUP_INTERVAL_SECONDS: 'how often expired handoffs are removed (default 60)',
  BATON_NOTIFY_ALLOW_LOOPBACK:
    'let notify_url reach loopback addresses, for tests and local use (default false)',
  BATON_NOTIFY_TIMEOUT_MS: 'timeout of one notify delivery (default 5000)',
  BATON_RESOURCE_MAX_BYTES: 'largest resource data as JSON (default 262144)',
  BATON_GRANT_MAX_TTL_SECONDS: 'longest lifetime of a grant (default 2592000, 30 days)',
  BATON_MESSAGE_MAX_BYTES: 'largest message body as canonical JSON (default 65536)',
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS:
    'least time between inbox reads that find nothing, per principal; sooner answers 429 (default 1000)',
  BATON_MESSAGE_MAX_WAIT_SECONDS: 'longest inbox long-poll; longer waits are clamped (default 25)',
  BATON_HOME_MAX_FILE_BYTES: 'largest home file content in UTF-8 bytes (default 262144)',
  BATON_MAX_BATCH: 'most writes committed together in one transaction (default 256)',
  BATON_SHUTDOWN_GRACE_MS: 'how long shutdown waits for in-flight requests (default 10000)',
  BATON_ADMISSION:
    'approval (default: new keys wait for an operator) or open (approved at once; local use)',
  BATON_SIGNATURE_SKEW_SECONDS:
    'how far a signature created time may be from the hub clock (default 60)',
  BATON_PUBLIC_URL:
    'external origin (https://host[:port]) clients sign @target-uri against; default: request scheme and Host',
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
    logLevel: merged.BATON_LOG_LEVEL || 'info',
    trustProxy: trustProxy(merged.BATON_TRUST_PROXY),
    bodyLimitBytes: int(merged, 'BATON_BODY_LIMIT_BYTES', 1024 * 1024, 1024),
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
      retryDelayMs: 1000,
    },
    resources: {
      maxBytes: int(merged, 'BATON_RESOURCE_MAX_BYTES', 256 * 1024, 1),
      grantMaxTtlMs: int(merged, 'BATON_GRANT_MAX_TTL_SECONDS', 30 * 24 * 3600, 1) * 1000,
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
    },
    transfer: transferConfig(merged),
    maxBatch: int(merged, 'BATON_MAX_BATCH', 256, 1),
    shutdownGraceMs: int(merged, 'BATON_SHUTDOWN_GRACE_MS', 10_000, 0),
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
    quotas: {
      requestsPerDay: int(env, 'BATON_QUOTA_REQUESTS_PER_DAY', 10_000, 0),
      storedBytes: int(env, 'BATON_QUOTA_STORED_BYTES', 10 * 1024 * 1024, 0),
      messagesPerDay: int(env, 'BATON_QUOTA_MESSAGES_PER_DAY', 1000, 0),
    },
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
    maxWaitSeconds: TRANSFER_LIMITS.maxWaitSeconds,
  }
}
