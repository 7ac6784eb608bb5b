import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { testStores } from '../../test/support.js'
import { type Database, openDatabase } from '../store/database.js'
import { transaction } from '../store/transaction.js'
import { enrolPrincipal, insertNonces, readAdmission } from './store.js'

// The nonce insert and the admission read are compiled once per shape and then run as text with
// new parameters (`identityShapes`): the later runs of a shape must answer as the first one did.
for (const store of testStores) {
  describe(`identity statements compiled once per shape (${store.name})`, () => {
    let database: Database
    let drop: () => Promise<void>
    before(async () => {
      const fresh = await store.fresh()
      drop = fresh.drop
      database = await openDatabase({
        databaseUrl: fresh.env.DATABASE_URL,
        dataDir: fresh.env.BATON_DATA_DIR!,
      })
    })
    after(async () => {
      await database.close()
      await drop()
    })

    const nonces = (keyid: string, names: string[]) =>
      names.map((nonce) => ({ keyid, nonce, expires_at: 1_000 }))
    const insert = (rows: { keyid: string; nonce: string; expires_at: number }[]) =>
      transaction(database, ({ db }) => insertNonces(db, rows))

    test('each run of a batch size answers its own new nonces, a replay never', async () => {
      assert.deepEqual(
        await insert(nonces('k1', ['a', 'b', 'c'])),
        new Set(['k1\0a', 'k1\0b', 'k1\0c']),
      )
      // The same size again, with one nonce already used and one repeated inside the batch.
      assert.deepEqual(await insert(nonces('k1', ['a', 'd', 'd'])), new Set(['k1\0d']))
      assert.deepEqual(
        await insert(nonces('k2', ['a', 'b', 'c'])),
        new Set(['k2\0a', 'k2\0b', 'k2\0c']),
      )
      assert.deepEqual(await insert(nonces('k1', ['e'])), new Set(['k1\0e']))
      assert.deepEqual(await insert(nonces('k1', ['e'])), new Set())
      const stored = await database.db
        .selectFrom('signature_nonces')
        .select(['keyid', 'nonce'])
        .orderBy('keyid')
        .orderBy('nonce')
        .execute()
      assert.deepEqual(
        stored.map((r) => `${r.keyid}/${r.nonce}`),
        ['k1/a', 'k1/b', 'k1/c', 'k1/d', 'k1/e', 'k2/a', 'k2/b', 'k2/c'],
      )
    })

    test('each run of the admission read answers for its own key, nonce and window', async () => {
      const read = (keyid: string, nonce: string, windowStart: number) =>
        readAdmission(database.db, { keyid, nonce, scope: 'principal.requests', windowStart })
      await enrolPrincipal(database.db, {
        principal: 'k1',
        public_key: 'x',
        state: 'approved',
        enrolled_at: 5,
        decided_at: 6,
      })
      await database.db
        .insertInto('quota_counters')
        .values({ scope: 'principal.requests', subject: 'k1', window_start: 100, count: 7 })
        .execute()
      const first = await read('k1', 'a', 100)
      assert.equal(first.replayed, true)
      assert.equal(first.requests, 7)
      assert.equal(first.principal?.state, 'approved')
      const second = await read('k1', 'zz', 200)
      assert.equal(second.replayed, false)
      assert.equal(second.requests, 0)
      assert.equal(second.principal?.principal, 'k1')
      const third = await read('k2', 'a', 100)
      assert.equal(third.replayed, true)
      assert.equal(third.requests, 0)
      assert.equal(third.principal, undefined)
    })
  })
}
