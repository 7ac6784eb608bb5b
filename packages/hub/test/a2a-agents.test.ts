import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import {
  type AgentCard,
  SendMessageRequest,
  Task,
  TaskState,
  TaskStatusUpdateEvent,
} from '@a2a-js/sdk'
import {
  AgentCardResolver,
  type Client,
  ClientFactory,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client'
import { type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server'
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express'
import { a2aFetch, addressTo, hopSigner, type SignedClient } from '@baton/client'
import {
  A2A_EXTENSION_URI,
  signOffer,
  signStatus,
  toHandoff,
  withA2AHandoff,
  withA2AStatus,
} from '@baton/context'
import { A2A_RELAY_EXTENSION_URI } from '@baton/protocol'
import express from 'express'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

/** The official SDK client speaking to the hub as `as`, addressed to `agent` (its tenant). */
async function hubClient(hub: { url: string }, as: SignedClient, agent = ''): Promise<Client> {
  const card = await AgentCardResolver.default.resolve(hub.url)
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: a2aFetch(as.identity) })],
    clientConfig: { polling: true },
  })
  return factory.createFromAgentCard(addressTo(card, agent ?? ''))
}

const request = (json: Record<string, unknown>) => SendMessageRequest.fromJSON(json)
const textOf = (parts: { content?: { $case: string; value: unknown } }[] | undefined) =>
  parts?.[0]?.content?.$case === 'text' ? String(parts[0].content.value) : ''
const relay = (meta: { [k: string]: unknown } | undefined) =>
  meta?.[A2A_RELAY_EXTENSION_URI] as Record<string, unknown> & { handoff?: Record<string, unknown> }

const generationOf = (task: Task) => relay(task.metadata)?.generation as number

function taskOf(result: unknown): Task {
  assert.ok(result && typeof result === 'object' && 'status' in result, 'a task')
  return result as Task
}

