// Every release's fixture, opened with today's migrations: each record an earlier release wrote
// reads back through the services. The fixtures are written by scripts/make-fixture.ts.
import assert from 'node:assert/strict'
import { copyFileSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { startHub } from '../src/hub.js'
import { MIGRATION_NAMES } from '../src/store/migrations.js'
import { type Records, readRecords } from './releases.js'
import { TEST_ADDRESS_LIMITS, testStores } from './support.js'

const releases = path.join(import.meta.dirname, 'fixtures/releases')
const versions = readdirSync(releases)
const records = (version: string, store: string) =>
  JSON.parse(readFileSync(path.join(releases, version, `records-${store}.json`), 'utf8')) as Records

/** A hub on the data, on a clock set just after the records were made (before any expiry). */
function hubOn(env: Record<string, string>, r: Records) {
  return startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      ...TEST_ADDRESS_LIMITS,
      ...env,
    }),
    { clock: new ManualClock(r.madeAt + 60_000), log: pino({ level: 'silent' }) },
  )
}

const { version: current } = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '../package.json'), 'utf8'),
) as { version: string }
const REGENERATE =
  'regenerate it with `npm run fixture` (scripts/make-fixture.ts; docs/operations.md)'

test('this release has its fixture (scripts/make-fixture.ts writes it)', () => {
  assert.ok(versions.includes(current), `no fixture for ${current}: ${REGENERATE}`)
})

test("this release's fixture holds exactly today's migrations, in both stores", () => {
  const dir = path.join(releases, current)
  const db = new SQLite(path.join(dir, 'baton.sqlite'), { readonly: true, fileMustExist: true })
  const inSqlite = (
    db.prepare('select name from kysely_migration order by name').all() as { name: string }[]
  ).map((r) => r.name)
  db.close()
  const inDump = [
    ...readFileSync(path.join(dir, 'postgres.sql'), 'utf8').matchAll(
      /^INSERT INTO public\.kysely_migration VALUES \('([^']+)'/gm,
    ),
  ]
    .map((m) => m[1]!)
    .sort()
  for (const [store, held] of [
    ['SQLite', inSqlite],
    ['PostgreSQL', inDump],
  ] as const) {
    const missing = MIGRATION_NAMES.filter((m) => !held.includes(m))
    const unknown = held.filter((m) => !MIGRATION_NAMES.includes(m))
    assert.deepEqual(
      { missing, unknown },
      { missing: [], unknown: [] },
      `the ${current} ${store} fixture was written by other migrations than today's: ${REGENERATE}`,
    )
  }
})

for (const store of testStores) {
  describe(`release fixtures under today's migrations (${store.name})`, () => {
    for (const version of versions) {
      test(`${version}: every record reads back`, async () => {
        const r = records(version, store.name)
        const db = await store.fresh()
        try {
          if (store.name === 'sqlite') {
            const dir = db.env.BATON_DATA_DIR!
            for (const f of ['baton.sqlite', 'hub.kek']) {
              copyFileSync(path.join(releases, version, f), path.join(dir, f))
            }
          } else {
            // A plain dump loads through any client once psql's own meta-commands are left out.
            const text = readFileSync(path.join(releases, version, 'postgres.sql'), 'utf8')
            const client = new pg.Client({ connectionString: db.env.DATABASE_URL })
            await client.connect()
            try {
              await client.query(
                text
                  .split('\n')
                  .filter((l) => !l.startsWith('\\'))
                  .join('\n'),
              )
            } finally {
              await client.end()
            }
          }
          const hub = await hubOn(db.env, r)
          try {
            await readRecords(hub, r)
          } finally {
            await hub.stop()
          }
        } finally {
          await db.drop()
        }
      })
    }
  })
}
