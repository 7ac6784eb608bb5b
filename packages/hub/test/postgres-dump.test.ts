// The PostgreSQL backup of docs/operations.md, step by step: pg_dump a hub's database while it
// takes writes, pg_restore it into a fresh database, start a hub on that and read every record
// and every write acknowledged before the dump back. The server is one of
// the same release as the pg_dump found, since pg_dump refuses a newer server.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { SignedClient } from '@baton/client'
import pg from 'pg'
import pino from 'pino'
import { findPgTools, startPostgres } from '../../../scripts/postgres.js'
import { loadConfig } from '../src/config.js'
import { startHub } from '../src/hub.js'
import { readRecords, seedRecords } from './releases.js'
import { onPostgres, PG_KEY_SECRET, signedAgent, TEST_ADDRESS_LIMITS } from './support.js'

/** Runs a PostgreSQL tool as its own process, without holding this one's event loop. */
const run = (file: string, args: string[]) =>
  new Promise<void>((resolve, reject) =>
    execFile(file, args, (error, _stdout, stderr) =>
      error ? reject(new Error(`${path.basename(file)}: ${stderr || error.message}`)) : resolve(),
    ),
  )

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

  test('a dump taken under write load restores every record and every write acknowledged before it', async () => {
    const live = await hubOn(urlOf('baton_live'))
    const dump = path.join(dir, 'hub.dump')
    let records: Awaited<ReturnType<typeof seedRecords>>
    const acked: number[] = []
    let before: number[]
    let recipient: SignedClient
    try {
      records = await seedRecords(live, 'now')
      const sender = await signedAgent(live)
      recipient = await signedAgent(live)
      let stop = false
      const send = async (i: number) => {
        await sender.call('POST', '/v1/messages', {
          recipient: recipient.principal,
          body: { i },
          idempotencyKey: `dump-load-${i}`,
        })
        acked.push(i)
      }
      for (let i = 0; i < 20; i++) await send(i)
      // The load goes on while pg_dump runs, in its own process, and stops when it is done;
      // bounded below the daily message quota. A failed write fails the test after the dump.
      const load = (async () => {
        for (let i = 20; i < 600 && !stop; i++) await send(i)
      })().then(
        () => undefined,
        (error: unknown) => error,
      )
      before = [...acked]
      await run(path.join(tools!, 'pg_dump'), [
        '--format=custom',
        `--file=${dump}`,
        `--dbname=${urlOf('baton_live')}`,
      ])
      stop = true
      assert.equal(await load, undefined)
    } finally {
      await live.stop()
    }
    assert.ok(acked.length > before.length, 'writes went on while the dump ran')
    await run(path.join(tools!, 'pg_restore'), [
      '--no-owner',
      '--exit-on-error',
      `--dbname=${urlOf('baton_restored')}`,
      dump,
    ])
    const restored = await hubOn(urlOf('baton_restored'))
    try {
      await readRecords(restored, records)
      // The recipient, signing to the restored hub, finds every message acknowledged before
      // pg_dump began (its snapshot), and nothing it was never told of.
      const reader = await SignedClient.connect(
        `${restored.url}/.well-known/agent-net`,
        recipient.identity,
      )
      const got: number[] = []
      for (let after = 0; ; ) {
        const page = await reader.call<{ messages: { body: { i: number } }[]; nextAfter: number }>(
          'GET',
          `/v1/messages?after=${after}`,
        )
        if (page.messages.length === 0) break
        got.push(...page.messages.map((m) => m.body.i))
        after = page.nextAfter
      }
      for (const i of before)
        assert.ok(got.includes(i), `message ${i} was acknowledged before the dump`)
      for (const i of got) assert.ok(acked.includes(i), `message ${i} was acknowledged`)
    } finally {
      await restored.stop()
    }
  })
})