/** A promise with its resolve, for an agent that learns of a task from another. */
function deferred<T>() {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

for (const store of testStores) {
  describe(`A2A agents through the hub (${store.name})`, () => {
    let hub: TestHub
    let planner: SignedClient
    let coder: SignedClient
    let outsider: SignedClient

    before(async () => {
      hub = await startTestHub(store, OPEN)
      planner = await signedAgent(hub)
      coder = await signedAgent(hub)
      outsider = await signedAgent(hub)
    })
    after(() => hub.close())

    test('a signed handoff context in Message.metadata is witnessed; statuses ride back', async () => {
      const toCoder = await hubClient(hub, planner, coder.principal)
      const asCoder = await hubClient(hub, coder)
      const signed = signOffer({
        signer: await hopSigner(planner.identity),
        aud: coder.principal,
        dialog: 'a2a-dialog-1',
        task: 'write-tests',
      })
      const message = withA2AHandoff(
        { messageId: 'ctx-1', role: 'ROLE_USER', parts: [{ text: 'write the tests' }] },
        toHandoff(signed),
      )
      const task = taskOf(await toCoder.sendMessage(request({ message })))
      // The hub checked the offer as the delegation witness: its view rides back on the task.
      const offered = relay(task.metadata)?.handoff as { hop: { digest: string; state: string } }
      assert.equal(offered.hop.digest, signed.digest)
      assert.equal(offered.hop.state, 'offered')
      assert.equal((await hub.ctx.hops.read(planner.principal, signed.digest)).state, 'offered')

      // The coder's reply carries its signed status under the same key; the hub witnesses it too.
      const status = signStatus({
        signer: await hopSigner(coder.identity),
        offer: signed.element,
        state: 'completed',
      })
      const reply = withA2AStatus(
        { messageId: 'ctx-2', role: 'ROLE_AGENT', parts: [{ text: 'done' }], taskId: task.id },
        status,
      )
      const done = taskOf(
        await asCoder.sendMessage(
          request({
            message: reply,
            metadata: { [A2A_RELAY_EXTENSION_URI]: { state: 'TASK_STATE_COMPLETED' } },
          }),
        ),
      )
      const answered = relay(done.metadata)?.handoff as { hop: { state: string } }
      assert.equal(answered.hop.state, 'completed')
      const seen = taskOf(await toCoder.getTask({ tenant: '', id: task.id }))
      assert.deepEqual(seen.status?.message?.metadata?.[A2A_EXTENSION_URI], {
        status: status.element,
      })
      assert.equal((await hub.ctx.hops.read(planner.principal, signed.digest)).state, 'completed')
      // the hop rides on the task however little of its history a read asks for
      const bare = taskOf(await toCoder.getTask({ tenant: '', id: task.id, historyLength: 0 }))
      assert.equal(bare.history.length, 0)
      const kept = relay(bare.metadata)?.handoff as { hop: { state: string } } | undefined
      assert.equal(kept?.hop.state, 'completed')
    })

    test('a refused offer changes nothing', async () => {
      const toCoder = await hubClient(hub, planner, coder.principal)
      // Signed for the outsider, sent to the coder: the wrong audience.
      const signed = signOffer({
        signer: await hopSigner(planner.identity),
        aud: outsider.principal,
        dialog: 'a2a-dialog-2',
      })
      const message = withA2AHandoff(
        { messageId: 'ctx-bad', role: 'ROLE_USER', parts: [{ text: 'misaddressed' }] },
        toHandoff(signed),
      )
      const before = (await hub.ctx.a2a.list(coder.principal, {})).totalSize
      let data: Record<string, unknown> = {}
      try {
        await toCoder.sendMessage(request({ message }))
        assert.fail('the offer was accepted')
      } catch (error) {
        data = (error as { data?: Record<string, unknown> }).data ?? {}
      }
      assert.equal(data.code, 'hop_refused')
      assert.equal(data.reason, 'wrong-audience')
      assert.equal((await hub.ctx.a2a.list(coder.principal, {})).totalSize, before)
    })

    test('a reused messageId is refused before its carried offer is witnessed', async () => {
      const toCoder = await hubClient(hub, planner, coder.principal)
      await toCoder.sendMessage(
        request({
          message: { messageId: 'ctx-reused', role: 'ROLE_USER', parts: [{ text: 'first' }] },
          configuration: { returnImmediately: true },
        }),
      )
      const signed = signOffer({
        signer: await hopSigner(planner.identity),
        aud: coder.principal,
        dialog: 'a2a-dialog-reused',
      })
      const message = withA2AHandoff(
        { messageId: 'ctx-reused', role: 'ROLE_USER', parts: [{ text: 'other' }] },
        toHandoff(signed),
      )
      let data: Record<string, unknown> = {}
      try {
        await toCoder.sendMessage(request({ message, configuration: { returnImmediately: true } }))
        assert.fail('the reused messageId was accepted')
      } catch (error) {
        data = (error as { data?: Record<string, unknown> }).data ?? {}
      }
      assert.equal(data.code, 'idempotency_conflict')
      await assert.rejects(hub.ctx.hops.read(planner.principal, signed.digest), {
        code: 'hop_not_found',
      })
    })

    test('a send refused after its offer was witnessed leaves a hop a resend answers as a retransmission', async () => {
      const toCoder = await hubClient(hub, planner, coder.principal)
      const task = taskOf(
        await toCoder.sendMessage(
          request({
            message: { messageId: 'ctx-late-0', role: 'ROLE_USER', parts: [{ text: 'start' }] },
            configuration: { returnImmediately: true },
          }),
        ),
      )
      const signed = signOffer({
        signer: await hopSigner(planner.identity),
        aud: coder.principal,
        dialog: 'a2a-dialog-late',
      })
      const carrying = (messageId: string, generation: number) =>
        request({
          message: withA2AHandoff(
            { messageId, role: 'ROLE_USER', parts: [{ text: 'take this' }], taskId: task.id },
            toHandoff(signed),
          ),
          configuration: { returnImmediately: true },
          metadata: { [A2A_RELAY_EXTENSION_URI]: { ifGenerationMatch: generation } },
        })
      // the offer passes the seven checks, then the send is refused: the task is at generation 1
      let data: Record<string, unknown> = {}
      try {
        await toCoder.sendMessage(carrying('ctx-late-1', 7))
        assert.fail('the stale generation was accepted')
      } catch (error) {
        data = (error as { data?: Record<string, unknown> }).data ?? {}
      }
      assert.equal(data.code, 'a2a_generation_mismatch')
      assert.equal((await hub.ctx.hops.read(planner.principal, signed.digest)).state, 'offered')
      // resent as it should have been: the hop is answered as a retransmission, not refused
      const sent = taskOf(await toCoder.sendMessage(carrying('ctx-late-2', 1)))
      assert.equal(generationOf(sent), 2)
      const witnessed = relay(sent.metadata)?.handoff as
        | { hop: { digest: string; state: string }; retransmission: boolean }
        | undefined
      assert.equal(witnessed?.hop.digest, signed.digest)
      assert.equal(witnessed?.retransmission, true)
      assert.equal((await hub.ctx.hops.read(planner.principal, signed.digest)).state, 'offered')
    })

    test('an agent built with the SDK server delegates through the hub and answers with the result', async () => {
      const viaHub = await hubClient(hub, planner, coder.principal)
      const delegated = deferred<string>()
      // The planner: an A2A server of its own, which hands the work to the coder through the hub.
      const executor: AgentExecutor = {
        async execute(ctx, bus) {
          const base = { taskId: ctx.taskId, contextId: ctx.contextId }
          bus.publish({
            kind: 'task',
            data: Task.fromJSON({
              id: ctx.taskId,
              contextId: ctx.contextId,
              status: { state: 'TASK_STATE_WORKING' },
            }),
          })
          const hubTask = taskOf(
            await viaHub.sendMessage(
              request({
                message: {
                  messageId: `delegate-${ctx.taskId}`,
                  role: 'ROLE_USER',
                  parts: [{ text: textOf(ctx.userMessage.parts) }],
                },
              }),
            ),
          )
          delegated.resolve(hubTask.id)
          // Follow the hub's task to its end; the stream ends when the coder completes it.
          for await (const _ of viaHub.resubscribeTask({ tenant: '', id: hubTask.id })) {
            // each event is a hint; the task is read once it ends
          }
          const done = taskOf(await viaHub.getTask({ tenant: '', id: hubTask.id }))
          bus.publish({
            kind: 'artifactUpdate',
            data: {
              ...base,
              artifact: done.artifacts[0],
              append: false,
              lastChunk: true,
              metadata: undefined,
            },
          })
          bus.publish({
            kind: 'statusUpdate',
            data: TaskStatusUpdateEvent.fromJSON({
              ...base,
              status: { state: 'TASK_STATE_COMPLETED' },
            }),
          })
          bus.finished()
        },
        cancelTask: async () => {},
      }
      const card = {
        name: 'planner',
        description: 'plans, and delegates the coding through the hub',
        version: '1.0.0',
        supportedInterfaces: [] as {
          url: string
          protocolBinding: string
          protocolVersion: string
        }[],
        capabilities: { streaming: false, pushNotifications: false, extensions: [] },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [],
      }
      const app = express()
      const handler = new DefaultRequestHandler(
        card as unknown as AgentCard,
        new InMemoryTaskStore(),
        executor,
      )
      app.use(
        '/a2a',
        jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
      )
      const server: Server = await new Promise((r) => {
        const s = app.listen(0, '127.0.0.1', () => r(s))
      })
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a`
        card.supportedInterfaces.push({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' })
        // The coder: a hub participant that answers the task addressed to it.
        const coding = (async () => {
          const asCoder = await hubClient(hub, coder)
          const id = await delegated.promise
          const task = taskOf(await asCoder.getTask({ tenant: '', id }))
          const asked = textOf(task.history[0]?.parts)
          await asCoder.sendMessage(
            request({
              message: {
                messageId: `answer-${id}`,
                role: 'ROLE_AGENT',
                parts: [{ text: 'ok' }],
                taskId: id,
              },
              metadata: {
                [A2A_RELAY_EXTENSION_URI]: {
                  state: 'TASK_STATE_COMPLETED',
                  artifacts: [
                    { artifact: { artifactId: 'code', parts: [{ text: `code for: ${asked}` }] } },
                  ],
                },
              },
            }),
          )
        })()
        // The user speaks A2A to the planner alone, and waits for the answer.
        const user = await new ClientFactory().createFromAgentCard(card as unknown as AgentCard)
        const answer = taskOf(
          await user.sendMessage(
            request({
              message: { messageId: 'user-1', role: 'ROLE_USER', parts: [{ text: 'a parser' }] },
            }),
          ),
        )
        await coding
        assert.equal(answer.status?.state, TaskState.TASK_STATE_COMPLETED)
        assert.equal(textOf(answer.artifacts[0]?.parts), 'code for: a parser')
        const hubTask = await hub.ctx.a2a.get(planner.principal, { id: await delegated.promise })
        assert.equal(hubTask.status.state, 'TASK_STATE_COMPLETED')
        assert.deepEqual(relay(hubTask.metadata as never)?.agent, coder.principal)
      } finally {
        await new Promise<void>((r) => server.close(() => r()))
      }
    })
  })
}
