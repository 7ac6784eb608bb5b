// What reading an A2A task costs, counted in rows the store hands back (never in time): a view
// reads one folded row per artifact it shows, however many events built them, and a send's
// answer is read after its transaction, not while it holds the writer.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import {
  AliasNode,
  type KyselyPlugin,
  type OperationNode,
  type QueryId,
  SelectQueryNode,
  TableNode,
} from 'kysely'
import type { A2aService } from '../src/a2a/service.js'
import { countStatements } from '../src/store/transaction.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

/** The tables a select reads from (its `from` list), by name. */
function tablesOf(node: OperationNode): string[] {
  if (!SelectQueryNode.is(node)) return []
  return (node.from?.froms ?? []).flatMap((f) => {
    const table = AliasNode.is(f) ? f.node : f
    return TableNode.is(table) ? [table.table.identifier.name] : []
  })
}

/** Rows the store handed back per table, split by whether a write transaction read them. */
interface RowCounts {
  inTransaction: Map<string, number>
  outside: Map<string, number>
}

/** Counts the rows every select of the hub's database answers, from now on. */
function countRows(hub: TestHub): RowCounts {
  const database = hub.ctx.database
  countStatements(database)
  const marked = database.counting!.inTransaction
  const counts: RowCounts = { inTransaction: new Map(), outside: new Map() }
  const tables = new WeakMap<QueryId, string[]>()
  const plugin: KyselyPlugin = {
    transformQuery: (args) => {
      tables.set(args.queryId, tablesOf(args.node))
      return args.node
    },
    transformResult: async (args) => {
      const into = marked.has(args.queryId) ? counts.inTransaction : counts.outside
      for (const t of tables.get(args.queryId) ?? []) {
        into.set(t, (into.get(t) ?? 0) + args.result.rows.length)
      }
      return args.result
    },
  }
  database.db = database.db.withPlugin(plugin)
  return counts
}

const eventRows = (m: Map<string, number>) =>
  (m.get('a2a_events') ?? 0) + (m.get('a2a_artifacts') ?? 0)

for (const store of testStores) {
  describe(`A2A view work (${store.name})`, () => {
    let hub: TestHub
    let a2a: A2aService
    let counts: RowCounts

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      a2a = hub.ctx.a2a
      counts = countRows(hub)
    })
    after(() => hub?.close())

    /** A task whose agent appended to each of `artifacts` artifacts `sends` times. */
    async function taskWith(artifacts: number, sends: number) {
      const owner = (await signedAgent(hub)).principal
      const agent = (await signedAgent(hub)).principal
      const { task } = await a2a.send(owner, {
        tenant: agent,
        message: { messageId: 'start', role: 'ROLE_USER', parts: [{ text: 'go' }] },
        configuration: { returnImmediately: true },
      })
      for (let i = 0; i < sends; i++) {
        await a2a.send(agent, {
          message: {
            messageId: `m${i}`,
            role: 'ROLE_AGENT',
            parts: [{ text: 'more' }],
            taskId: task.id,
          },
          metadata: {
            [A2A_RELAY_EXTENSION_URI]: {
              artifacts: Array.from({ length: artifacts }, (_, k) => ({
                artifact: { artifactId: `a${k}`, parts: [{ text: `part ${i}` }] },
                append: i > 0,
              })),
            },
          },
        })
      }
      return { id: task.id, agent }
    }

    /** The event and artifact rows one read hands back. */
    async function rowsOf(read: () => Promise<unknown>): Promise<number> {
      counts.outside.clear()
      counts.inTransaction.clear()
      await read()
      return eventRows(counts.outside) + eventRows(counts.inTransaction)
    }

    test('a view reads one row per artifact it shows, however many events built them', async () => {
      const few = await taskWith(4, 2)
      const many = await taskWith(4, 40)
      const fewView = await a2a.get(few.agent, { id: few.id, historyLength: 1 })
      const manyView = await a2a.get(many.agent, { id: many.id, historyLength: 1 })
      assert.equal(fewView.artifacts.length, 4)
      assert.equal(manyView.artifacts.length, 4)
      assert.ok(manyView.artifacts.every((a) => a.parts.length === 40))
      assert.deepEqual(
        manyView.artifacts[0]!.parts.map((p) => p.text),
        Array.from({ length: 40 }, (_, i) => `part ${i}`),
      )
      const fewRows = await rowsOf(() => a2a.get(few.agent, { id: few.id, historyLength: 1 }))
      const manyRows = await rowsOf(() => a2a.get(many.agent, { id: many.id, historyLength: 1 }))
      assert.equal(manyRows, fewRows)
      // The same holds for a page of ListTasks with artifacts.
      const listed = await rowsOf(() =>
        a2a.list(many.agent, { includeArtifacts: true, historyLength: 1 }),
      )
      assert.equal(listed, manyRows)
    })

    test('a send reads no events in its transaction: its answer is read after the commit', async () => {
      const { id, agent } = await taskWith(3, 3)
      counts.outside.clear()
      counts.inTransaction.clear()
      const { task } = await a2a.send(agent, {
        message: { messageId: 'last', role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: id },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            state: 'TASK_STATE_COMPLETED',
            artifacts: [{ artifact: { artifactId: 'a0', parts: [{ text: 'end' }] }, append: true }],
          },
        },
      })
      assert.equal(counts.inTransaction.get('a2a_events') ?? 0, 0)
      assert.ok((counts.outside.get('a2a_events') ?? 0) > 0)
      assert.equal(task.status.state, 'TASK_STATE_COMPLETED')
      assert.deepEqual(
        task.artifacts[0]!.parts.map((p) => p.text),
        ['part 0', 'part 1', 'part 2', 'end'],
      )
      // A repeat is read the same way, by reference, and answers the same.
      const repeat = await a2a.send(agent, {
        message: { messageId: 'last', role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: id },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            state: 'TASK_STATE_COMPLETED',
            artifacts: [{ artifact: { artifactId: 'a0', parts: [{ text: 'end' }] }, append: true }],
          },
        },
      })
      assert.equal(repeat.repeated, true)
      assert.deepEqual(repeat.task, task)
    })

    test('a view of an earlier generation folds the artifacts changed since from their events', async () => {
      const { id, agent } = await taskWith(2, 3)
      const before = await a2a.get(agent, { id })
      // The same messageId again, after more appends and a replace: the first answer, as it was.
      await a2a.send(agent, {
        message: { messageId: 'later', role: 'ROLE_AGENT', parts: [{ text: 'x' }], taskId: id },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            artifacts: [
              { artifact: { artifactId: 'a0', parts: [{ text: 'new' }] }, append: true },
              { artifact: { artifactId: 'a1', parts: [{ text: 'whole' }] }, append: false },
              { artifact: { artifactId: 'a2', parts: [{ text: 'third' }] } },
            ],
          },
        },
      })
      const repeat = await a2a.send(agent, {
        message: { messageId: 'm2', role: 'ROLE_AGENT', parts: [{ text: 'more' }], taskId: id },
        metadata: {
          [A2A_RELAY_EXTENSION_URI]: {
            artifacts: [0, 1].map((k) => ({
              artifact: { artifactId: `a${k}`, parts: [{ text: 'part 2' }] },
              append: true,
            })),
          },
        },
      })
      assert.equal(repeat.repeated, true)
      assert.deepEqual(repeat.task.artifacts, before.artifacts)
      const now = await a2a.get(agent, { id })
      assert.deepEqual(
        now.artifacts.map((a) => a.parts.map((p) => p.text)),
        [['part 0', 'part 1', 'part 2', 'new'], ['whole'], ['third']],
      )
    })
  })
}
