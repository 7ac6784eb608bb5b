// A real A2A server and client on loopback: the offer travels in Message.metadata, is verified on
// arrival, and the signed status comes back in the reply's metadata; a cancel travels in the
// Cancel Task request's metadata.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import {
  type AgentCard,
  type CancelTaskRequest,
  type Message,
  Role,
  type Task,
  TaskState,
} from '@a2a-js/sdk'
import { ClientFactory } from '@a2a-js/sdk/client'
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  type RequestContext,
  type ServerCallContext,
} from '@a2a-js/sdk/server'
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express'
import express from 'express'
import {
  A2A_EXTENSION_URI,
  fromA2ATaskState,
  HandoffAgent,
  readA2AHandoff,
  readA2AStatus,
  readA2ATaskStatus,
  type StatusOutcome,
  withA2AHandoff,
  withA2AStatus,
} from '../src/index.js'
import { agents, T0, trustOf } from './fixtures.js'

const PLANNER = 'spiffe://a.example/agent/planner'
const CODER = 'spiffe://b.example/agent/coder'
const list = await agents([PLANNER, CODER])
const trust = trustOf(list)
const now = () => T0 * 1000
const planner = new HandoffAgent({ signer: list[0]!.signer, trust, now })
const coder = new HandoffAgent({ signer: list[1]!.signer, trust, now })

const arrivals: { verified: boolean; reason?: string }[] = []
const cancels: StatusOutcome[] = []

function agentMessage(ctx: RequestContext, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId: ctx.contextId,
    taskId: '',
    role: Role.ROLE_AGENT,
    parts: [
      {
        content: { $case: 'text', value: text },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

class CoderExecutor implements AgentExecutor {
  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const handoff = readA2AHandoff(ctx.userMessage)
    // seed 003: the dialog member holds the host protocol's identifier (the A2A contextId)
    const r = await coder.receive(handoff, { dialog: ctx.userMessage.contextId })
    arrivals.push(r.kind === 'new' ? { verified: true } : { verified: false, reason: r.kind })
    if (r.kind !== 'new') {
      const answer =
        r.kind === 'rejected'
          ? r.status?.element
          : r.kind === 'retransmission'
            ? r.resend
            : undefined
      const reply =
        answer === undefined
          ? agentMessage(ctx, 'no')
          : withA2AStatus(agentMessage(ctx, 'no'), answer)
      bus.publish(AgentEvent.message(reply))
      bus.finished()
      return
    }
    const wantsTask = r.verified.claims.task === 'long-running'
    const accepted = await coder.accept(r.verified.claims)
    if (!wantsTask) {
      bus.publish(AgentEvent.message(withA2AStatus(agentMessage(ctx, 'on it'), accepted)))
      bus.finished()
      return
    }
    // a long-running hop: the status rides on the returned Task's status message
    const task: Task = {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: {
        state: TaskState.TASK_STATE_WORKING,
        message: withA2AStatus(agentMessage(ctx, 'working'), accepted),
        timestamp: new Date(now()).toISOString(),
      },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    }
    bus.publish(AgentEvent.task(task))
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date(now()).toISOString(),
        },
        metadata: undefined,
      } as never),
    )
    bus.finished()
  }
}

/** Reads the delegator's canceled status from the Cancel Task request before cancelling. */
class HandoffRequestHandler extends DefaultRequestHandler {
  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const carried = readA2AStatus(params)
    if (carried !== undefined) cancels.push(await coder.receiveStatus(carried))
    return super.cancelTask(params, context)
  }
}

let server: ReturnType<ReturnType<typeof express>['listen']>
let baseUrl = ''

