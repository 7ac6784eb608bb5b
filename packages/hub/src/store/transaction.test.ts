import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { testStores } from '../../test/support.js'
import { type Database, openDatabase } from './database.js'
import {
  type BatchGroup,
  Carry,
  type CarryGroup,
  countStatements,
  WriteBatcher,
} from './transaction.js'

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

    test('a set-based group that fails as a whole is run again input by input', async () => {
      const calls: number[][] = []
      const group: BatchGroup<number, number> = {
        async many(db, inputs) {
          calls.push(inputs)
          for (const _ of inputs) await bump('group')({ db })
          if (inputs.includes(3)) throw new BatonError('invalid_request', 'three is refused')
          return inputs.map((n) => ({ ok: true, value: n * 10 }))
        },
      }
      const batcher = new WriteBatcher(database)
      const results = await Promise.allSettled([1, 2, 3, 4].map((n) => batcher.runIn(group, n)))
      assert.deepEqual(
        results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as BatonError).code)),
        [10, 20, 'invalid_request', 40],
      )
      assert.deepEqual(calls, [[1, 2, 3, 4], [1], [2], [3], [4]], 'once set-based, then one by one')
      assert.equal(await count('group'), 3, 'the failed set-based writes left nothing behind')
    })

    /** A carried write that counts its inputs under `carried` and refuses the odd ones. */
    const carrying = (log: number[][]): CarryGroup<number, number> => ({
      async many(db, inputs) {
        log.push(inputs)
        for (const _ of inputs) await bump('carried')({ db })
        return inputs.map((n) => ({ ok: true, value: n }))
      },
      refusal: (n) => (n % 2 === 1 ? new BatonError('rate_limited', 'odd') : undefined),
    })

    test('a carried write commits in the transaction of the first write its request queues', async () => {
      const counts = countStatements(database)
      const batcher = new WriteBatcher(database)
      const log: number[][] = []
      const group = carrying(log)
      const before = { carried: await count('carried'), mine: await count('mine'), ...counts }
      const carries = [2, 3, 4].map((n) => new Carry(group, n))
      const answers = await Promise.allSettled(
        carries.map(async (carry) => {
          await batcher.run(bump('mine'), { carry })
          // A second write of the same request carries nothing.
          await batcher.run(bump('mine'), { carry })
        }),
      )
      assert.deepEqual(
        answers.map((a) => a.status === 'fulfilled' || (a.reason as BatonError).code),
        [true, 'rate_limited', true],
      )
      assert.deepEqual(await Promise.all(carries.map((c) => c.outcome)), [2, 3, 4])
      assert.deepEqual(log, [[2, 3, 4]], 'set-based, once')
      assert.equal(await count('carried'), before.carried + 3, 'a refused write still spent it')
      assert.equal(await count('mine'), before.mine + 4, 'the refused request wrote nothing')
      assert.equal(counts.commits - before.commits, 2, 'each request committed once per write')
      assert.equal(await batcher.commitCarry(carries[0]!), 2, 'committing a taken carry waits')
      assert.equal(await count('carried'), before.carried + 3)
    })

    test('a carried write no write took commits alone, batched with others', async () => {
      const counts = countStatements(database)
      const batcher = new WriteBatcher(database)
      const log: number[][] = []
      const group = carrying(log)
      const before = { carried: await count('carried'), ...counts }
      const values = await Promise.all([6, 8].map((n) => batcher.commitCarry(new Carry(group, n))))
      assert.deepEqual(values, [6, 8])
      assert.deepEqual(log, [[6, 8]])
      assert.equal(counts.commits - before.commits, 1)
      assert.equal(await count('carried'), before.carried + 2)
    })

    test('a second copy of this module counts into the same numbers', async () => {
      // A benchmark counts from the sources while the hub runs from its build: two copies.
      const copy = (await import(
        `${new URL('./transaction.ts', import.meta.url).href}?copy`
      )) as typeof import('./transaction.js')
      const counts = countStatements(database)
      assert.equal(copy.countStatements(database), counts)
      const before = { ...counts }
      await copy.transaction(database, bump('copied'))
      await bump('copied')(database)
      assert.equal(counts.commits - before.commits, 2, 'one transaction, one autocommit')
      assert.equal(counts.statements - before.statements, 4, 'begin, insert, commit; insert')
    })

    test('rerunOnUniqueViolation runs a write once more after a unique violation', async () => {
      const batcher = new WriteBatcher(database)
      let runs = 0
      const insert = (tx: { db: Database['db'] }) => {
        runs++
        return tx.db
          .insertInto('quota_counters')
          .values({ scope: 'unique', subject: 's', window_start: runs > 1 ? 1 : 0, count: 1 })
          .execute()
      }
      await batcher.run(insert)
      runs = 0
      await batcher.run(insert, { rerunOnUniqueViolation: true })
      assert.equal(runs, 2)
      runs = 0
      await assert.rejects(batcher.run(insert), (e) => database.caps.isUniqueViolation(e))
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
