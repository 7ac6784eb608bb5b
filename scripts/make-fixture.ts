// Writes, with this release, the upgrade fixtures of packages/hub/test/fixtures/releases/<version>/:
// a SQLite database (with the KEK file its keys are sealed under) and a PostgreSQL dump, each
// holding one record of every feature, with the ids of those records. Tests open every release's
// fixture with today's migrations and read each record back, and check that this release's
// fixture holds exactly today's migrations. Run it once per release, and again whenever a
// migration is added before the release: npm run fixture
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import pino from 'pino'
import { loadConfig } from '../packages/hub/src/config.js'
import { startHub } from '../packages/hub/src/hub.js'
import { backupSqlite } from '../packages/hub/src/store/backup.js'
import { type Records, seedRecords } from '../packages/hub/test/releases.js'
import { PG_KEY_SECRET, TEST_ADDRESS_LIMITS } from '../packages/hub/test/support.js'
import { findPgTools, startPostgres } from './postgres.js'

const root = path.resolve(import.meta.dirname, '..')
const { version } = JSON.parse(readFileSync(path.join(root, 'packages/hub/package.json'), 'utf8'))
const out = path.join(root, 'packages/hub/test/fixtures/releases', version)
mkdirSync(out, { recursive: true })

async function seeded(env: Record<string, string>): Promise<Records> {
  const hub = await startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_ADMISSION: 'open',
      ...TEST_ADDRESS_LIMITS,
      BATON_COMPUTE_EMBEDDED: 'true',
      ...env,
    }),
    { log: pino({ level: 'silent' }) },
  )
  try {
    return await seedRecords(hub, version)
  } finally {
    await hub.stop()
  }
}

const write = (name: string, records: Records) =>
  writeFileSync(path.join(out, name), `${JSON.stringify(records, null, 2)}\n`)

// SQLite: the database as `baton backup` writes it, and the KEK file it needs.
const dataDir = mkdtempSync(path.join(tmpdir(), 'baton-fixture-'))
try {
  write('records-sqlite.json', await seeded({ BATON_DATA_DIR: dataDir }))
  rmSync(path.join(out, 'baton.sqlite'), { force: true })
  await backupSqlite({ dataDir, out: path.join(out, 'baton.sqlite') })
  const copy = new SQLite(path.join(out, 'baton.sqlite'))
  copy.exec('vacuum')
  copy.close()
  copyFileSync(path.join(dataDir, 'hub.kek'), path.join(out, 'hub.kek'))
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}

// PostgreSQL: a plain SQL dump (INSERT statements), which any later server loads.
const tools = findPgTools()
if (!tools) throw new Error('no pg_dump beside a PostgreSQL server: set BATON_PG_BIN')
const server = await startPostgres({ nativeDir: path.dirname(tools) })
try {
  const admin = new pg.Client({ connectionString: server.url })
  await admin.connect()
  await admin.query('create database baton_fixture')
  await admin.end()
  const url = server.url.replace(/\/postgres$/, '/baton_fixture')
  write(
    'records-postgres.json',
    await seeded({
      DATABASE_URL: url,
      BATON_HUB_KEY_SECRET: PG_KEY_SECRET,
      BATON_DATA_DIR: tmpdir(),
    }),
  )
  const dump = execFileSync(
    path.join(tools, 'pg_dump'),
    ['--format=plain', '--inserts', '--no-owner', '--no-privileges', '--dbname', url],
    { maxBuffer: 64 * 1024 * 1024 },
  )
  writeFileSync(path.join(out, 'postgres.sql'), dump)
} finally {
  await server.stop()
}
console.log(`wrote ${path.relative(root, out)}`)
