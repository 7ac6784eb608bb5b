import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { restartableHub, signedAgent, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

for (const store of testStores) {
  describe(`A2A tasks survive a restart (${store.name})`, () => {
    test('the task, its events and the first answer of a messageId are all there after a restart', async () => {
      const { start, drop } = await restartableHub(store, OPEN)
      let running = await start()
      try {
        const owner = (await signedAgent(running)).principal
        const agent = (await signedAgent(running)).principal
        const send = {
          tenant: agent,
          message: { messageId: 'r-1', role: 'ROLE_USER' as const, parts: [{ text: 'keep this' }] },
          configuration: { returnImmediately: true },
        }
        const first = await running.ctx.a2a.send(owner, send)
        const id = first.task.id
        await running.ctx.a2a.send(agent, {
          message: { messageId: 'r-2', role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: id },
          metadata: {
            [A2A_RELAY_EXTENSION_URI]: {
              state: 'TASK_STATE_COMPLETED',
              artifacts: [{ artifact: { artifactId: 'out', parts: [{ text: 'kept' }] } }],
            },
          },
        })
        await running.stop()
        running = await start()
        const a2a = running.ctx.a2a
        const task = await a2a.get(owner, { id })
        assert.equal(task.generation, 3)
        assert.equal(task.status.state, 'TASK_STATE_COMPLETED')
        assert.deepEqual(
          task.artifacts.map((a) => a.artifactId),
          ['out'],
        )
        const { events, ended } = await a2a.eventsAfter(agent, id, 1)
        assert.equal(ended, true)
        assert.deepEqual(
          events.map((e) => [e.generation, Object.keys(e.event)[0]]),
          [
            [2, 'artifactUpdate'],
            [3, 'statusUpdate'],
          ],
        )
        const again = await a2a.send(owner, send)
        assert.equal(again.repeated, true)
        assert.deepEqual(again.task, first.task)
      } finally {
        await running.stop()
        await drop()
      }
    })

    // Many instances are a PostgreSQL deployment: the bus between them is LISTEN/NOTIFY.
    test('a read waiting on one instance is answered by a change on another', {
      skip: store.name !== 'postgres' && 'many instances need PostgreSQL (LISTEN/NOTIFY)',
      // The wait is held for an hour: only the other instance's event can end it in time.
      timeout: 60_000,
    }, async () => {
      const { start, drop } = await restartableHub(store, {
        ...OPEN,
        BATON_MESSAGE_MAX_WAIT_SECONDS: '3600',
      })
      const one = await start()
      const two = await start()
      try {
        const owner = (await signedAgent(one)).principal
        const agent = (await signedAgent(two)).principal
        const { task } = await one.ctx.a2a.send(owner, {
          tenant: agent,
          message: { messageId: 'mi-1', role: 'ROLE_USER', parts: [{ text: 'across' }] },
          configuration: { returnImmediately: true },
        })
        const waiting = one.ctx.a2a.get(owner, { id: task.id, currentGeneration: 1 })
        await two.ctx.a2a.send(agent, {
          message: {
            messageId: 'mi-2',
            role: 'ROLE_AGENT',
            parts: [{ text: 'on it' }],
            taskId: task.id,
          },
          metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_WORKING' } },
        })
        const seen = await waiting
        assert.equal(seen.generation, 2)
        assert.equal(seen.status.state, 'TASK_STATE_WORKING')
      } finally {
        await one.stop()
        await two.stop()
        await drop()
      }
    })
  })
}
