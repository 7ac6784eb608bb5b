import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, saveIdentity } from '@baton/client'
import type { BatonError } from '@baton/protocol'
import { assertNoSecrets } from '../src/transfers/secrets.js'
import { mintToken, TokenKeyring, verifyToken } from '../src/transfers/tokens.js'
import { batonBin, repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const now = Date.UTC(2026, 10, 30, 12)
const key = (kid: string) => ({
  kid,
  secret: Buffer.from(`${kid}-secret-of-at-least-32-characters`),
})
const payload = {
  tid: 'tr_AAAAAAAAAAAAAAAAAAAAAA',
  scope: 'activate' as const,
  exp: now / 1000 + 60,
  jti: 'j1',
}
const expect = { transferId: payload.tid, scope: 'activate' as const, now }
const codeOf = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    return (error as BatonError).code
  }
  return 'ok'
}

describe('transfer tokens and secret detection (units)', () => {
  test('rotation: the first key signs, every key verifies; a dropped key is unknown', () => {
    const old = new TokenKeyring([key('old')])
    const rotated = new TokenKeyring([key('new'), key('old')])
    const token = mintToken(old, payload)
    assert.equal(verifyToken(rotated, token, expect).jti, 'j1')
    assert.match(mintToken(rotated, payload), /^v1\.new\./)
    assert.equal(
      codeOf(() => verifyToken(new TokenKeyring([key('new')]), token, expect)),
      'transfer_token_unknown_key',
    )
    const sameKidOtherSecret = new TokenKeyring([
      { kid: 'old', secret: Buffer.from('x'.repeat(40)) },
    ])
    assert.equal(
      codeOf(() => verifyToken(sameKidOtherSecret, token, expect)),
      'transfer_token_bad_signature',
    )
  })

  test('malformed tokens of every shape are transfer_token_malformed', () => {
    const ring = new TokenKeyring([key('k')])
    const good = mintToken(ring, payload)
    for (const bad of [
      '',
      'v1',
      'v2.k.a.b',
      `${good}.x`,
      good.replace('v1.', 'v1..'),
      'v1.k.!!.??',
    ]) {
      assert.equal(
        codeOf(() => verifyToken(ring, bad, expect)),
        'transfer_token_malformed',
        bad,
      )
    }
    const notJson = `v1.k.${Buffer.from('nope').toString('base64url')}`
    const mac = createHmac('sha256', key('k').secret).update(notJson).digest('base64url')
    assert.equal(
      codeOf(() => verifyToken(ring, `${notJson}.${mac}`, expect)),
      'transfer_token_malformed',
    )
    assert.equal(
      codeOf(() => verifyToken(ring, good, { ...expect, now: (payload.exp + 1) * 1000 })),
      'transfer_token_expired',
    )
  })

  test('secrets: clean snapshots pass; words about secrets are not secrets; credRefs are checked', () => {
    assert.equal(
      codeOf(() =>
        assertNoSecrets({
          systemPrompt: 'Never print the password or the api key.',
          messages: [{ role: 'user', content: 'rotate the sk- prefix keys tomorrow' }],
          toolState: { tokens: 1234, password: '', keys: { credRef: 'vault://kv/app#password' } },
        }),
      ),
      'ok',
    )
    assert.equal(
      codeOf(() => assertNoSecrets({ a: { credRef: 'env://lower' } })),
      'snapshot_invalid',
    )
    assert.equal(
      codeOf(() => assertNoSecrets({ headers: { Authorization: 'Basic abc' } })),
      'snapshot_contains_secret',
    )
    assert.equal(
      codeOf(() => assertNoSecrets([`AIza${'b'.repeat(35)}`])),
      'snapshot_contains_secret',
    )
  })
})

const ADMIN = 'transfer-cli-operator-token-0123456789abcdef'

function baton(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [batonBin, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d
    })
    child.stderr.on('data', (d: Buffer) => {
      stderr += d
    })
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }))
  })
}

