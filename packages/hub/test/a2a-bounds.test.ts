import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open', BATON_NOTIFY_ALLOW_LOOPBACK: 'true' }

interface Rpc {
  result?: Record<string, unknown> & { id?: string; generation?: number }
  error?: { code: number; data: { code: string; limit?: number } }
}

/** One signed A2A 1.0 JSON-RPC call over HTTP. */
async function rpc(as: SignedClient, method: string, params: object): Promise<Rpc> {
  const answer = await as.request<Rpc>(
    'POST',
    '/v1/a2a',
    { jsonrpc: '2.0', id: 1, method, params },
    { 'a2a-version': '1.0' },
  )
  return answer.body
}

const codeOf = (answer: Rpc) => answer.error?.data.code

/** A webhook on loopback that counts what it is posted and answers `status`. */
async function webhook(status: number) {
  let got = 0
  const waiting: { n: number; resolve: () => void }[] = []
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      got++
      for (const w of waiting.filter((w) => got >= w.n)) w.resolve()
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  return {
    url: (host = '127.0.0.1') => `http://${host}:${port}/hook`,
    /** Resolves once `n` posts have arrived. */
    received: (n: number) =>
      got >= n ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ n, resolve })),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

const artifacts = (n: number, append: boolean, tag = '') =>
  Array.from({ length: n }, (_, i) => ({
    artifact: { artifactId: `art-${i}`, parts: [{ text: `part ${tag}${i}` }] },
    append,
  }))