before(async () => {
  const card: AgentCard = {
    name: 'coder',
    description: 'writes patches',
    supportedInterfaces: [],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [],
      extendedAgentCard: false,
    } as never,
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  } as unknown as AgentCard
  const handler = new HandoffRequestHandler(card, new InMemoryTaskStore(), new CoderExecutor())
  const app = express()
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }))
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  )
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', () => resolve())
  })
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  card.supportedInterfaces = [
    {
      url: `${baseUrl}/a2a/jsonrpc`,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion: '1.0',
    },
  ]
})

after(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

function userMessage(contextId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text', value: 'please write the patch' },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }
}

describe('A2A carrier', () => {
  test('an offer in Message.metadata is verified on arrival; accepted returns in the reply', async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl)
    const contextId = 'ctx-a2a-1'
    const { handoff, offer } = await planner.offer({
      aud: CODER,
      dialog: contextId,
      task: 'task-42',
    })
    const message = withA2AHandoff(userMessage(contextId), handoff)
    assert.ok(message.extensions.includes(A2A_EXTENSION_URI))
    const result = await client.sendMessage({
      tenant: '',
      message,
      configuration: undefined,
      metadata: undefined,
    })
    assert.deepEqual(arrivals.at(-1), { verified: true })
    const status = readA2AStatus(result)
    assert.ok(status, 'the reply carries a status')
    const outcome = await planner.receiveStatus(status)
    assert.equal(outcome.ok, true)
    assert.equal(outcome.state, 'accepted')
    assert.equal(await planner.issuedState(offer.claims.hop), 'accepted')
  })

  test('a retransmitted offer is not processed again and the reply repeats the status octets', async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl)
    const contextId = 'ctx-a2a-2'
    const { offer, handoff } = await planner.offer({ aud: CODER, dialog: contextId })
    const first = await client.sendMessage({
      tenant: '',
      message: withA2AHandoff(userMessage(contextId), handoff),
      configuration: undefined,
      metadata: undefined,
    })
    const again = await planner.retransmit(offer.claims.hop)
    assert.ok(again)
    const second = await client.sendMessage({
      tenant: '',
      message: withA2AHandoff(userMessage(contextId), again),
      configuration: undefined,
      metadata: undefined,
    })
    assert.equal(arrivals.at(-1)?.reason, 'retransmission')
    assert.equal(readA2AStatus(second)?.status, readA2AStatus(first)?.status)
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'accepted')
  })

  test('a dialog that is not the A2A context is rejected with a signed policy status', async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl)
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'some-other-dialog' })
    const result = await client.sendMessage({
      tenant: '',
      message: withA2AHandoff(userMessage('ctx-a2a-3'), handoff),
      configuration: undefined,
      metadata: undefined,
    })
    const status = readA2AStatus(result)
    assert.ok(status)
    const outcome = await planner.receiveStatus(status)
    assert.equal(outcome.state, 'rejected')
    assert.equal(await planner.issuedState(offer.claims.hop), 'rejected')
  })

  test('a status on the Task status message, and canceled on the Cancel Task request', async () => {
    const client = await new ClientFactory().createFromUrl(baseUrl)
    const contextId = 'ctx-a2a-4'
    const { handoff, offer } = await planner.offer({
      aud: CODER,
      dialog: contextId,
      task: 'long-running',
    })
    const result = await client.sendMessage({
      tenant: '',
      message: withA2AHandoff(userMessage(contextId), handoff),
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      } as never,
      metadata: undefined,
    })
    const task = result as Task
    assert.equal(typeof task.id, 'string')
    const status = readA2ATaskStatus(task)
    assert.ok(status, 'the task status message carries a status')
    assert.equal((await planner.receiveStatus(status)).state, 'accepted')
    assert.equal(fromA2ATaskState('TASK_STATE_WORKING'), 'accepted')

    const cancel = await planner.cancel(offer.claims.hop)
    await client.cancelTask(withA2AStatus({ tenant: '', id: task.id, metadata: undefined }, cancel))
    assert.equal(cancels.at(-1)?.ok, true)
    assert.equal(cancels.at(-1)?.state, 'canceled')
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'canceled')
  })
})
