// CLI cold start: wall time of a fresh `baton --help` and of a fresh `baton request … GET /v1/me`
// (key load, discovery, one signed request) against a hub this scenario starts, each beside a bare
// `node -e 0` measured in the same run, interleaved round by round so a busy machine slows all
// three alike. The goal: `baton --help` within a few times `node -e 0`. The bin runs the built
// JavaScript, so run `npm run build` first (`npm test` and `npm ci` do).
//
//   node --import tsx bench/cli.ts
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { loadConfig, startHub } from '@baton/hub'
import pino from 'pino'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15)
const bin = path.resolve(import.meta.dirname, '../packages/hub/bin/baton.mjs')

/**
 * Milliseconds from spawn to exit of one fresh process; fails the run on a non-zero exit. Not
 * spawnSync: the hub answering `baton request` lives in this process's event loop.
 */
function timed(args: string[], cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (c) => {
      stderr += c
    })
    child.once('error', reject)
    child.once('close', (code) => {
      const ms = performance.now() - started
      if (code === 0) resolve(ms)
      else reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`))
    })
  })
}

export async function run(): Promise<Result[]> {
  if (!existsSync(path.resolve(import.meta.dirname, '../packages/hub/dist/cli/main.js'))) {
    throw new Error('the hub is not built: run npm run build')
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-bench-cli-'))
  const hub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_DATA_DIR: dir,
      BATON_ADMISSION: 'open',
      BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
    }),
    { log: pino({ level: 'silent' }) },
  )
  try {
    const discovery = `${hub.url}/.well-known/agent-net`
    await timed([bin, 'identity', 'init', '--hub', discovery, '--out', 'a.json'], dir)
    const request = [bin, 'request', discovery, 'a.json', 'GET', '/v1/me']
    // One warm-up of each, so the first round does not pay for cold disk caches alone.
    await timed(['-e', '0'], dir)
    await timed([bin, '--help'], dir)
    await timed(request, dir)
    const bare: number[] = []
    const help: number[] = []
    const signed: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      bare.push(await timed(['-e', '0'], dir))
      help.push(await timed([bin, '--help'], dir))
      signed.push(await timed(request, dir))
    }
    const load = os.loadavg()[0]!.toFixed(2)
    const base = median(bare)
    return [
      {
        name: 'baton --help vs node -e 0 (cold start; goal: a few times)',
        baseline: base,
        value: median(help),
        ratio: median(help) / base,
        unit: 'ms',
        detail: { rounds: ROUNDS, loadavg_1m: load },
      },
      {
        name: 'baton request … GET /v1/me vs node -e 0 (cold start)',
        baseline: base,
        value: median(signed),
        ratio: median(signed) / base,
        unit: 'ms',
        detail: { rounds: ROUNDS, loadavg_1m: load },
      },
    ]
  } finally {
    await hub.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printResults } = await import('./lib.js')
  printResults(await run())
}
