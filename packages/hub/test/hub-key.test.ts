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
    test('with BATON_HUB_KEY_SECRET the private key is sealed under it, and still signs for its kid', async () => {
      const db = await store.fresh()
      const { BATON_HUB_KEY_SECRET: _, ...base } = db.env
      try {
        let hub = await start({ ...base, BATON_HUB_KEY_SECRET: SECRET })
        const sealed = await stored(hub)
        assert.match(sealed.private_jwk, /^sealed:v1:[A-Za-z0-9_-]+$/)
        const signer = await loadHubSigner(hub.ctx.identity)
        assert.equal(signer.kid, sealed.kid, 'the unsealed key is the one discovery publishes')
        const d = (signer.privateKey.export({ format: 'jwk' }) as { d: string }).d
        assert.ok(!sealed.private_jwk.includes(d))
        await hub.stop()

        // Without the secret, or with another one, the hub refuses to start.
        await assert.rejects(
          start(base),
          store.name === 'postgres' ? { code: 'hub_key_secret_required' } : /sealed/,
        )
        await assert.rejects(
          start({ ...base, BATON_HUB_KEY_SECRET: `${SECRET}-other` }),
          /cannot be unsealed/,
        )
        hub = await start({ ...base, BATON_HUB_KEY_SECRET: SECRET })
        assert.equal((await stored(hub)).private_jwk, sealed.private_jwk)
        await hub.stop()
      } finally {
        await db.drop()
      }
    })
  })
}
