// The one way a bench starts a hub: loopback on a free port, open admission, a throwaway data
// folder, quotas out of the way, silent logs, and no embedded compute workers (they are not what
// a bench measures, and they compete for the cores). Kept apart from lib.ts, which the load
// client's child process imports and which must stay light.
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadConfig, type RunningHub, startHub } from '@baton/hub'
import pg from 'pg'
import pino from 'pino'
import { startPostgres } from '../scripts/postgres.js'
import type { Result } from './lib.js'

/** The stores a bench can run a hub on. */
export type Store = 'sqlite' | 'postgres'

/** A hub for one bench, and how to stop it and remove its data. */
export interface BenchHub {
  hub: RunningHub
  stop(): Promise<void>
}

/**
 * Starts a hub named after the bench; `env` adds or overrides configuration. Given `postgres`
 * (a server's URL), the hub runs on a database of its own there, dropped when it stops.
 */
export async function startBenchHub(
  name: string,
  env: Record<string, string> = {},
  opts: { postgres?: string | undefined } = {},
): Promise<BenchHub> {
  const dir = await mkdtemp(path.join(tmpdir(), `baton-bench-${name}-`))
  const database = opts.postgres ? await throwawayDatabase(opts.postgres) : undefined
  const hub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'open',
      BATON_QUOTA_REQUESTS_PER_DAY: String(1e9),
      BATON_LOG_LEVEL: 'silent',
      BATON_COMPUTE_EMBEDDED: 'false',
      ...(database
        ? {
            DATABASE_URL: database.url,
            BATON_HUB_KEY_SECRET: 'the hub key secret of benchmark hubs',
          }
        : {}),
      ...env,
    }),
    { log: pino({ level: 'silent' }) },
  )
  return {
    hub,
    async stop() {
      await hub.stop()
      await database?.drop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A fresh database on the server at `serverUrl`, and how to drop it. */
async function throwawayDatabase(serverUrl: string) {
  const name = `baton_bench_${randomBytes(5).toString('hex')}`
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }
  await admin(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) }
}

/**
 * Runs `measure` once per store, in order: SQLite as it is, PostgreSQL on the server that
 * DATABASE_URL names or else one started for the run (and stopped after it).
 */
export async function perStore(
  stores: readonly Store[],
  measure: (store: Store, postgres: string | undefined) => Promise<Result[]>,
): Promise<Result[]> {
  const results: Result[] = []
  let started: { url: string; stop: () => Promise<void> } | undefined
  try {
    for (const store of stores) {
      let postgres: string | undefined
      if (store === 'postgres') {
        postgres = process.env.DATABASE_URL
        if (!postgres) {
          started ??= await startPostgres()
          postgres = started.url
        }
      }
      results.push(...(await measure(store, postgres)))
    }
  } finally {
    await started?.stop()
  }
  return results
}
