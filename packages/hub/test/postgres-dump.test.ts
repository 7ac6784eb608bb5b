// The PostgreSQL backup of docs/operations.md, step by step: pg_dump a hub's database, pg_restore
// it into a fresh database, start a hub on that and read every record back. The server is one of
// the same release as the pg_dump found, since pg_dump refuses a newer server.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import pino from 'pino'
import { findPgTools, startPostgres } from '../../../scripts/postgres.js'
import { loadConfig } from '../src/config.js'
import { startHub } from '../src/hub.js'
import { readRecords, seedRecords } from './releases.js'
import { onPostgres, PG_KEY_SECRET, TEST_ADDRESS_LIMITS } from './support.js'

const tools = findPgTools()
const skip =
  onPostgres.skip ||
  (tools ? false : 'no pg_dump and pg_restore beside a PostgreSQL server (set BATON_PG_BIN)')

const hubOn = (url: string) =>
  startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      BATON_ADMISSION: 'open',
      ...TEST_ADDRESS_LIMITS,
      BATON_COMPUTE_EMBEDDED: 'true',
      DATABASE_URL: url,
      BATON_HUB_KEY_SECRET: PG_KEY_SECRET,
      BATON_DATA_DIR: tmpdir(),
    }),
    { log: pino({ level: 'silent' }) },
  )

describe('pg_dump and pg_restore of a hub database', { skip }, () => {
  let server: Awaited<ReturnType<typeof startPostgres>>
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-pgdump-'))
  const urlOf = (name: string) => server.url.replace(/\/postgres$/, `/${name}`)

  before(async () => {
    server = await startPostgres({ nativeDir: path.dirname(tools!) })
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query('create database baton_live')
    await admin.query('create database baton_restored')
    await admin.end()
  })
  after(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a dump restored into a fresh database serves every record', async () => {
    const live = await hubOn(urlOf('baton_live'))
    let records: Awaited<ReturnType<typeof seedRecords>>
    try {
      records = await seedRecords(live, 'now')
    } finally {
      await live.stop()
    }
    const dump = path.join(dir, 'hub.dump')
    execFileSync(path.join(tools!, 'pg_dump'), [
      '--format=custom',
      `--file=${dump}`,
      `--dbname=${urlOf('baton_live')}`,
    ])
    execFileSync(path.join(tools!, 'pg_restore'), [
      '--no-owner',
      '--exit-on-error',
      `--dbname=${urlOf('baton_restored')}`,
      dump,
    ])
    const restored = await hubOn(urlOf('baton_restored'))
    try {
      await readRecords(restored, records)
    } finally {
      await restored.stop()
    }
  })
})
