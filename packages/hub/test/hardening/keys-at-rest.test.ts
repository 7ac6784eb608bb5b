import assert from 'node:assert/strict'
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import type { BatonError } from '@baton/protocol'
import pino from 'pino'
import { loadConfig } from '../../src/config.js'
import { type RunningHub, startHub } from '../../src/hub.js'
import { loadHubSigner } from '../../src/identity/hub-key.js'
import { mintToken, newJti, TokenKeyring } from '../../src/transfers/tokens.js'
import { signedAgent, testStores } from '../support.js'

const PARAMS = { tier: 'small', budgetMicros: 1000, rateMicrosPerSecond: 1 }

const start = (env: Record<string, string>) =>
  startHub(
    loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', BATON_ADMISSION: 'open', ...env }),
    { log: pino({ level: 'silent' }) },
  )

/** The hub's keys in the clear, as only the running hub should know them. */
async function clearKeys(hub: RunningHub) {
  const signer = await loadHubSigner(hub.ctx.identity)
  const jwk = signer.privateKey.export({ format: 'jwk' }) as Record<string, string>
  const ring = await TokenKeyring.load(hub.ctx.database, undefined, Date.now(), hub.ctx.sealer)
  return { jwk, d: jwk.d!, kid: ring.current.kid, hmac: ring.current.secret.toString('utf8') }
}

/** The key rows exactly as the database holds them. */
async function keyRows(hub: RunningHub) {
  const { db } = hub.ctx.database
  return {
    hub: await db.selectFrom('hub_keys').selectAll().executeTakeFirstOrThrow(),
    tokens: await db.selectFrom('transfer_token_keys').selectAll().execute(),
  }
}

async function stage(agent: SignedClient): Promise<string> {
  const res = await agent.request<{ transferId: string }>('POST', '/v1/transfers', {
    snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
  })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body.transferId
}

const provisionWith = (agent: SignedClient, id: string, token: string) =>
  agent.request<{ code?: string; state?: string }>('POST', `/v1/transfers/${id}/provision`, {
    ...PARAMS,
    token,
  })

/** A provision token MACed with `secret` as the database row's key would be. */
const forge = (kid: string, secret: Buffer, id: string) =>
  mintToken(new TokenKeyring([{ kid, secret }]), {
    tid: id,
    scope: 'provision',
    ...PARAMS,
    exp: Math.floor(Date.now() / 1000) + 300,
    jti: newJti(),
  })

