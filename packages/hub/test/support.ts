import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createIdentity, SignedClient } from '@baton/client'
import pg from 'pg'
import pino, { type Logger } from 'pino'
import type { Clock } from '../src/clock.js'
import { type Config, loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'

/** One of the two stores every hub test runs against. */
export interface TestStore {
  name: 'sqlite' | 'postgres'
  /** A fresh, empty database: a SQLite data directory or a new PostgreSQL database. */
  fresh(): Promise<{ env: Record<string, string>; drop(): Promise<void> }>
}

const pgUrl = process.env.BATON_TEST_PG_URL

/** The hub key secret of PostgreSQL test hubs, which refuse to start without one. */
export const PG_KEY_SECRET = 'the hub key secret of postgres test hubs'

async function createPgDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!pgUrl) {
    throw new Error(
      'BATON_TEST_PG_URL is not set: run the suite with `npm test`, which starts PostgreSQL or uses DATABASE_URL',
    )
  }
  const name = `baton_t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: pgUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(pgUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: pgUrl })
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
      await c.end()
    },
  }
}

/** Both stores; a PostgreSQL store without a server fails the test instead of skipping it. */
const bothStores: TestStore[] = [
  {
    name: 'sqlite',
    async fresh() {
      const dir = mkdtempSync(path.join(tmpdir(), 'baton-test-'))
      return {
        env: { BATON_DATA_DIR: dir },
        async drop() {
          rmSync(dir, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'postgres',
    async fresh() {
      const db = await createPgDatabase()
      return {
        env: {
          DATABASE_URL: db.url,
          BATON_DATA_DIR: tmpdir(),
          BATON_HUB_KEY_SECRET: PG_KEY_SECRET,
        },
        drop: db.drop,
      }
    },
  },
]

/** The stores hub tests run against: both, or the one BATON_TEST_STORES names. */
export const testStores: TestStore[] = bothStores.filter(
  (s) => !process.env.BATON_TEST_STORES || s.name === process.env.BATON_TEST_STORES,
)

/**
 * For a suite that needs one store: that store, and the `skip` reason node:test prints when it is
 * not among the chosen stores (a boolean skip would print none).
 */
function onlyOn(name: TestStore['name'], label: string) {
  const store = testStores.find((s) => s.name === name)
  return {
    store,
    skip: store ? (false as const) : `${label} is not among the chosen stores (BATON_TEST_STORES)`,
  }
}

/**
 * For a suite that needs PostgreSQL (many instances on one database, a server of its own): the
 * store, and the `skip` reason node:test prints when it is not among the chosen stores.
 */
export const onPostgres: { store: TestStore | undefined; skip: string | false } = onlyOn(
  'postgres',
  'PostgreSQL',
)

/** For a suite that needs SQLite (its file, its driver): the store, and the skip reason. */
export const onSqlite: { store: TestStore | undefined; skip: string | false } = onlyOn(
  'sqlite',
  'SQLite',
)

/**
 * Resolves once `check` holds, failing with `what` once `withinMs` has passed: for an event in
 * another process (a gauge, a log line, a row) that no waiter in this one can see. The pause
 * between looks only spaces them out.
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  withinMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${withinMs} ms waiting: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The long-poll waits a hub holds open, as its `/metrics` gauge counts them. */
export async function openWaits(hub: { url: string }): Promise<number> {
  const text = await (await fetch(`${hub.url}/metrics`)).text()
  const sample = /^baton_open_waits (\S+)$/m.exec(text)
  if (!sample) throw new Error('no baton_open_waits in /metrics')
  return Number(sample[1])
}

/** A hub on loopback with a fresh database of the given store. */
export interface TestHub extends RunningHub {
  config: Config
  /** Stops the hub and drops its database. */
  close(): Promise<void>
}

/**
 * Per-address limits lifted for test hubs: every test client connects from 127.0.0.1, so the
 * defaults (new keys per address per hour, connections per address) would count the whole suite
 * as one client. Tests of those limits set them explicitly.
 */
export const TEST_ADDRESS_LIMITS: Record<string, string> = {
  BATON_ENROL_PER_ADDRESS_PER_HOUR: '1000000',
  BATON_MAX_CONNECTIONS_PER_ADDRESS: '0',
  // Test hubs start no compute workers unless a test asks (the compute tests do).
  BATON_COMPUTE_EMBEDDED: 'false',
}

/** Starts a hub for a test: port 0, silent logs, and any config overrides as environment. */
export async function startTestHub(
  store: TestStore,
  env: Record<string, string> = {},
  opts: {
    clock?: Clock
    log?: Logger
    /** Runs on the fresh database before the hub opens it (its env names the database). */
    prepare?: (env: Record<string, string>) => Promise<void>
  } = {},
): Promise<TestHub> {
  const { prepare, ...hubOpts } = opts
  const db = await store.fresh()
  await prepare?.(db.env)
  const config = loadConfig({
    BATON_HOST: '127.0.0.1',
    BATON_PORT: '0',
    BATON_LOG_LEVEL: 'silent',
    ...TEST_ADDRESS_LIMITS,
    ...db.env,
    ...env,
  })
  const hub = await startHub(config, { ...hubOpts, log: opts.log ?? pino({ level: 'silent' }) })
  return {
    ...hub,
    config,
    async close() {
      await hub.stop()
      await db.drop()
    },
  }
}

/** Sends a JSON request to a test hub and answers status, headers and parsed body. */
export async function call(
  hub: { url: string },
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<{
  status: number
  headers: Headers
  body: Record<string, unknown> & { code?: string }
}> {
  const headers: Record<string, string> = { ...opts.headers }
  let body: string | undefined
  if (opts.raw !== undefined) body = opts.raw
  else if (opts.body !== undefined) body = JSON.stringify(opts.body)
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json'
  }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  const res = await fetch(hub.url + path, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  })
  const text = await res.text()
  let parsed: Record<string, unknown> = {}
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {}
  } catch {
    parsed = { text }
  }
  return { status: res.status, headers: res.headers, body: parsed }
}

/** The repository root, for spawning the `baton` command in tests. */
export const repoRoot = path.resolve(import.meta.dirname, '../../..')

/** The `baton` command's entry point. */
export const batonBin = path.join(repoRoot, 'packages/hub/bin/baton.mjs')

/** Starts `baton serve` as its own process and answers its URL once it listens. */
export async function serveProcess(
  env: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [batonBin, 'serve'], {
    cwd: repoRoot,
    env: { ...process.env, BATON_HOST: '127.0.0.1', BATON_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"hub listening"/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.once('exit', (code) => reject(new Error(`baton serve exited ${code}: ${out}`)))
  })
  return { url, child }
}

/** A TCP port free on loopback now, for a hub that must come back on the same port. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
  })
}

/** Resolves with a child's exit code once it has exited. */
export const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => {
    if (child.exitCode !== null) r(child.exitCode)
    else child.once('exit', (code) => r(code))
  })

/**
 * A new signed agent on a hub, enrolled by its first signed `GET /v1/me` (approved at once when
 * admission is open). With a clock, its signatures are dated by that clock.
 */
export async function signedAgent(
  hub: { url: string },
  opts: { clock?: Clock; maxRetryWaitMs?: number } = {},
): Promise<SignedClient> {
  const client = await SignedClient.connect(
    `${hub.url}/.well-known/agent-net`,
    createIdentity(hub.url),
    {
      maxRetryWaitMs: opts.maxRetryWaitMs ?? 0,
      ...(opts.clock ? { now: () => Math.floor(opts.clock!.now() / 1000) } : {}),
    },
  )
  await client.request('GET', '/v1/me')
  return client
}

/**
 * A hub on a store's database that can be stopped and started again on the same data; `start`
 * takes environment for that start alone (a fixed BATON_PORT, say).
 */
export async function restartableHub(
  store: TestStore,
  env: Record<string, string> = {},
  clock?: Clock,
) {
  const db = await store.fresh()
  const start = (once: Record<string, string> = {}) =>
    startHub(
      loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        ...TEST_ADDRESS_LIMITS,
        ...db.env,
        ...env,
        ...once,
      }),
      { ...(clock ? { clock } : {}), log: pino({ level: 'silent' }) },
    )
  return { start, drop: db.drop, env: { ...db.env, ...env } }
}

/**
 * A tool call's answer as a test reads it: a success's structured content, or the error body
 * `{ error, code, fix, ...context }` that an `isError` result carries as JSON text.
 */
export function toolAnswer(answer: object): {
  isError: boolean
  body: Record<string, unknown> & { code?: string }
} {
  const res = answer as { isError?: unknown; structuredContent?: unknown; content?: unknown }
  const isError = res.isError === true
  if (res.structuredContent && !isError) {
    return { isError, body: res.structuredContent as Record<string, unknown> }
  }
  const first = (res.content as { type: string; text?: string }[] | undefined)?.[0]
  return { isError, body: JSON.parse(first?.text ?? '{}') as Record<string, unknown> }
}

/** The code and context of a refused call, as the SDK throws it; fails when it was not refused. */
export async function refusal(
  p: Promise<unknown>,
): Promise<{ code: string; context: Record<string, unknown> }> {
  try {
    await p
  } catch (error) {
    const e = error as { code: string; context: Record<string, unknown> }
    return { code: e.code, context: e.context }
  }
  assert.fail('the call was not refused')
}
