// The one way a bench starts a hub: loopback on a free port, open admission, a throwaway data
// folder, quotas out of the way, silent logs, and no embedded compute workers (they are not what
// a bench measures, and they compete for the cores). Kept apart from lib.ts, which the load
// client's child process imports and which must stay light.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { loadConfig, type RunningHub, startHub } from '@baton/hub'
import pino from 'pino'

/** A hub for one bench, and how to stop it and remove its data. */
export interface BenchHub {
  hub: RunningHub
  stop(): Promise<void>
}

/** Starts a hub named after the bench; `env` adds or overrides configuration. */
export async function startBenchHub(
  name: string,
  env: Record<string, string> = {},
): Promise<BenchHub> {
  const dir = await mkdtemp(path.join(tmpdir(), `baton-bench-${name}-`))
  const hub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'open',
      BATON_QUOTA_REQUESTS_PER_DAY: String(1e9),
      BATON_LOG_LEVEL: 'silent',
      BATON_COMPUTE_EMBEDDED: 'false',
      ...env,
    }),
    { log: pino({ level: 'silent' }) },
  )
  return {
    hub,
    async stop() {
      await hub.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}
