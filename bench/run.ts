// `npm run bench`: runs every scenario module present in bench/, prints one table of results
// beside their same-run baselines, and writes bench/results/latest.json.
import { mkdir, readdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { printResults, type Result, type Scenario } from './lib.js'

/** Scenarios that run first, in this order; any other `bench/*.ts` with a `run()` follows. */
const FIRST = ['handoff-moves', 'context-chain', 'signed-requests']
/** Files in bench/ that are not scenarios. */
const NOT_SCENARIOS = new Set(['lib', 'run'])

const here = fileURLToPath(new URL('.', import.meta.url))
const found = (await readdir(here))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .map((f) => f.slice(0, -3))
  .filter((name) => !NOT_SCENARIOS.has(name))
const ordered = [
  ...FIRST.filter((name) => found.includes(name)),
  ...found.filter((name) => !FIRST.includes(name)).sort(),
]

// `npm run bench -- handoff-moves` runs only the named scenarios.
const only = process.argv.slice(2)
const results: Result[] = []
const ran: string[] = []
const started = Date.now()
// A scenario may hold only unref'd handles (worker threads, timers) while it waits on them; keep
// the process alive until every scenario has answered, or Node ends it mid-await (exit 13).
const alive = setInterval(() => {}, 1 << 30)
for (const name of ordered) {
  if (only.length > 0 && !only.includes(name)) continue
  const mod = (await import(new URL(`./${name}.ts`, import.meta.url).href)) as { run?: Scenario }
  if (typeof mod.run !== 'function') continue
  process.stderr.write(`\n== ${name}\n`)
  results.push(...(await mod.run()))
  ran.push(name)
}
clearInterval(alive)
if (only.some((name) => !ran.includes(name))) {
  throw new Error(`no scenario named ${only.filter((n) => !ran.includes(n)).join(', ')} in bench/`)
}

console.log('')
printResults(results)
const seconds = (Date.now() - started) / 1000
console.log(`\n${ran.length} scenario(s) in ${seconds.toFixed(0)} s`)

const out = fileURLToPath(new URL('./results/', import.meta.url))
await mkdir(out, { recursive: true })
await writeFile(
  `${out}latest.json`,
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      seconds,
      scenarios: ran,
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('BENCH_'))),
      results,
    },
    null,
    2,
  )}\n`,
)
