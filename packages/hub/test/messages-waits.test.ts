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
          after: String(first.sequence + (i % 10)),
          limit: String(1 + Math.floor(i / 10)),
          wait: '20',
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
  })
}
