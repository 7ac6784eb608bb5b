import path from 'node:path'
import { HANDOFF_LIMITS } from '@baton/protocol'

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
  /** Largest number of writes committed together in one transaction. */
  maxBatch: number
  /** How long graceful shutdown waits for in-flight requests. */
  shutdownGraceMs: number
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
  BATON_MAX_BATCH: 'most writes committed together in one transaction (default 256)',
  BATON_SHUTDOWN_GRACE_MS: 'how long shutdown waits for in-flight requests (default 10000)',
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
    maxBatch: int(merged, 'BATON_MAX_BATCH', 256, 1),
    shutdownGraceMs: int(merged, 'BATON_SHUTDOWN_GRACE_MS', 10_000, 0),
  }
}