for (const store of testStores) {
  describe(`baton transfer CLI and the database-kept token key (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: ADMIN })
      dir = mkdtempSync(path.join(tmpdir(), 'baton-transfer-cli-'))
    })
    after(async () => {
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test('without BATON_TRANSFER_TOKEN_KEYS every instance loads the same key from the database', async () => {
      const again = await TokenKeyring.load(hub.ctx.database, undefined, Date.now(), hub.ctx.sealer)
      const minted = await hub.ctx.transfers.mint(
        (
          await hub.ctx.transfers.create('did:key:zOwner', {
            snapshot: {
              systemPrompt: 'p',
              messages: [],
              toolState: {},
              mcpConfig: { servers: [] },
            },
          })
        ).transferId,
        { scope: 'activate' },
      )
      // A second instance on the same database verifies what the first one minted.
      assert.equal(
        verifyToken(again, minted.token, {
          transferId: minted.transferId,
          scope: 'activate',
          now: Date.now(),
        }).jti,
        minted.jti,
      )
      const rows = await hub.ctx.database.db.selectFrom('transfer_token_keys').selectAll().execute()
      assert.equal(rows.length, 1)
      assert.equal(again.current.kid, rows[0]!.kid)
    })

    test('a large snapshot upload shows its progress and arrives whole', async () => {
      const identity = path.join(dir, 'progress.identity.json')
      await saveIdentity(identity, createIdentity(`${hub.url}/.well-known/agent-net`))
      const file = path.join(dir, 'big-snapshot.json')
      const messages = Array.from({ length: 600 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: `${i} ${'words of a long session '.repeat(200)}`,
      }))
      writeFileSync(file, JSON.stringify({ systemPrompt: 'p', messages }))
      const snap = await baton([
        'transfer',
        'snapshot',
        '--hub',
        hub.url,
        '--identity',
        identity,
        '--file',
        file,
      ])
      assert.equal(snap.code, 0, snap.stderr)
      const lines = snap.stderr.split('\n').filter((l) => /\(\d+%\)/.test(l))
      assert.ok(lines.length >= 5, snap.stderr)
      assert.match(lines.at(-1)!, /\(100%\)/)
      const created = JSON.parse(snap.stdout) as { transferId: string; checksum: string }
      const stored = await hub.ctx.database.db
        .selectFrom('transfers')
        .select(['id'])
        .where('id', '=', created.transferId)
        .executeTakeFirst()
      assert.equal(stored?.id, created.transferId)
    })

    test('snapshot, token, provision, status and terminate from the shell; exit codes follow the house rule', async () => {
      const identity = path.join(dir, 'agent.identity.json')
      await saveIdentity(identity, createIdentity(`${hub.url}/.well-known/agent-net`))
      const file = path.join(dir, 'snapshot.json')
      writeFileSync(
        file,
        JSON.stringify({ systemPrompt: 'p', messages: [{ role: 'user', content: 'hi' }] }),
      )
      const snap = await baton([
        'transfer',
        'snapshot',
        '--hub',
        hub.url,
        '--identity',
        identity,
        '--file',
        file,
        '--idempotency-key',
        'cli-1',
      ])
      assert.equal(snap.code, 0, snap.stderr)
      assert.match(snap.stderr, /uploading snapshot: \d+ B/)
      const id = JSON.parse(snap.stdout).transferId as string
      const noAdmin = await baton(
        ['transfer', 'token', id, '--hub', hub.url, '--scope', 'activate'],
        { BATON_ADMIN_TOKEN: '' },
      )
      assert.equal(noAdmin.code, 64)
      const wrongAdmin = await baton([
        'transfer',
        'token',
        id,
        '--hub',
        hub.url,
        '--scope',
        'activate',
        '--admin-token',
        'x'.repeat(40),
      ])
      assert.equal(wrongAdmin.code, 1)
      assert.match(wrongAdmin.stderr, /admin_token_invalid/)
      const token = await baton([
        'transfer',
        'token',
        id,
        '--hub',
        hub.url,
        '--admin-token',
        ADMIN,
        '--scope',
        'provision',
        '--tier',
        'small',
        '--budget',
        '5000',
        '--rate',
        '10',
      ])
      assert.equal(token.code, 0, token.stderr)
      assert.match(token.stdout.trim(), /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
      const prov = await baton([
        'transfer',
        'provision',
        id,
        '--hub',
        hub.url,
        '--identity',
        identity,
        '--tier',
        'small',
        '--budget',
        '5000',
        '--rate',
        '10',
        '--token',
        token.stdout.trim(),
        '--json',
      ])
      assert.equal(prov.code, 0, prov.stderr)
      assert.equal(JSON.parse(prov.stdout).state, 'provisioned')
      const replay = await baton([
        'transfer',
        'provision',
        id,
        '--hub',
        hub.url,
        '--identity',
        identity,
        '--tier',
        'small',
        '--budget',
        '5000',
        '--rate',
        '10',
        '--token',
        token.stdout.trim(),
        '--json',
      ])
      assert.equal(replay.code, 1)
      assert.equal(JSON.parse(replay.stdout).code, 'transfer_token_replayed')
      const status = await baton([
        'transfer',
        'status',
        id,
        '--hub',
        hub.url,
        '--admin-token',
        ADMIN,
      ])
      assert.equal(JSON.parse(status.stdout).state, 'provisioned')
      const ended = await baton([
        'transfer',
        'terminate',
        id,
        '--hub',
        hub.url,
        '--admin-token',
        ADMIN,
      ])
      assert.equal(ended.code, 0)
      assert.equal(JSON.parse(ended.stdout).endReason, 'orchestrator')
    })
  })
}
