import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { testStores } from '../../test/support.js'
import { type Database, openDatabase } from './database.js'
import { type BatchGroup, WriteBatcher } from './transaction.js'

for (const store of testStores) {
  describe(`group commit (${store.name})`, () => {
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

    const count = async (scope: string) =>
      (
        await database.db
          .selectFrom('quota_counters')
          .select('count')
          .where('scope', '=', scope)
          .executeTakeFirst()
      )?.count ?? 0

    const bump = (scope: string) => (tx: { db: Database['db'] }) =>
      tx.db
        .insertInto('quota_counters')
        .values({ scope, subject: 's', window_start: 0, count: 1 })
        .onConflict((oc) =>
          oc.columns(['scope', 'subject', 'window_start']).doUpdateSet((eb) => ({
            count: eb('quota_counters.count', '+', 1),
          })),
        )
        .execute()

    test('writes that arrive together commit in one batch; a failing one leaves no trace', async () => {
      const sizes: number[] = []
      const batcher = new WriteBatcher(database, 256, (n) => sizes.push(n))
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          batcher.run(async (tx) => {
            await bump('together')(tx)
            if (i % 5 === 0) throw new BatonError('invalid_request', 'refused after writing')
            return i
          }),
        ),
      )
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 16)
      assert.equal(results.filter((r) => r.status === 'rejected').length, 4)
      assert.equal(await count('together'), 16, 'the refused writes were rolled back alone')
      assert.deepEqual(sizes, [20])
    })

    test('a set-based group that fails as a whole falls back to one write at a time', async () => {
      const calls = { many: 0, one: 0 }
      const group: BatchGroup<number, number> = {
        async many(db, inputs) {
          calls.many++
          await bump('group')({ db })
          throw new Error(`set-based path failed for ${inputs.length}`)
        },
        async one(tx, n) {
          calls.one++
          if (n === 3) throw new BatonError('invalid_request', 'three is refused')
          await bump('group')(tx)
          return n * 10
        },
      }
      const batcher = new WriteBatcher(database)
      const results = await Promise.allSettled([1, 2, 3, 4].map((n) => batcher.runIn(group, n)))
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as BatonError).code)),
        [10, 20, 'invalid_request', 40],
      )
      assert.equal(calls.many, 2, 'once without a savepoint, once inside one')
      assert.equal(calls.one, 4)
      assert.equal(await count('group'), 3, 'the failed set-based write left nothing behind')
    })

    test('several batches in flight still answer every write once', async () => {
      const batcher = new WriteBatcher(database, 8, undefined, 3)
      const values = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          batcher.run(async (tx) => {
            await bump('flight')(tx)
            return i
          }),
        ),
      )
      assert.deepEqual(
        values,
        Array.from({ length: 50 }, (_, i) => i),
      )
      assert.equal(await count('flight'), 50)
      await batcher.flush()
    })
  })
}
