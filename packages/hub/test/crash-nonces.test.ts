import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { createIdentity, type Identity, signRequest } from '@baton/client'
import { openDatabase } from '../src/store/database.js'
import { exited, serveProcess, TEST_ADDRESS_LIMITS, testStores } from './support.js'

/** Sends one signed request with a nonce the test chose, so it can look the nonce up later. */
async function send(
  hub: { url: string },
  id: Identity,
  nonce: string,
  path: string,
  body: unknown,
) {
  const bytes = Buffer.from(JSON.stringify(body))
  const method = path === '/v1/resources' ? 'POST' : 'PATCH'
  const req = signRequest({
    method,
    url: hub.url + path,
    body: bytes,
    privateKey: id.privateKey,
    keyid: id.principal,
    nonce,
  })
  const res = await fetch(req.url, { method, headers: req.headers, body: bytes })
  await res.arrayBuffer()
  return res.status
}

for (const store of testStores) {
  describe(`signed writes killed mid-load (${store.name})`, () => {
    test('no write is committed without its nonce, and no nonce of a write without the write', async () => {
      const db = await store.fresh()
      const env: Record<string, string> = {
        ...db.env,
        ...TEST_ADDRESS_LIMITS,
        BATON_ADMISSION: 'open',
      }
      try {
        const hub = await serveProcess(env)
        const gone = exited(hub.child)
        const id = createIdentity(hub.url)
        const enrolNonce = randomBytes(12).toString('base64url')
        const me = signRequest({
          method: 'GET',
          url: `${hub.url}/v1/me`,
          privateKey: id.privateKey,
          keyid: id.principal,
          nonce: enrolNonce,
        })
        assert.equal((await fetch(me.url, { headers: me.headers })).status, 200)
        const creates = new Map<string, string>()
        const refused = new Set<string>()
        const acked = new Set<string>()
        // All 300 at once; the hub is killed as the 40th write is acknowledged, the rest in flight.
        const inFlight = Array.from({ length: 300 }, async (_, i) => {
          const nonce = randomBytes(12).toString('base64url')
          try {
            if (i % 5 === 4) {
              // Refused by its route (403) before it writes: its nonce is spent alone.
              refused.add(nonce)
              await send(hub, id, nonce, '/v1/resources/not-an-id', {
                expectedVersion: 1,
                data: {},
              })
              return
            }
            const kind = `k${i}`
            creates.set(nonce, kind)
            const status = await send(hub, id, nonce, '/v1/resources', {
              namespace: 'crash',
              kind,
              data: { i },
            })
            if (status !== 201 || acked.size >= 40) return
            acked.add(kind)
            if (acked.size === 40) hub.child.kill('SIGKILL')
          } catch {
            // the connection died with the hub: not acknowledged
          }
        })
        await Promise.all(inFlight)
        hub.child.kill('SIGKILL')
        await gone
        assert.equal(acked.size, 40, 'the hub was killed mid-load')

        const database = await openDatabase({
          databaseUrl: env.DATABASE_URL,
          dataDir: env.BATON_DATA_DIR!,
        })
        try {
          const kinds = new Set(
            (
              await database.db
                .selectFrom('resources')
                .select('kind')
                .where('namespace', '=', 'crash')
                .execute()
            ).map((r) => r.kind),
          )
          const nonces = new Set(
            (
              await database.db
                .selectFrom('signature_nonces')
                .select('nonce')
                .where('keyid', '=', id.principal)
                .execute()
            ).map((r) => r.nonce),
          )
          for (const kind of acked) assert.ok(kinds.has(kind), `acknowledged ${kind} was lost`)
          let applied = 0
          for (const [nonce, kind] of creates) {
            assert.equal(nonces.has(nonce), kinds.has(kind), `${kind}: write and nonce disagree`)
            if (kinds.has(kind)) applied++
          }
          assert.equal(applied, kinds.size, 'every applied write is one the test sent')
          for (const nonce of nonces) {
            assert.ok(creates.has(nonce) || refused.has(nonce) || nonce === enrolNonce)
          }
        } finally {
          await database.close()
        }
      } finally {
        await db.drop()
      }
    })
  })
}
