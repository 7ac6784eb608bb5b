import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pino from 'pino'
import { loadConfig } from '../src/config.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { loadHubSigner } from '../src/identity/hub-key.js'
import { testStores } from './support.js'

const SECRET = 'hub-key-sealing-secret-0123456789abcdef'

const start = (env: Record<string, string>) =>
  startHub(loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', ...env }), {
    log: pino({ level: 'silent' }),
  })

const stored = async (hub: RunningHub) =>
  await hub.ctx.database.db
    .selectFrom('hub_keys')
    .select(['kid', 'private_jwk'])
    .executeTakeFirstOrThrow()

for (const store of testStores) {
  describe(`the hub key at rest (${store.name})`, () => {
    test('with BATON_HUB_KEY_SECRET the private key is sealed, and still signs for its kid', async () => {
      const db = await store.fresh()
      try {
        // Started without a secret: the key is stored as a JWK.
        let hub = await start(db.env)
        const plain = await stored(hub)
        assert.ok(JSON.parse(plain.private_jwk).d, 'stored in the clear without a secret')
        await hub.stop()

        // With a secret, the existing key is sealed in place, keeping its kid.
        hub = await start({ ...db.env, BATON_HUB_KEY_SECRET: SECRET })
        const sealed = await stored(hub)
        assert.equal(sealed.kid, plain.kid)
        assert.match(sealed.private_jwk, /^sealed:v1:[A-Za-z0-9_-]+$/)
        assert.ok(!sealed.private_jwk.includes(JSON.parse(plain.private_jwk).d))
        const signer = await loadHubSigner(hub.ctx.identity)
        assert.equal(signer.kid, plain.kid, 'the unsealed key is the one discovery publishes')
        await hub.stop()

        // Without the secret, or with another one, the hub refuses to start.
        await assert.rejects(start(db.env), /sealed/)
        await assert.rejects(
          start({ ...db.env, BATON_HUB_KEY_SECRET: `${SECRET}-other` }),
          /cannot be unsealed/,
        )
        hub = await start({ ...db.env, BATON_HUB_KEY_SECRET: SECRET })
        assert.equal((await stored(hub)).private_jwk, sealed.private_jwk)
        await hub.stop()
      } finally {
        await db.drop()
      }
    })
  })
}
