// `baton backup` and `baton restore` on SQLite: a copy taken while the hub writes, put back on a
// fresh data directory, answers every write acknowledged before the backup started.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { SignedClient } from '@baton/client'
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import {
  batonBin,
  exited,
  repoRoot,
  signedAgent,
  startTestHub,
  TEST_ADDRESS_LIMITS,
  type TestHub,
  testStores,
} from './support.js'

const sqlite = testStores.find((s) => s.name === 'sqlite')
const skip = sqlite ? false : 'SQLite is not among the chosen stores (BATON_TEST_STORES)'

/** Runs `baton …` as its own process; answers its exit code and what it printed. */
function baton(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [batonBin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: '', BATON_HUB_KEY_SECRET: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c) => {
    stdout += c
  })
  child.stderr.on('data', (c) => {
    stderr += c
  })
  return exited(child).then((code) => ({ code, stdout, stderr }))
}

function hubOn(dataDir: string): Promise<RunningHub> {
  return startHub(
    loadConfig({
      BATON_HOST: '127.0.0.1',
      BATON_PORT: '0',
      BATON_LOG_LEVEL: 'silent',
      BATON_ADMISSION: 'open',
      BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
      ...TEST_ADDRESS_LIMITS,
      BATON_DATA_DIR: dataDir,
    }),
    { log: pino({ level: 'silent' }) },
  )
}

/** Every message id in a principal's inbox, read through the service. */
async function inbox(hub: RunningHub, principal: string): Promise<Set<string>> {
  const ids = new Set<string>()
  let after = 0
  for (;;) {
    const page = await hub.ctx.messages.list(principal, { after, limit: 100 })
    for (const m of page.messages) ids.add(m.id)
    if (page.messages.length === 0) return ids
    after = page.nextAfter
  }
}

