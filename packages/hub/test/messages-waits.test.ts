import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { MessagePageView } from '@baton/protocol'
import { countStatements } from '../src/store/transaction.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = {
  BATON_ADMISSION: 'open',
  BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
  BATON_WAIT_MAX_PER_TOPIC: '1000',
}

for (const store of testStores) {
  describe(`inbox waits share one read per change (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, OPEN)
    })
    after(() => hub.close())

    test('100 waiters on one inbox, each with its own page, are woken by one send with a bounded number of reads', async () => {
      const counts = countStatements(hub.ctx.database)
      const sender = (await signedAgent(hub)).principal
      const reader = (await signedAgent(hub)).principal
      const other = (await signedAgent(hub)).principal
      const { messages } = hub.ctx
      const send = (to: string, key: string, body: { n?: number; i?: number }) =>
        messages.send(sender, { recipient: to, body, idempotencyKey: key })
      const first = await send(reader, 'm-1', { n: 1 })
      // Sequences are global: messages to another inbox move them past every cursor below.
      for (let i = 0; i < 10; i++) await send(other, `o-${i}`, { i })

      // Cursors at and past the inbox's last message, and page sizes from 1 to 10: 100 queries,
      // every one waiting, every one before the next message's sequence.
      const waits: Promise<MessagePageView>[] = []
      for (let i = 0; i < 100; i++) {
        const query = {
          after: first.sequence + (i % 10),
          limit: 1 + Math.floor(i / 10),
          wait: 20,
        }
        waits.push(messages.list(reader, query))
      }
      while (hub.ctx.waits.waiting < 100) await new Promise((r) => setImmediate(r))

      // What one send costs with nobody waiting, measured the same way just before.
      await hub.ctx.batcher.flush()
      let start = { ...counts }
      await send(other, 'o-last', { n: 0 })
      await hub.ctx.batcher.flush()
      const sendCost = counts.statements - start.statements

      const readsBefore = hub.ctx.waits.reads
      start = { ...counts }
      const sent = await send(reader, 'm-2', { n: 2 })
      const pages = await Promise.all(waits)
      const wakeStatements = counts.statements - start.statements - sendCost

      for (const page of pages) {
        assert.deepEqual(
          page.messages.map((m) => [m.id, m.body]),
          [[sent.id, { n: 2 }]],
        )
        assert.equal(page.nextAfter, sent.sequence)
      }
      // One shared read (an admission check and the inbox) for every waiter, not one per query.
      assert.ok(
        hub.ctx.waits.reads - readsBefore <= 3,
        `reads ${hub.ctx.waits.reads - readsBefore}`,
      )
      assert.ok(wakeStatements <= 8, `statements to wake 100 waiters: ${wakeStatements}`)
    })

    test('a cursor the shared read cannot answer gets its own page at once, and a burst past one read is not cut short', async () => {
      const sender = (await signedAgent(hub)).principal
      const reader = (await signedAgent(hub)).principal
      const { messages } = hub.ctx
      const send = (key: string, n: number) =>
        messages.send(sender, { recipient: reader, body: { n }, idempotencyKey: key })
      const m1 = await send('b-1', 1)
      const m2 = await send('b-2', 2)
      // Opens the inbox's group at its end.
      const atEnd = messages.list(reader, { after: m2.sequence, limit: 100, wait: 20 })
      while (hub.ctx.waits.waiting < 1) await new Promise((r) => setImmediate(r))
      // A cursor before where the group began: its messages are not in the shared read.
      const early = await messages.list(reader, { after: m1.sequence - 1, wait: 20 })
      assert.deepEqual(
        early.messages.map((m) => m.id),
        [m1.id, m2.id],
      )
      // A cursor ahead of the group's start, whose page goes past what one shared read holds.
      const ahead = messages.list(reader, {
        after: m2.sequence + 50,
        limit: 100,
        wait: 20,
      })
      while (hub.ctx.waits.waiting < 2) await new Promise((r) => setImmediate(r))
      // More messages than one shared read holds commit at once, as another instance would
      // commit them, with one event.
      const { db } = hub.ctx.database
      const ids: string[] = []
      for (let i = 1; i <= 120; i++) {
        const id = `msg_burst${String(i).padStart(17, '0')}`
        ids.push(id)
        await db
          .insertInto('messages')
          .values({
            id,
            sequence: m2.sequence + i,
            sender,
            recipient: reader,
            body: JSON.stringify({ i }),
            body_digest: `sha-256:burst-${i}`,
            idempotency_key: `burst-${i}`,
            receipt: 'not checked here',
            created_at: Date.now(),
            acked_at: null,
          })
          .execute()
      }
      await db
        .updateTable('counters')
        .set({ value: m2.sequence + 120 })
        .where('name', '=', 'message_sequence')
        .execute()
      hub.ctx.bus.publish({
        topic: `inbox:${reader}`,
        type: 'message.created',
        at: Date.now(),
        data: {},
      })
      const page = await atEnd
      assert.deepEqual(
        page.messages.map((m) => m.id),
        ids.slice(0, 100),
      )
      assert.equal(page.nextAfter, m2.sequence + 100)
      assert.deepEqual(
        (await ahead).messages.map((m) => m.id),
        ids.slice(50),
      )
    })
  })
}
