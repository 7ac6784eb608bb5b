import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  A2A_RELAY_EXTENSION_URI,
  A2aListTasksParams,
  A2aSendMessageParams,
  BatonError,
} from '@baton/protocol'
import { type A2aService, HISTORY_CAP } from '../src/a2a/service.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

/** A user message as A2A 1.0 ProtoJSON has it. */
function userMessage(
  messageId: string,
  text: string,
): { messageId: string; role: 'ROLE_USER'; parts: { text: string }[] }
function userMessage(
  messageId: string,
  text: string,
  taskId: string,
): { messageId: string; role: 'ROLE_USER'; parts: { text: string }[]; taskId: string }
function userMessage(messageId: string, text: string, taskId?: string) {
  return { messageId, role: 'ROLE_USER' as const, parts: [{ text }], ...(taskId ? { taskId } : {}) }
}

const agentMessage = (messageId: string, text: string, taskId: string) => ({
  messageId,
  role: 'ROLE_AGENT' as const,
  parts: [{ text }],
  taskId,
})

/** Runs `fn` and answers the code of the BatonError it throws. */
async function codeOf(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn()
  } catch (error) {
    assert.ok(error instanceof BatonError, String(error))
    return error.code
  }
  assert.fail('expected a refusal')
}

for (const store of testStores) {
  describe(`A2A task service (${store.name})`, () => {
    let hub: TestHub
    let a2a: A2aService
    let owner: string
    let agent: string
    let outsider: string

    before(async () => {
      hub = await startTestHub(store, OPEN)
      a2a = hub.ctx.a2a
      owner = (await signedAgent(hub)).principal
      agent = (await signedAgent(hub)).principal
      outsider = (await signedAgent(hub)).principal
    })
    after(() => hub.close())

    const create = (messageId: string) =>
      a2a.send(owner, {
        tenant: agent,
        message: userMessage(messageId, 'plan the trip'),
        configuration: { returnImmediately: true },
      })

    test('a send creates a task at generation 1 that its two parties see and nobody else', async () => {
      const { task } = await create('m-create')
      assert.equal(task.generation, 1)
      assert.equal(task.status.state, 'TASK_STATE_SUBMITTED')
      assert.equal(task.history.length, 1)
      assert.deepEqual(task.metadata[A2A_RELAY_EXTENSION_URI], { generation: 1, owner, agent })
      assert.equal((await a2a.get(owner, { id: task.id })).id, task.id)
      assert.equal((await a2a.get(agent, { id: task.id })).id, task.id)
      // The outsider's answer for a real task is the answer for a missing one.
      assert.equal(await codeOf(() => a2a.get(outsider, { id: task.id })), 'a2a_task_not_found')
      assert.equal(
        await codeOf(() => a2a.get(outsider, { id: `${task.id}x` })),
        'a2a_task_not_found',
      )
      assert.equal(await codeOf(() => a2a.cancel(outsider, { id: task.id })), 'a2a_task_not_found')
    })

    test('a stream resumed from far back reads a page at a time and ends only after the last', async () => {
      const sender = (await signedAgent(hub)).principal
      const { task } = await a2a.send(sender, {
        tenant: agent,
        message: userMessage('m-page-0', 'a long task'),
        configuration: { returnImmediately: true },
      })
      for (let i = 1; i <= 260; i++) {
        await a2a.send(sender, {
          message: userMessage(`m-page-${i}`, `step ${i}`, task.id),
          configuration: { returnImmediately: true },
        })
      }
      await a2a.cancel(sender, { id: task.id })
      const first = await a2a.eventsAfter(sender, task.id, 0)
      assert.equal(first.events.length, 256)
      assert.equal(first.more, true)
      // The task is canceled, but a stream that stopped here would lose the events after the page.
      assert.equal(first.ended, false)
      const rest = await a2a.eventsAfter(sender, task.id, first.events.at(-1)!.generation)
      assert.equal(rest.more, false)
      assert.equal(rest.ended, true)
      const all = [...first.events, ...rest.events].map((e) => e.generation)
      assert.deepEqual(
        all,
        Array.from({ length: all.length }, (_, i) => i + 1),
      )
      assert.equal(all.at(-1), (await a2a.get(sender, { id: task.id })).generation)
    })

    test('history honours historyLength, and is capped when it is absent or larger', async () => {
      const sender = (await signedAgent(hub)).principal
      const { task } = await a2a.send(sender, {
        tenant: agent,
        message: userMessage('m-hist-0', 'a chatty task'),
        configuration: { returnImmediately: true },
      })
      const total = HISTORY_CAP + 5
      for (let i = 1; i < total; i++) {
        await a2a.send(agent, { message: agentMessage(`m-hist-${i}`, `reply ${i}`, task.id) })
      }
      const ids = (t: { history: { messageId: string }[] }) => t.history.map((m) => m.messageId)
      const newest = (n: number) => Array.from({ length: n }, (_, i) => `m-hist-${total - n + i}`)
      assert.deepEqual(ids(await a2a.get(sender, { id: task.id })), newest(HISTORY_CAP))
      assert.deepEqual(
        ids(await a2a.get(sender, { id: task.id, historyLength: total })),
        newest(HISTORY_CAP),
      )
      assert.deepEqual(ids(await a2a.get(sender, { id: task.id, historyLength: 3 })), newest(3))
      assert.deepEqual(ids(await a2a.get(sender, { id: task.id, historyLength: 0 })), [])
      const listed = await a2a.list(sender, {})
      assert.deepEqual(ids(listed.tasks[0]!), newest(HISTORY_CAP))
      const short = await a2a.list(sender, { historyLength: 1 })
      assert.deepEqual(ids(short.tasks[0]!), newest(1))
      // the task's generation counts every event, whatever its history shows
      assert.equal(listed.tasks[0]!.generation, total)
    })

    test('a task is addressed to an admitted principal only', async () => {
      const code = await codeOf(() =>
        a2a.send(owner, {
          tenant: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
          message: userMessage('m-nobody', 'hello'),
        }),
      )
      assert.equal(code, 'recipient_unknown')
      // A send that names no task and no agent is refused by the contract, before the service.
      const none = A2aSendMessageParams.safeParse({ message: userMessage('m-none', 'hello') })
      assert.equal(none.success, false)
    })

    test('the agent answers through the same send: status, artifact, generation per event', async () => {
      const { task } = await create('m-work')
      const working = await a2a.send(agent, {
        message: agentMessage('a-1', 'on it', task.id),
        metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_WORKING' } },
      })
      assert.equal(working.task.generation, 2)
      assert.equal(working.task.status.state, 'TASK_STATE_WORKING')
      const done = await a2a.send(agent, {
        message: agentMessage('a-2', 'done', task.id),
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            state: 'TASK_STATE_COMPLETED',
            artifacts: [{ artifact: { artifactId: 'plan', parts: [{ text: 'day 1' }] } }],
          },
        },
      })
      // One artifact event and one status event: two generations.
      assert.equal(done.task.generation, 4)
      assert.equal(done.task.status.state, 'TASK_STATE_COMPLETED')
      assert.equal(done.task.artifacts[0]?.artifactId, 'plan')
      assert.deepEqual(
        done.task.history.map((m) => m.messageId),
        ['m-work', 'a-1', 'a-2'],
      )
      const { events } = await a2a.eventsAfter(owner, task.id, 0)
      assert.deepEqual(
        events.map((e) => e.generation),
        [1, 2, 3, 4],
      )
      // A terminal task takes no more messages and cannot be canceled.
      assert.equal(
        await codeOf(() => a2a.send(owner, { message: userMessage('m-late', 'more', task.id) })),
        'a2a_task_ended',
      )
      assert.equal(
        await codeOf(() => a2a.cancel(owner, { id: task.id })),
        'a2a_task_not_cancelable',
      )
    })

    test('only the agent sets state; each party sends its own role', async () => {
      const { task } = await create('m-roles')
      const ownerSetsState = await codeOf(() =>
        a2a.send(owner, {
          message: userMessage('m-roles-2', 'done?', task.id),
          metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_COMPLETED' } },
        }),
      )
      assert.equal(ownerSetsState, 'a2a_role_mismatch')
      const agentAsUser = await codeOf(() =>
        a2a.send(agent, { message: userMessage('a-roles', 'hi', task.id) }),
      )
      assert.equal(agentAsUser, 'a2a_role_mismatch')
      assert.equal((await a2a.get(owner, { id: task.id })).generation, 1)
    })

    test('a stale ifGenerationMatch is refused with the current generation and changes nothing', async () => {
      const { task } = await create('m-cas')
      await a2a.send(owner, {
        message: userMessage('m-cas-2', 'first', task.id),
        configuration: { ifGenerationMatch: 1, returnImmediately: true },
      })
      let refusal: BatonError | undefined
      try {
        // ProtoJSON writes an int64 as its decimal text: the wire schema reads it as a number.
        const params = A2aSendMessageParams.parse({
          message: userMessage('m-cas-3', 'second', task.id),
          configuration: { ifGenerationMatch: '1', returnImmediately: true },
        })
        await a2a.send(owner, params)
      } catch (error) {
        refusal = error as BatonError
      }
      assert.equal(refusal?.code, 'a2a_generation_mismatch')
      assert.equal(refusal?.status, 409)
      assert.equal(refusal?.context.currentGeneration, 2)
      assert.equal((await a2a.get(owner, { id: task.id })).generation, 2)
    })

    test('eight racing writers on one generation: exactly one wins', async () => {
      const { task } = await create('m-race')
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          a2a.send(owner, {
            message: userMessage(`m-race-${i}`, `try ${i}`, task.id),
            configuration: { ifGenerationMatch: 1, returnImmediately: true },
          }),
        ),
      )
      const won = outcomes.filter((o) => o.status === 'fulfilled')
      const lost = outcomes.filter((o) => o.status === 'rejected')
      assert.equal(won.length, 1)
      for (const o of lost) {
        assert.equal((o as PromiseRejectedResult).reason.code, 'a2a_generation_mismatch')
      }
      assert.equal((await a2a.get(owner, { id: task.id })).generation, 2)
    })

    test('a repeated messageId answers the first result; another body is a conflict', async () => {
      const first = await create('m-once')
      const again = await create('m-once')
      assert.equal(again.repeated, true)
      assert.deepEqual(again.task, first.task)
      const listed = await a2a.list(owner, {})
      assert.equal(listed.tasks.filter((t) => t.id === first.task.id).length, 1)
      const code = await codeOf(() =>
        a2a.send(owner, { tenant: agent, message: userMessage('m-once', 'another body') }),
      )
      assert.equal(code, 'idempotency_conflict')
      // The same messageId from another principal is that principal's own send.
      const other = await a2a.send(outsider, {
        tenant: agent,
        message: userMessage('m-once', 'plan the trip'),
        configuration: { returnImmediately: true },
      })
      assert.notEqual(other.task.id, first.task.id)
    })

    test('a read with currentGeneration waits until the task moves past it', async () => {
      const { task } = await create('m-poll')
      const waiting = a2a.get(owner, { id: task.id, currentGeneration: 1 })
      await a2a.send(agent, {
        message: agentMessage('a-poll', 'working', task.id),
        metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_WORKING' } },
      })
      const seen = await waiting
      assert.equal(seen.generation, 2)
      assert.equal(seen.status.state, 'TASK_STATE_WORKING')
      // A generation already passed answers at once.
      assert.equal((await a2a.get(owner, { id: task.id, currentGeneration: 1 })).generation, 2)
    })

    test('a blocking send answers once the agent ends the task; a repeat answers at once', async () => {
      const message = { ...userMessage('m-block', 'wait for me'), contextId: 'ctx-block' }
      const blocking = a2a.send(owner, { tenant: agent, message })
      // The agent finds the task by its context once the send has committed it.
      let found: string | undefined
      for (let i = 0; i < 10_000 && !found; i++) {
        found = (await a2a.list(agent, { contextId: 'ctx-block' })).tasks[0]?.id
        if (!found) await new Promise((r) => setImmediate(r))
      }
      assert.ok(found)
      await a2a.send(agent, {
        message: agentMessage('a-block', 'done', found),
        metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_COMPLETED' } },
      })
      const answered = await blocking
      assert.equal(answered.task.status.state, 'TASK_STATE_COMPLETED')
      assert.equal(answered.task.generation, 2)
      // The repeat is the first send's own answer: the task as that send committed it.
      const again = await a2a.send(owner, { tenant: agent, message })
      assert.equal(again.repeated, true)
      assert.equal(again.task.generation, 1)
    })

    test('sends count against the daily message quota; a repeat and a refusal do not', async () => {
      const limited = await startTestHub(store, { ...OPEN, BATON_QUOTA_MESSAGES_PER_DAY: '2' })
      try {
        const from = (await signedAgent(limited)).principal
        const to = (await signedAgent(limited)).principal
        const send = (messageId: string, tenant = to) =>
          limited.ctx.a2a.send(from, {
            tenant,
            message: userMessage(messageId, 'count me'),
            configuration: { returnImmediately: true },
          })
        await send('q-1')
        await send('q-1')
        assert.equal(await codeOf(() => send('q-bad', `${to}x`)), 'recipient_unknown')
        await send('q-2')
        assert.equal(await codeOf(() => send('q-3')), 'rate_limited')
      } finally {
        await limited.close()
      }
    })

    test('cancel ends a task at the next generation', async () => {
      const { task } = await create('m-cancel')
      const canceled = await a2a.cancel(owner, { id: task.id })
      assert.equal(canceled.status.state, 'TASK_STATE_CANCELED')
      assert.equal(canceled.generation, 2)
    })

    test('list pages through the caller’s tasks and filters by state', async () => {
      const mine = await a2a.list(agent, { pageSize: 2 })
      assert.equal(mine.tasks.length, 2)
      assert.ok(mine.nextPageToken)
      const next = A2aListTasksParams.parse({ pageSize: 100, pageToken: mine.nextPageToken })
      const rest = await a2a.list(agent, next)
      const ids = new Set([...mine.tasks, ...rest.tasks].map((t) => t.id))
      assert.equal(ids.size, mine.totalSize)
      const outsiders = await a2a.list(outsider, {})
      assert.ok(outsiders.tasks.every((t) => t.metadata[A2A_RELAY_EXTENSION_URI] !== undefined))
      const canceled = await a2a.list(owner, { status: 'TASK_STATE_CANCELED' })
      assert.ok(canceled.tasks.length >= 1)
      assert.ok(canceled.tasks.every((t) => t.status.state === 'TASK_STATE_CANCELED'))
      assert.equal(A2aListTasksParams.safeParse({ pageToken: 'nonsense' }).success, false)
    })

    test('push configs belong to the principal that set it; notify_url rules apply', async () => {
      const { task } = await create('m-push')
      const bad = await codeOf(() =>
        a2a.setPushConfig(owner, { taskId: task.id, url: 'http://169.254.169.254/latest' }),
      )
      assert.equal(bad, 'invalid_notify_url')
      const set = await a2a.setPushConfig(owner, {
        taskId: task.id,
        id: 'c1',
        url: 'https://93.184.215.14/a2a',
        token: 'tok',
      })
      assert.deepEqual(set, {
        id: 'c1',
        taskId: task.id,
        url: 'https://93.184.215.14/a2a',
        token: 'tok',
      })
      assert.deepEqual((await a2a.listPushConfigs(owner, { taskId: task.id })).configs, [set])
      assert.deepEqual((await a2a.listPushConfigs(agent, { taskId: task.id })).configs, [])
      assert.equal(
        await codeOf(() => a2a.getPushConfig(agent, { taskId: task.id, id: 'c1' })),
        'a2a_push_config_not_found',
      )
      assert.equal(
        await codeOf(() => a2a.setPushConfig(outsider, { taskId: task.id, url: set.url })),
        'a2a_task_not_found',
      )
      await a2a.deletePushConfig(owner, { taskId: task.id, id: 'c1' })
      assert.equal(
        await codeOf(() => a2a.deletePushConfig(owner, { taskId: task.id, id: 'c1' })),
        'a2a_push_config_not_found',
      )
    })
  })
}