test('on a PostgreSQL hub (DATABASE_URL set) backup and restore refuse and name pg_dump and pg_restore', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-backup-pg-'))
  try {
    // A SQLite file left in the data directory is not the hub's database: it is never copied.
    writeFileSync(path.join(dir, 'baton.sqlite'), 'stale')
    const pg = { DATABASE_URL: 'postgres://baton@127.0.0.1:1/baton' }
    const out = path.join(dir, 'copy.sqlite')
    const backup = await baton(['backup', '--out', out, '--data-dir', dir], pg)
    assert.equal(backup.code, 1)
    assert.match(backup.stderr, /DATABASE_URL.*PostgreSQL.*pg_dump.*docs\/operations\.md/s)
    assert.equal(existsSync(out), false)
    const restore = await baton(['restore', '--from', out, '--data-dir', dir], pg)
    assert.equal(restore.code, 1)
    assert.match(restore.stderr, /pg_restore/)
    assert.equal(readFileSync(path.join(dir, 'baton.sqlite'), 'utf8'), 'stale')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('baton backup and restore (sqlite)', { skip }, () => {
  let hub: TestHub
  let sender: SignedClient
  let recipient: SignedClient
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-backup-'))

  before(async () => {
    hub = await startTestHub(sqlite!, {
      BATON_ADMISSION: 'open',
      BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
    })
    sender = await signedAgent(hub)
    recipient = await signedAgent(hub)
  })
  after(async () => {
    await hub.close()
    rmSync(dir, { recursive: true, force: true })
  })

  test('a backup under write load restores every write acknowledged before it began', async () => {
    const acked: string[] = []
    let stop = false
    const send = async (i: number) => {
      const sent = await sender.call<{ id: string }>('POST', '/v1/messages', {
        recipient: recipient.principal,
        body: { i },
        idempotencyKey: `load-${i}`,
      })
      acked.push(sent.id)
    }
    for (let i = 0; i < 20; i++) await send(i)
    // The load goes on while the backup runs, in its own process, and stops when it is done.
    // Bounded below the daily message quota; a failed write fails the test after the backup.
    const load = (async () => {
      for (let i = 20; i < 600 && !stop; i++) await send(i)
    })().then(
      () => undefined,
      (error: unknown) => error,
    )
    const before = [...acked]
    const out = path.join(dir, 'under-load.sqlite')
    const backup = await baton(['backup', '--out', out, '--data-dir', hub.config.dataDir])
    stop = true
    assert.equal(await load, undefined)
    assert.equal(backup.code, 0, backup.stderr)
    const result = JSON.parse(backup.stdout) as { out: string; integrity: string; kek: string }
    assert.equal(result.out, out)
    assert.equal(result.integrity, 'ok')
    assert.equal(result.kek, path.join(hub.config.dataDir, 'hub.kek'))
    assert.equal(statSync(out).mode & 0o777, 0o600)
    assert.equal(existsSync(`${out}-wal`), false, 'the backup is one file')

    const fresh = path.join(dir, 'fresh')
    const restore = await baton([
      'restore',
      '--from',
      out,
      '--data-dir',
      fresh,
      '--kek',
      result.kek,
    ])
    assert.equal(restore.code, 0, restore.stderr)
    assert.equal((JSON.parse(restore.stdout) as { keys: string }).keys, 'kek file')
    const restored = await hubOn(fresh)
    try {
      const ids = await inbox(restored, recipient.principal)
      for (const id of before)
        assert.ok(ids.has(id), `message ${id} acknowledged before the backup`)
      // The restored hub signs with the same key: discovery publishes the hub key it had.
      const was = hub.ctx.identity.discovery('http://x').hubKey
      assert.deepEqual(restored.ctx.identity.discovery('http://x').hubKey, was)
      // The same agent, signing to the restored hub, is still known and approved.
      const again = await SignedClient.connect(
        `${restored.url}/.well-known/agent-net`,
        recipient.identity,
        { maxRetryWaitMs: 0 },
      )
      const me = await again.request<{ state: string }>('GET', '/v1/me')
      assert.equal(me.status, 200)
      assert.equal(me.body.state, 'approved')
    } finally {
      await restored.stop()
    }
  })

  test('restore refuses while a hub runs on the data directory, and changes nothing', async () => {
    const out = path.join(dir, 'refused.sqlite')
    assert.equal((await baton(['backup', '--out', out, '--data-dir', hub.config.dataDir])).code, 0)
    const file = path.join(hub.config.dataDir, 'baton.sqlite')
    const size = statSync(file).size
    const refused = await baton(['restore', '--from', out, '--data-dir', hub.config.dataDir])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /a hub is running/)
    assert.equal(statSync(file).size, size)
    assert.equal((await sender.request('GET', '/v1/me')).status, 200)
  })

  test('restore opens the sealed keys first: no KEK or the wrong one is refused', async () => {
    const out = path.join(dir, 'keys.sqlite')
    assert.equal((await baton(['backup', '--out', out, '--data-dir', hub.config.dataDir])).code, 0)
    const empty = path.join(dir, 'empty')
    const none = await baton(['restore', '--from', out, '--data-dir', empty])
    assert.equal(none.code, 1)
    assert.match(none.stderr, /--kek/)
    assert.equal(existsSync(path.join(empty, 'baton.sqlite')), false)
    const wrong = path.join(dir, 'wrong.kek')
    writeFileSync(wrong, Buffer.alloc(32, 7), { mode: 0o600 })
    const bad = await baton(['restore', '--from', out, '--data-dir', empty, '--kek', wrong])
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /does not open/)
    assert.equal(existsSync(path.join(empty, 'baton.sqlite')), false)
    // A restore over an existing database moves the old one aside, never deletes it.
    const kek = path.join(hub.config.dataDir, 'hub.kek')
    const first = await baton(['restore', '--from', out, '--data-dir', empty, '--kek', kek])
    assert.equal(first.code, 0, first.stderr)
    const second = await baton(['restore', '--from', out, '--data-dir', empty])
    assert.equal(second.code, 0, second.stderr)
    const { replaced } = JSON.parse(second.stdout) as { replaced: string }
    assert.ok(existsSync(path.join(replaced, 'baton.sqlite')))
    assert.deepEqual(readFileSync(path.join(empty, 'hub.kek')), readFileSync(kek))
  })

  test('keys sealed under BATON_HUB_KEY_SECRET restore only with that secret', async () => {
    const secret = 'the backup test hub key secret 0123456789'
    const source = path.join(dir, 'sealed-by-secret')
    const sealed = await startHub(
      loadConfig({
        BATON_HOST: '127.0.0.1',
        BATON_PORT: '0',
        BATON_LOG_LEVEL: 'silent',
        BATON_DATA_DIR: source,
        BATON_HUB_KEY_SECRET: secret,
      }),
      { log: pino({ level: 'silent' }) },
    )
    const out = path.join(dir, 'secret.sqlite')
    try {
      assert.equal((await baton(['backup', '--out', out, '--data-dir', source])).code, 0)
    } finally {
      await sealed.stop()
    }
    const target = path.join(dir, 'secret-target')
    const without = await baton(['restore', '--from', out, '--data-dir', target])
    assert.equal(without.code, 1)
    assert.match(without.stderr, /BATON_HUB_KEY_SECRET/)
    const wrong = await baton(['restore', '--from', out, '--data-dir', target], {
      BATON_HUB_KEY_SECRET: 'another secret altogether 0123456789abc',
    })
    assert.equal(wrong.code, 1)
    const right = await baton(['restore', '--from', out, '--data-dir', target], {
      BATON_HUB_KEY_SECRET: secret,
    })
    assert.equal(right.code, 0, right.stderr)
    assert.equal((JSON.parse(right.stdout) as { keys: string }).keys, 'BATON_HUB_KEY_SECRET')
  })
})