for (const store of testStores) {
  describe(`keys at rest (${store.name})`, () => {
    const drops: (() => Promise<void>)[] = []
    after(async () => {
      for (const drop of drops) await drop()
    })

    test('the database holds no clear key, and a token forged from what it holds is refused', async () => {
      const db = await store.fresh()
      drops.push(db.drop)
      const hub = await start(db.env)
      try {
        const keys = await clearKeys(hub)
        const rows = await keyRows(hub)
        const stored = JSON.stringify(rows)
        assert.match(rows.hub.private_jwk, /^sealed:/)
        for (const row of rows.tokens) assert.match(row.secret, /^sealed:/)
        assert.ok(!stored.includes(keys.d), 'no clear hub private key in the rows')
        assert.ok(!stored.includes(keys.hmac), 'no clear transfer token key in the rows')

        const agent = await signedAgent(hub)
        const id = await stage(agent)
        for (const row of rows.tokens) {
          for (const secret of [
            Buffer.from(row.secret, 'utf8'),
            Buffer.from(row.secret.replace(/^sealed:[a-z0-9]+:/, ''), 'base64url'),
          ]) {
            const forged = await provisionWith(agent, id, forge(row.kid, secret, id))
            assert.equal(forged.status, 401, JSON.stringify(forged.body))
            assert.equal(forged.body.code, 'transfer_token_bad_signature')
          }
        }
        // The hub's own key still signs what it verifies.
        const genuine = await provisionWith(agent, id, forge(keys.kid, Buffer.from(keys.hmac), id))
        assert.equal(genuine.status, 200, JSON.stringify(genuine.body))
        assert.equal(genuine.body.state, 'provisioned')

        if (store.name === 'sqlite') {
          // Nor do the files: the database, its WAL, anything beside it but the KEK file.
          const dir = db.env.BATON_DATA_DIR!
          const needles = [
            Buffer.from(keys.d),
            Buffer.from(keys.d, 'base64url'),
            Buffer.from(keys.hmac),
            Buffer.from(keys.hmac, 'base64url'),
          ]
          for (const name of readdirSync(dir)) {
            if (name === 'hub.kek') continue
            const bytes = readFileSync(path.join(dir, name))
            for (const needle of needles) {
              assert.equal(bytes.indexOf(needle), -1, `${name} holds a clear key`)
            }
          }
        }
      } finally {
        await hub.stop()
      }
    })

    test('keys an older hub stored in the clear are sealed on the first start, and keep working', async () => {
      const db = await store.fresh()
      drops.push(db.drop)
      let hub = await start(db.env)
      const keys = await clearKeys(hub)
      const kid = (await keyRows(hub)).hub.kid
      // As an older hub left them: both keys in the clear.
      await hub.ctx.database.db
        .updateTable('hub_keys')
        .set({ private_jwk: JSON.stringify(keys.jwk) })
        .execute()
      await hub.ctx.database.db
        .updateTable('transfer_token_keys')
        .set({ secret: keys.hmac })
        .where('kid', '=', keys.kid)
        .execute()
      await hub.stop()

      hub = await start(db.env)
      try {
        const rows = await keyRows(hub)
        assert.match(rows.hub.private_jwk, /^sealed:/)
        assert.equal(rows.hub.kid, kid, 'the same key, sealed')
        assert.match(rows.tokens[0]!.secret, /^sealed:/)
        assert.ok(!JSON.stringify(rows).includes(keys.d))
        assert.ok(!JSON.stringify(rows).includes(keys.hmac))
        const again = await clearKeys(hub)
        assert.equal(again.d, keys.d)
        assert.equal(again.hmac, keys.hmac)
        const agent = await signedAgent(hub)
        const id = await stage(agent)
        const res = await provisionWith(agent, id, forge(keys.kid, Buffer.from(keys.hmac), id))
        assert.equal(res.status, 200, 'a token of the old key still verifies')
      } finally {
        await hub.stop()
      }
    })

    if (store.name === 'postgres') {
      test('PostgreSQL without BATON_HUB_KEY_SECRET refuses to start', async () => {
        const db = await store.fresh()
        drops.push(db.drop)
        const { BATON_HUB_KEY_SECRET: _, ...env } = db.env
        await assert.rejects(start(env), (error: BatonError) => {
          assert.equal(error.code, 'hub_key_secret_required')
          assert.match(String(error.toBody().fix), /BATON_HUB_KEY_SECRET/)
          return true
        })
      })
    } else {
      test('the data directory is 0700 and everything the hub writes there 0600', async () => {
        const db = await store.fresh()
        drops.push(db.drop)
        const fresh = path.join(db.env.BATON_DATA_DIR!, 'new')
        const hub = await start({ BATON_DATA_DIR: fresh })
        try {
          await signedAgent(hub)
          const modes = (dir: string) =>
            Object.fromEntries(
              readdirSync(dir).map((f) => [f, statSync(path.join(dir, f)).mode & 0o777]),
            )
          assert.equal(statSync(fresh).mode & 0o777, 0o700)
          const files = modes(fresh)
          for (const name of ['baton.sqlite', 'baton.sqlite-wal', 'baton.sqlite-shm', 'hub.kek']) {
            assert.equal(files[name], 0o600, `${name} is ${files[name]?.toString(8)}`)
          }
          for (const [name, mode] of Object.entries(files)) assert.equal(mode, 0o600, name)
        } finally {
          await hub.stop()
        }

        // A directory an older hub left open is tightened at start.
        const old = path.join(db.env.BATON_DATA_DIR!, 'old')
        mkdirSync(old, { mode: 0o755 })
        chmodSync(old, 0o755)
        closeSync(openSync(path.join(old, 'baton.sqlite'), 'w', 0o644))
        chmodSync(path.join(old, 'baton.sqlite'), 0o644)
        const reopened = await start({ BATON_DATA_DIR: old })
        try {
          assert.equal(statSync(old).mode & 0o777, 0o700)
          for (const name of readdirSync(old)) {
            assert.equal(statSync(path.join(old, name)).mode & 0o777, 0o600, name)
          }
        } finally {
          await reopened.stop()
        }
      })
    }
  })
}