for (const store of testStores) {
  describe(`A2A bounds (${store.name})`, () => {
    let hub: TestHub
    let small: TestHub

    before(async () => {
      hub = await startTestHub(store, { ...OPEN, BATON_A2A_EVENTS_PER_TASK: '20000' })
      small = await startTestHub(store, {
        ...OPEN,
        BATON_A2A_PUSH_CONFIGS_PER_TASK: '3',
        BATON_A2A_PUSH_CONFIGS_PER_PRINCIPAL: '5',
        BATON_A2A_PUSH_HOSTS_PER_PRINCIPAL: '2',
        BATON_A2A_ARTIFACTS_PER_TASK: '4',
        BATON_A2A_EVENTS_PER_TASK: '6',
        BATON_A2A_TASK_MAX_BYTES: '8192',
        BATON_QUOTA_STORED_BYTES: '20000',
        BATON_A2A_LIST_PAGE_MAX_BYTES: '4096',
      })
    })
    after(async () => {
      await hub?.close()
      await small?.close()
    })

    /** A new task from a new owner to a new agent, answered at once. */
    async function newTask(on: TestHub) {
      const owner = await signedAgent(on)
      const agent = await signedAgent(on)
      const created = await rpc(owner, 'SendMessage', {
        tenant: agent.principal,
        message: { messageId: 'm-0', role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      })
      assert.equal(created.error, undefined)
      return { owner, agent, id: (created.result!.task as { id: string }).id }
    }

    const agentSend = (
      agent: SignedClient,
      taskId: string,
      messageId: string,
      update: object,
      text = 'working',
    ) =>
      rpc(agent, 'SendMessage', {
        message: { messageId, role: 'ROLE_AGENT', parts: [{ text }], taskId },
        metadata: { [A2A_RELAY_EXTENSION_URI]: update },
      })

    test('the 2,000 push configs of one task are refused at the cap, with its code', async () => {
      const { owner, id } = await newTask(hub)
      let refused: Rpc | undefined
      let accepted = 0
      for (let i = 0; i < 2000 && !refused; i++) {
        const answer = await rpc(owner, 'CreateTaskPushNotificationConfig', {
          taskId: id,
          url: `http://127.0.0.1:9/hook-${i}`,
        })
        if (answer.error) refused = answer
        else accepted++
      }
      assert.equal(accepted, hub.config.a2a.maxPushConfigsPerTask)
      assert.equal(codeOf(refused!), 'a2a_task_push_configs_exceeded')
      assert.equal(refused!.error!.data.limit, hub.config.a2a.maxPushConfigsPerTask)
      const rows = await hub.ctx.database.db
        .selectFrom('a2a_push_configs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('task_id', '=', id)
        .executeTakeFirstOrThrow()
      assert.equal(Number(rows.n), accepted)
    })

    test('push configs are capped per principal over its tasks, and by distinct hosts', async () => {
      const first = await newTask(small)
      const push = (as: SignedClient, taskId: string, url: string) =>
        rpc(as, 'CreateTaskPushNotificationConfig', { taskId, url })
      for (let i = 0; i < 3; i++) {
        assert.equal(
          (await push(first.owner, first.id, `http://127.0.0.1:9/a${i}`)).error,
          undefined,
        )
      }
      assert.equal(
        codeOf(await push(first.owner, first.id, 'http://127.0.0.1:9/a3')),
        'a2a_task_push_configs_exceeded',
      )
      // The owner's second task, from the same principal: two more, then the principal's cap.
      const second = await rpc(first.owner, 'SendMessage', {
        tenant: first.agent.principal,
        message: { messageId: 'm-second', role: 'ROLE_USER', parts: [{ text: 'more' }] },
        configuration: { returnImmediately: true },
      })
      const secondId = (second.result!.task as { id: string }).id
      for (let i = 0; i < 2; i++) {
        assert.equal(
          (await push(first.owner, secondId, `http://127.0.0.1:9/b${i}`)).error,
          undefined,
        )
      }
      assert.equal(
        codeOf(await push(first.owner, secondId, 'http://127.0.0.1:9/b2')),
        'a2a_push_configs_exceeded',
      )
      // Distinct hosts: a principal's configs may name two.
      const third = await newTask(small)
      assert.equal((await push(third.owner, third.id, 'http://127.0.0.1:9/h')).error, undefined)
      assert.equal((await push(third.owner, third.id, 'http://127.0.0.2:9/h')).error, undefined)
      assert.equal(
        codeOf(await push(third.owner, third.id, 'http://127.0.0.3:9/h')),
        'a2a_push_hosts_exceeded',
      )
    })

    test('a task is capped in artifacts, events and bytes, before anything is written', async () => {
      const { agent, id } = await newTask(small)
      const generation = async () =>
        (await small.ctx.a2a.get(agent.principal, { id })).generation as number
      assert.equal(
        codeOf(await agentSend(agent, id, 'a-5', { artifacts: artifacts(5, false) })),
        'a2a_task_artifacts_exceeded',
      )
      assert.equal(await generation(), 1)
      assert.equal(
        (await agentSend(agent, id, 'a-4', { artifacts: artifacts(4, false) })).error,
        undefined,
      )
      assert.equal(await generation(), 6)
      assert.equal(codeOf(await agentSend(agent, id, 'a-more', {})), 'a2a_task_events_exceeded')
      assert.equal(await generation(), 6)
      const big = await newTask(small)
      assert.equal(
        codeOf(await agentSend(big.agent, big.id, 'a-big', {}, 'x'.repeat(9000))),
        'a2a_task_too_large',
      )
      // A full task can still be ended.
      assert.equal((await rpc(agent, 'CancelTask', { id })).error, undefined)
    })

    test('a send fans out after its commit, one queue row, its outbox charged and bounded', async () => {
      const hook = await webhook(500)
      try {
        const { owner, agent, id } = await newTask(hub)
        const configs = hub.config.a2a.maxPushConfigsPerTask
        for (let i = 0; i < configs; i++) {
          const set = await rpc(owner, 'CreateTaskPushNotificationConfig', {
            taskId: id,
            url: `${hook.url()}?c=${i}`,
          })
          assert.equal(set.error, undefined)
        }
        const db = hub.ctx.database.db
        // Fan-out passes wait here until the send's commit has been looked at: the send's
        // transaction queues one row and writes nothing to the outbox.
        const a2a = hub.ctx.a2a
        const fanOut = a2a.fanOut
        let open!: () => void
        const gate = new Promise<void>((resolve) => {
          open = resolve
        })
        a2a.fanOut = () => gate.then(() => fanOut.call(a2a))
        let sent: Rpc
        try {
          sent = await agentSend(agent, id, 'fan', { artifacts: artifacts(64, false) })
          const outbox = await db
            .selectFrom('notify_outbox')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('handoff_id', '=', id)
            .executeTakeFirstOrThrow()
          assert.equal(Number(outbox.n), 0)
          const waiting = await db
            .selectFrom('a2a_push_queue')
            .selectAll()
            .where('task_id', '=', id)
            .execute()
          assert.equal(waiting.length, 1)
        } finally {
          a2a.fanOut = fanOut
          open()
        }
        assert.equal(sent.error, undefined)
        await a2a.drainFanOut()
        const rows = await db
          .selectFrom('notify_outbox')
          .select(['body', 'status'])
          .where('handoff_id', '=', id)
          .execute()
        assert.equal(rows.length, 65 * configs)
        const queued = await db.selectFrom('a2a_push_queue').selectAll().execute()
        assert.equal(queued.length, 0)
        // What waits in the outbox is charged to the stored bytes of the configs' owner (who
        // also keeps the task's events), none of it to the agent that sent.
        const pending = rows
          .filter((r) => r.status === 'pending')
          .reduce((n, r) => n + Buffer.byteLength(r.body), 0)
        const usage = async (principal: string) => {
          const row = await db
            .selectFrom('usage_counters')
            .select('stored_bytes')
            .where('principal', '=', principal)
            .executeTakeFirst()
          return Number(row?.stored_bytes ?? 0)
        }
        const task = await db
          .selectFrom('a2a_tasks')
          .select('stored_bytes')
          .where('id', '=', id)
          .executeTakeFirstOrThrow()
        assert.equal(await usage(owner.principal), pending + Number(task.stored_bytes))
        assert.equal(await usage(agent.principal), 0)
        assert.ok(pending > 0)
        // The webhook refuses, so at least one post per URL is tried; none is lost.
        await hook.received(configs)
      } finally {
        await hook.close()
      }
    })

    test('a fan-out past the stored-bytes quota refuses the send and stores nothing', async () => {
      // The sender's own configs: their notifications would pass the sender's quota.
      const { agent, id } = await newTask(small)
      for (let i = 0; i < 3; i++) {
        const set = await rpc(agent, 'CreateTaskPushNotificationConfig', {
          taskId: id,
          url: `http://127.0.0.1:9/q${i}`,
        })
        assert.equal(set.error, undefined)
      }
      const refused = await agentSend(agent, id, 'q', {}, 'y'.repeat(7000))
      assert.equal(codeOf(refused), 'storage_quota_exceeded')
      assert.equal((await small.ctx.a2a.get(agent.principal, { id })).generation, 1)
    })

    test('each notification is charged to its config owner; the other party never refuses a send', async () => {
      const db = small.ctx.database.db
      const usage = async (principal: string) => {
        const row = await db
          .selectFrom('usage_counters')
          .select('stored_bytes')
          .where('principal', '=', principal)
          .executeTakeFirst()
        return Number(row?.stored_bytes ?? 0)
      }
      const taskBytes = async (id: string) =>
        Number(
          (
            await db
              .selectFrom('a2a_tasks')
              .select('stored_bytes')
              .where('id', '=', id)
              .executeTakeFirstOrThrow()
          ).stored_bytes,
        )
      const outboxOf = (id: string) =>
        db
          .selectFrom('notify_outbox')
          .select(['body', 'charged_to'])
          .where('handoff_id', '=', id)
          .execute()
      // One config of each party: each pays for what its own config is sent.
      const both = await newTask(small)
      for (const [as, path] of [
        [both.owner, 'owner'],
        [both.agent, 'agent'],
      ] as const) {
        const set = await rpc(as, 'CreateTaskPushNotificationConfig', {
          taskId: both.id,
          url: `http://127.0.0.1:9/${path}`,
        })
        assert.equal(set.error, undefined)
      }
      assert.equal((await agentSend(both.agent, both.id, 'b', {}, 'fine')).error, undefined)
      await small.ctx.a2a.drainFanOut()
      const rows = await outboxOf(both.id)
      assert.equal(rows.length, 2)
      const charged = (p: string) =>
        rows.filter((r) => r.charged_to === p).reduce((n, r) => n + Buffer.byteLength(r.body), 0)
      assert.ok(charged(both.owner.principal) > 0)
      assert.equal(charged(both.agent.principal), charged(both.owner.principal))
      assert.equal(await usage(both.agent.principal), charged(both.agent.principal))
      assert.equal(
        await usage(both.owner.principal),
        charged(both.owner.principal) + (await taskBytes(both.id)),
      )
      // The owner's configs would pass the owner's quota: the agent's send is taken, and the
      // owner's configs are left out of its fan-out, charged nothing.
      const other = await newTask(small)
      for (let i = 0; i < 3; i++) {
        await rpc(other.owner, 'CreateTaskPushNotificationConfig', {
          taskId: other.id,
          url: `http://127.0.0.1:9/o${i}`,
        })
      }
      const taken = await agentSend(other.agent, other.id, 'o', {}, 'y'.repeat(7000))
      assert.equal(taken.error, undefined)
      await small.ctx.a2a.drainFanOut()
      assert.equal((await outboxOf(other.id)).length, 0)
      assert.equal(await usage(other.owner.principal), await taskBytes(other.id))
      assert.equal(await usage(other.agent.principal), 0)
    })

    /** Another task of the same owner to the same agent, answered at once. */
    async function anotherTask(owner: SignedClient, agent: SignedClient, messageId: string) {
      const created = await rpc(owner, 'SendMessage', {
        tenant: agent.principal,
        message: { messageId, role: 'ROLE_USER', parts: [{ text: 'again' }] },
        configuration: { returnImmediately: true },
      })
      assert.equal(created.error, undefined)
      return (created.result!.task as { id: string }).id
    }

    const storedOf = async (on: TestHub, principal: string) => {
      const row = await on.ctx.database.db
        .selectFrom('usage_counters')
        .select('stored_bytes')
        .where('principal', '=', principal)
        .executeTakeFirst()
      return Number(row?.stored_bytes ?? 0)
    }

    test("a task's events count against its owner's stored bytes, which bound them", async () => {
      const { owner, agent, id } = await newTask(small)
      const ids = [
        id,
        await anotherTask(owner, agent, 'm-1'),
        await anotherTask(owner, agent, 'm-2'),
      ]
      const sum = async () => {
        const rows = await small.ctx.database.db
          .selectFrom('a2a_tasks')
          .select('stored_bytes')
          .where('owner', '=', owner.principal)
          .execute()
        return rows.reduce((n, r) => n + Number(r.stored_bytes), 0)
      }
      assert.equal(await storedOf(small, owner.principal), await sum())
      for (const [i, taskId] of ids.slice(0, 2).entries()) {
        assert.equal(
          (await agentSend(agent, taskId, `fill-${i}`, {}, 'f'.repeat(7000))).error,
          undefined,
        )
      }
      assert.equal(await storedOf(small, owner.principal), await sum())
      assert.equal(await storedOf(small, agent.principal), 0)
      // The third fill would pass the owner's quota of 20000 bytes: refused, nothing written.
      const refused = await agentSend(agent, ids[2]!, 'fill-2', {}, 'f'.repeat(7000))
      assert.equal(codeOf(refused), 'storage_quota_exceeded')
      assert.equal((await small.ctx.a2a.get(agent.principal, { id: ids[2]! })).generation, 1)
      assert.equal(await storedOf(small, owner.principal), await sum())
      // Ending a task is never refused by it.
      assert.equal((await rpc(owner, 'CancelTask', { id: ids[2]! })).error, undefined)
    })

    test('a ListTasks page stops at its byte budget and goes on with a page token', async () => {
      const { owner, agent, id } = await newTask(small)
      const ids = [
        id,
        await anotherTask(owner, agent, 'l-1'),
        await anotherTask(owner, agent, 'l-2'),
      ]
      for (const [i, taskId] of ids.entries()) {
        assert.equal(
          (await agentSend(agent, taskId, `l${i}`, {}, 'l'.repeat(3000))).error,
          undefined,
        )
      }
      const seen: string[] = []
      let pageToken: string | undefined
      let pages = 0
      do {
        const page = await rpc(owner, 'ListTasks', {
          includeArtifacts: true,
          ...(pageToken ? { pageToken } : {}),
        })
        assert.equal(page.error, undefined)
        const tasks = page.result!.tasks as { id: string }[]
        // Each task holds over 3000 bytes and the budget is 4096: one task a page.
        assert.equal(tasks.length, 1)
        seen.push(...tasks.map((t) => t.id))
        pageToken = page.result!.nextPageToken as string
        pages++
      } while (pageToken && pages < 10)
      assert.deepEqual(seen.sort(), [...ids].sort())
      // A page that shows no history and no artifacts is not held to it.
      const bare = await rpc(owner, 'ListTasks', { historyLength: 0 })
      assert.equal((bare.result!.tasks as unknown[]).length, 3)
    })

    test('push configs of an ended task stop counting against its owner, and none is added', async () => {
      const { owner, agent, id } = await newTask(small)
      const second = await anotherTask(owner, agent, 'p-1')
      const push = (taskId: string, url: string) =>
        rpc(owner, 'CreateTaskPushNotificationConfig', { taskId, url })
      for (let i = 0; i < 3; i++)
        assert.equal((await push(id, `http://127.0.0.1:9/e${i}`)).error, undefined)
      for (let i = 0; i < 2; i++)
        assert.equal((await push(second, `http://127.0.0.1:9/s${i}`)).error, undefined)
      const third = await anotherTask(owner, agent, 'p-2')
      assert.equal(codeOf(await push(third, 'http://127.0.0.1:9/t0')), 'a2a_push_configs_exceeded')
      assert.equal((await rpc(owner, 'CancelTask', { id })).error, undefined)
      // The ended task's three no longer count: three more fit on the others.
      assert.equal((await push(second, 'http://127.0.0.1:9/s2')).error, undefined)
      assert.equal((await push(third, 'http://127.0.0.1:9/t0')).error, undefined)
      assert.equal((await push(third, 'http://127.0.0.1:9/t1')).error, undefined)
      assert.equal(codeOf(await push(third, 'http://127.0.0.1:9/t2')), 'a2a_push_configs_exceeded')
      assert.equal(codeOf(await push(id, 'http://127.0.0.1:9/e3')), 'a2a_task_ended')
      // Deleting a config of the ended task frees nothing it no longer held.
      const [config] = (await rpc(owner, 'ListTaskPushNotificationConfigs', { taskId: id })).result!
        .configs as {
        id: string
      }[]
      assert.equal(
        (await rpc(owner, 'DeleteTaskPushNotificationConfig', { taskId: id, id: config!.id }))
          .error,
        undefined,
      )
      assert.equal(codeOf(await push(third, 'http://127.0.0.1:9/t2')), 'a2a_push_configs_exceeded')
      const usage = await small.ctx.database.db
        .selectFrom('a2a_push_usage')
        .select('configs')
        .where('owner', '=', owner.principal)
        .executeTakeFirstOrThrow()
      assert.equal(Number(usage.configs), 5)
    })

    test('150 artifact-heavy sends keep their answers by reference, not as copies', async () => {
      const { agent, id } = await newTask(hub)
      const answers: Rpc[] = []
      for (let i = 0; i < 150; i++) {
        const update = { artifacts: artifacts(64, i > 0, `s${i}-`) }
        const answer = await agentSend(agent, id, `heavy-${i}`, update)
        assert.equal(answer.error, undefined)
        if (i === 3) answers.push(answer)
      }
      const db = hub.ctx.database.db
      const sends = await db
        .selectFrom('a2a_sends')
        .select(['answer', 'generation'])
        .where('task_id', '=', id)
        .execute()
      assert.equal(sends.length, 151)
      const stored = sends.reduce((n, s) => n + Buffer.byteLength(s.answer), 0)
      assert.equal(stored, 0)
      assert.ok(sends.every((s) => s.generation !== null))
      // A repeat answers the task as its first send committed it, read again by reference.
      const repeat = await agentSend(agent, id, 'heavy-3', {
        artifacts: artifacts(64, true, 's3-'),
      })
      assert.deepEqual(repeat.result, answers[0]!.result)
      // The task view is as large as the task's events, no more.
      const task = await db
        .selectFrom('a2a_tasks')
        .select('stored_bytes')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
      const view = await rpc(agent, 'GetTask', { id })
      assert.ok(Buffer.byteLength(JSON.stringify(view.result)) < 2 * Number(task.stored_bytes))
      const folded = view.result!.artifacts as { parts: unknown[] }[]
      assert.equal(folded.length, 64)
      assert.ok(folded.every((a) => a.parts.length === 150))
    })

    test('a 900 KB message is refused with the message-size code and nothing is stored', async () => {
      const owner = await signedAgent(hub)
      const agent = await signedAgent(hub)
      const db = hub.ctx.database.db
      const count = async () => {
        const n = await db
          .selectFrom('a2a_sends')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
        return Number(n.n)
      }
      const sendsBefore = await count()
      const refused = await rpc(owner, 'SendMessage', {
        tenant: agent.principal,
        message: { messageId: 'huge', role: 'ROLE_USER', parts: [{ text: 'z'.repeat(900_000) }] },
        configuration: { returnImmediately: true },
      })
      assert.equal(codeOf(refused), 'a2a_message_too_large')
      assert.equal(refused.error!.data.limit, hub.config.messages.maxBodyBytes)
      assert.equal(await count(), sendsBefore)
      const listed = await rpc(owner, 'ListTasks', {})
      assert.equal((listed.result!.tasks as unknown[]).length, 0)
    })
  })
}
