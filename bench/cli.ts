// CLI cold start: wall time of fresh `baton` processes against a hub this scenario starts, each
// beside a bare `node -e 0` measured in the same run, interleaved round by round so a busy machine
// slows them all alike: `baton --help`, the network commands `hub health`, `me show` and
// `resource list`, and `baton request … GET /v1/me` (key load, discovery, one signed request).
// The goal: each within 3× `node -e 0`. The hub counts the discovery requests each command made
// during the rounds (304s included), so a CLI that reads discovery every time shows here. The bin runs the built
// JavaScript, so run `npm run build` first (`npm test` and `npm ci` do).
//
//   node --import tsx bench/cli.ts
//   BENCH_ROUNDS=25 BENCH_CLI_PROFILE=me node --import tsx bench/cli.ts   # and a CPU profile
//   BENCH_CLI_BASE=../other-checkout node --import tsx bench/cli.ts       # and that build's CLI
//
// BENCH_CLI_BASE names another built checkout (an earlier commit, say): each command also runs
// with its bin in the same rounds, against the same hub, so before and after are measured
// side by side.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { DISCOVERY_PATH } from '@baton/protocol'
import { startBenchHub } from './hub.js'
import { median, type Result } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15)
const bin = path.resolve(import.meta.dirname, '../packages/hub/bin/baton.mjs')
const baseBin = process.env.BENCH_CLI_BASE
  ? path.resolve(process.env.BENCH_CLI_BASE, 'packages/hub/bin/baton.mjs')
  : undefined

/**
 * Milliseconds from spawn to exit of one fresh process; fails the run on a non-zero exit. Not
 * spawnSync: the hub answering the commands lives in this process's event loop.
 */
function timed(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, args, {
      cwd,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    })
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

/**
 * Self time by module of a `--cpu-prof` profile, grouped by package (or the hub's and SDK's
 * folders), so where a command's time goes can be read without a browser.
 */
function profileByModule(dir: string): string {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
  if (!file) return '(no profile written)'
  const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as {
    nodes: {
      id: number
      callFrame: { url: string; functionName: string }
      children?: number[]
    }[]
    samples: number[]
    timeDeltas: number[]
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  // A native frame (a file read, a compile) is charged to the JavaScript that called it, so
  // module loading shows as node's loader rather than as a scatter of natives.
  const owner = (id: number): { url: string; functionName: string } => {
    let at: number | undefined = id
    while (at !== undefined) {
      const frame = byId.get(at)!.callFrame
      if (frame.url) return frame
      at = parent.get(at)
    }
    return byId.get(id)!.callFrame
  }
  const self = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const { url, functionName } = owner(id)
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1]
    const ours = /packages\/([^/]+)\/dist\/([^/]+)/.exec(url)
    const key =
      pkg ??
      (ours
        ? `@baton/${ours[1]}/${ours[2]}`
        : url.startsWith('node:internal/modules')
          ? "node's module loader"
          : url.startsWith('node:')
            ? 'node (other)'
            : `(${functionName || 'native'})`)
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12)
    .map(([k, us]) => `  ${(us / 1000).toFixed(1).padStart(7)} ms  ${k}`)
    .concat(`  ${(total / 1000).toFixed(1).padStart(7)} ms  total`)
    .join('\n')
}

export async function run(): Promise<Result[]> {
  if (!existsSync(path.resolve(import.meta.dirname, '../packages/hub/dist/cli/main.js'))) {
    throw new Error('the hub is not built: run npm run build')
  }
  if (baseBin && !existsSync(baseBin))
    throw new Error(`BENCH_CLI_BASE has no built bin: ${baseBin}`)
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-bench-cli-'))
  // The CLI's own caches go in this run's folder, not the user's.
  const env = { ...process.env, XDG_CACHE_HOME: path.join(dir, 'cache'), HOME: dir }
  const { hub, stop } = await startBenchHub('cli')
  let discoveries = 0
  hub.app.server.on('request', (req: { url?: string }) => {
    if (req.url?.startsWith(DISCOVERY_PATH)) discoveries++
  })
  try {
    const discovery = `${hub.url}${DISCOVERY_PATH}`
    await timed([bin, 'identity', 'init', '--hub', discovery, '--out', 'a.json'], dir, env)
    const of = (b: string): [string, string[]][] => [
      ['baton --help', [b, '--help']],
      ['baton hub health', [b, 'hub', 'health', '--hub', hub.url]],
      ['baton me show', [b, 'me', 'show', '--identity', 'a.json']],
      ['baton resource list', [b, 'resource', 'list', '--identity', 'a.json']],
      ['baton request … GET /v1/me', [b, 'request', discovery, 'a.json', 'GET', '/v1/me']],
    ]
    const commands = [
      ...of(bin),
      ...(baseBin
        ? of(baseBin).map(([name, args]): [string, string[]] => [`${name} (base)`, args])
        : []),
    ]
    // One warm-up of each, so the first round does not pay for cold disk caches alone.
    await timed(['-e', '0'], dir, env)
    for (const [, args] of commands) await timed(args, dir, env)
    const bare: number[] = []
    const times = commands.map(() => [] as number[])
    const served = commands.map(() => 0)
    const loads: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      bare.push(await timed(['-e', '0'], dir, env))
      for (const [k, [, args]] of commands.entries()) {
        const before = discoveries
        times[k]!.push(await timed(args, dir, env))
        served[k]! += discoveries - before
      }
      loads.push(os.loadavg()[0]!)
    }
    const profiled = process.env.BENCH_CLI_PROFILE
    if (profiled) {
      const which = commands.find(([name]) => name.includes(profiled)) ?? commands[2]!
      const out = path.join(dir, 'profile')
      await timed(['--cpu-prof', `--cpu-prof-dir=${out}`, ...which[1]], dir, env)
      process.stderr.write(`${which[0]}: self time by module\n${profileByModule(out)}\n`)
    }
    const load = median(loads).toFixed(2)
    const nodeAlone = median(bare)
    return commands.map(([name], k) => ({
      name: `${name} vs node -e 0 (cold start; goal ≤ 3)`,
      baseline: nodeAlone,
      value: median(times[k]!),
      ratio: median(times[k]!) / nodeAlone,
      unit: 'ms',
      detail: { rounds: ROUNDS, loadavg_1m: load, discovery_requests: served[k]! },
    }))
  } finally {
    await stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printResults } = await import('./lib.js')
  printResults(await run())
}
