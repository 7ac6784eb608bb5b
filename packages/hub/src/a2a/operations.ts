import { A2A_EXTENSION_URI } from '@baton/context'
import { BatonError, publicKeyOfPrincipal } from '@baton/protocol'
import { z } from 'zod'
import type { AppContext } from '../app.js'
import { found } from '../ops/found.js'
import { defineOperation, type Operation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'
import {
  CancelTaskParams,
  DID_KEY,
  GetTaskParams,
  ListTasksParams,
  PushConfigInput,
  RELAY_EXTENSION_URI,
  SendMessageParams,
} from './wire.js'

const tags = ['a2a']
// A task's id is the hub's and a config's the setter's: any other id answers like a missing one.
const Id = z.string().min(1).max(256)
const TaskId = z.strictObject({ id: Id.describe('The task id') })
const TaskOfConfig = z.strictObject({ taskId: Id.describe('The task id') })
const ConfigRef = TaskOfConfig.extend({
  id: Id.describe('The push notification config id'),
})
const TaskView = z.object({
  id: z.string(),
  contextId: z.string(),
  status: z.object({ state: z.string() }),
  generation: z.number().int(),
})
const PushConfigView = z.object({ id: z.string(), taskId: z.string(), url: z.string() })
const ListQuery = ListTasksParams.omit({ tenant: true })

/** Where the JSON-RPC endpoint is; the operations below are its methods as plain routes too. */
export const A2A_RPC_PATH = '/v1/a2a'

/**
 * The hub's agent card (A2A 1.0): one JSON-RPC interface, signed requests, Baton's extensions.
 * Addressed to an agent (`tenant`), its interface carries that tenant, so a client built from it
 * as it is (A2A 1.0 AgentInterface.tenant) names the agent in every request it makes.
 */
export function agentCard(ctx: AppContext, origin: string, tenant?: string) {
  return {
    name: 'Baton hub',
    description:
      'A durable A2A task relay: a task is addressed to an admitted agent (its did:key as tenant); generation compare-and-set, idempotent sends, replayable streams and signed push notifications.',
    version: ctx.version,
    supportedInterfaces: [
      {
        url: `${origin}${A2A_RPC_PATH}`,
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        ...(tenant ? { tenant } : {}),
      },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: false,
      extensions: [
        {
          uri: RELAY_EXTENSION_URI,
          description:
            'Baton relay: the metadata of tasks and events carries generation, owner and agent; the agent of a task sets its state and artifacts in the metadata of its own SendMessage; ifGenerationMatch may ride there for A2A 1.0 clients.',
          required: false,
        },
        {
          uri: A2A_EXTENSION_URI,
          description:
            'Signed handoff context (seed 003): a Handoff object in Message.metadata is checked by the hub as a delegation witness; its view of the hop rides back in the task metadata.',
          required: false,
        },
      ],
    },
    securitySchemes: {
      httpSignature: {
        httpAuthSecurityScheme: {
          scheme: 'Signature',
          description:
            'Every request is signed as /v1 is: HTTP Message Signatures (RFC 9421) over @method, @target-uri, content-digest (RFC 9530), created and a nonce, keyid the did:key of an admitted agent.',
        },
      },
    },
    securityRequirements: [{ schemes: { httpSignature: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [
      {
        id: 'relay',
        name: 'Relay a task to an admitted agent',
        description:
          'Send a message with tenant set to the did:key of the agent (the card at /.well-known/agent-card.json?tenant=<did:key> sets it for you); the hub keeps the task durably and relays the agent’s answers back.',
        tags: ['relay', 'handoff'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  }
}

/** A2A 1.0 agent card discovery: the hub's own card, or the same card addressed to one agent. */
export const a2aAgentCard = defineOperation({
  name: 'a2aAgentCard',
  cli: ['a2a', 'card'],
  summary:
    'The hub’s A2A agent card: its JSON-RPC endpoint, the signing requirement, extensions; with tenant, addressed to that agent',
  tags,
  method: 'GET',
  path: '/.well-known/agent-card.json',
  auth: 'none',
  query: z.strictObject({
    tenant: z
      .string()
      .max(256)
      .regex(DID_KEY, 'an agent’s did:key')
      .optional()
      .describe('The did:key of the agent the card addresses; its interface then carries it'),
  }),
  output: z.looseObject({ name: z.string(), supportedInterfaces: z.array(z.unknown()) }),
  errors: ['invalid_request', 'principal_not_found'],
  tool: false,
  run: async (ctx, caller, { query }) => {
    // A did:key of the published form that holds no Ed25519 key names no agent.
    if (query.tenant !== undefined && publicKeyOfPrincipal(query.tenant) === undefined) {
      throw new BatonError('principal_not_found', 'The tenant is no Ed25519 did:key', {
        field: 'tenant',
      })
    }
    return agentCard(ctx, caller.origin ?? ctx.config.identity.publicUrl ?? '', query.tenant)
  },
})

/** A2A SendMessage: create a task for `tenant`, or continue one; idempotent by messageId. */
export const a2aSendMessage = defineOperation({
  name: 'a2aSendMessage',
  cli: ['a2a', 'send'],
  summary:
    'A2A SendMessage: create a task addressed to an admitted agent (tenant) or continue one you are a party to; a repeated messageId answers the first result',
  tags,
  method: 'POST',
  path: '/v1/a2a/messages',
  auth: 'signature',
  body: SendMessageParams,
  output: z.strictObject({ task: TaskView }),
  errors: [
    'recipient_unknown',
    'a2a_task_not_found',
    'a2a_task_ended',
    'a2a_role_mismatch',
    'a2a_context_mismatch',
    'a2a_message_too_large',
    'a2a_task_artifacts_exceeded',
    'a2a_task_events_exceeded',
    'a2a_task_too_large',
    'a2a_task_push_configs_exceeded',
    'a2a_push_configs_exceeded',
    'a2a_push_hosts_exceeded',
    'storage_quota_exceeded',
    'a2a_generation_mismatch',
    'idempotency_conflict',
    'invalid_notify_url',
    'a2a_push_auth_unsupported',
    'hop_refused',
    'hop_not_found',
    'hop_state_conflict',
  ],
  tool: false,
  longPoll: true,
  run: async (ctx, caller, { body }) => ({
    task: (await ctx.a2a.send(signer(caller), body, caller.signal, caller.ip, caller)).task,
  }),
})

/** A2A GetTask; `currentGeneration` (dev-1.1) long-polls for the next change. */
export const a2aGetTask = defineOperation({
  name: 'a2aGetTask',
  cli: ['a2a', 'get'],
  summary:
    'A2A GetTask: a task you sent or are the agent of; with currentGeneration, waits until the task moves past it',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:id',
  auth: 'signature',
  params: TaskId,
  query: GetTaskParams.pick({ historyLength: true, currentGeneration: true }),
  output: TaskView,
  errors: ['a2a_task_not_found'],
  tool: false,
  longPoll: true,
  run: (ctx, caller, { params, query }) =>
    ctx.a2a.get(signer(caller), { ...query, id: params.id }, caller.signal, caller.ip),
})

/** A2A ListTasks: the caller's tasks, most recently changed first. */
export const a2aListTasks = defineOperation({
  name: 'a2aListTasks',
  cli: ['a2a', 'list'],
  summary: 'A2A ListTasks: the tasks you sent or are the agent of, most recently changed first',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks',
  auth: 'signature',
  query: ListQuery,
  output: z.object({ tasks: z.array(TaskView), nextPageToken: z.string() }),
  errors: [],
  tool: false,
  run: (ctx, caller, { query }) => ctx.a2a.list(signer(caller), query),
})

/** A2A CancelTask. */
export const a2aCancelTask = defineOperation({
  name: 'a2aCancelTask',
  cli: ['a2a', 'cancel'],
  summary: 'A2A CancelTask: end a task you are a party to that has not ended',
  tags,
  method: 'POST',
  path: '/v1/a2a/tasks/:id/cancel',
  auth: 'signature',
  params: TaskId,
  body: CancelTaskParams.omit({ id: true }).optional(),
  output: TaskView,
  errors: ['a2a_task_not_found', 'a2a_task_not_cancelable'],
  tool: false,
  run: (ctx, caller, { params }) => ctx.a2a.cancel(signer(caller), { id: params.id }, caller),
})

/** A2A CreateTaskPushNotificationConfig, delivered through the hub's signed notify outbox. */
export const a2aSetPushConfig = defineOperation({
  name: 'a2aSetPushConfig',
  cli: ['a2a', 'push-set'],
  summary:
    'A2A CreateTaskPushNotificationConfig: a webhook for a task’s changes, posted signed by the hub (RFC 9421) with the config token in X-A2A-Notification-Token, through its durable outbox',
  tags,
  method: 'POST',
  path: '/v1/a2a/tasks/:taskId/push-configs',
  auth: 'signature',
  params: TaskOfConfig,
  body: PushConfigInput.omit({ taskId: true }),
  output: PushConfigView,
  errors: [
    'a2a_task_not_found',
    'a2a_task_ended',
    'invalid_notify_url',
    'a2a_push_auth_unsupported',
    'a2a_task_push_configs_exceeded',
    'a2a_push_configs_exceeded',
    'a2a_push_hosts_exceeded',
  ],
  tool: false,
  run: (ctx, caller, { params, body }) =>
    ctx.a2a.setPushConfig(signer(caller), { ...body, taskId: params.taskId }, caller),
})

/** A2A GetTaskPushNotificationConfig. */
export const a2aGetPushConfig = defineOperation({
  name: 'a2aGetPushConfig',
  cli: ['a2a', 'push-get'],
  summary: 'A2A GetTaskPushNotificationConfig: one push config you set on a task',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:taskId/push-configs/:id',
  auth: 'signature',
  params: ConfigRef,
  output: PushConfigView,
  errors: ['a2a_task_not_found', 'a2a_push_config_not_found'],
  tool: false,
  run: (ctx, caller, { params }) => ctx.a2a.getPushConfig(signer(caller), params),
})

/** A2A ListTaskPushNotificationConfigs. */
export const a2aListPushConfigs = defineOperation({
  name: 'a2aListPushConfigs',
  cli: ['a2a', 'push-list'],
  summary: 'A2A ListTaskPushNotificationConfigs: the push configs you set on a task',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:taskId/push-configs',
  auth: 'signature',
  params: TaskOfConfig,
  output: z.object({ configs: z.array(PushConfigView) }),
  errors: ['a2a_task_not_found'],
  tool: false,
  run: (ctx, caller, { params }) => ctx.a2a.listPushConfigs(signer(caller), params),
})

/** A2A DeleteTaskPushNotificationConfig. */
export const a2aDeletePushConfig = defineOperation({
  name: 'a2aDeletePushConfig',
  cli: ['a2a', 'push-delete'],
  summary: 'A2A DeleteTaskPushNotificationConfig: remove a push config you set on a task',
  tags,
  method: 'DELETE',
  path: '/v1/a2a/tasks/:taskId/push-configs/:id',
  auth: 'signature',
  params: ConfigRef,
  output: z.strictObject({}),
  errors: ['a2a_task_not_found', 'a2a_push_config_not_found'],
  tool: false,
  run: (ctx, caller, { params }) => ctx.a2a.deletePushConfig(signer(caller), params, caller),
})

/** Every A2A operation, in the order they are documented. */
export const a2aOperations = [
  a2aAgentCard,
  a2aSendMessage,
  a2aGetTask,
  a2aListTasks,
  a2aCancelTask,
  a2aSetPushConfig,
  a2aGetPushConfig,
  a2aListPushConfigs,
  a2aDeletePushConfig,
]

/**
 * The A2A 1.0 JSON-RPC methods served by an operation, and how a method's params become the
 * operation's input; the streaming methods are served by the JSON-RPC adapter itself.
 */
export const A2A_RPC_METHODS: Record<
  string,
  { op: Operation; input: (p: Record<string, unknown>) => Record<string, unknown> }
> = {
  SendMessage: { op: a2aSendMessage, input: (p) => ({ body: p }) },
  GetTask: {
    op: a2aGetTask,
    input: ({ id, historyLength, currentGeneration }) => ({
      params: { id },
      query: { historyLength, currentGeneration },
    }),
  },
  ListTasks: { op: a2aListTasks, input: ({ tenant: _t, ...query }) => ({ query }) },
  CancelTask: {
    op: a2aCancelTask,
    input: ({ id, tenant: _t, ...body }) => ({ params: { id }, body }),
  },
  CreateTaskPushNotificationConfig: {
    op: a2aSetPushConfig,
    input: ({ taskId, tenant: _t, ...body }) => ({ params: { taskId }, body }),
  },
  GetTaskPushNotificationConfig: {
    op: a2aGetPushConfig,
    input: ({ taskId, id }) => ({ params: { taskId, id } }),
  },
  ListTaskPushNotificationConfigs: {
    op: a2aListPushConfigs,
    input: ({ taskId }) => ({ params: { taskId } }),
  },
  DeleteTaskPushNotificationConfig: {
    op: a2aDeletePushConfig,
    input: ({ taskId, id }) => ({ params: { taskId, id } }),
  },
}

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

const OperatorA2aTask = z.looseObject({
  id: z.string(),
  contextId: z.string(),
  owner: z.string(),
  agent: z.string(),
  state: z.string(),
  generation: z.number(),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
})

export const operatorListA2aTasks = defineOperation({
  name: 'operatorListA2aTasks',
  summary:
    'Every A2A task, most recently changed first, optionally in one state such as working (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/a2a',
  auth: 'operator',
  query: z.object({
    state: z
      .string()
      .max(500)
      .optional()
      .describe('A task state: working, input-required, completed…'),
  }),
  output: z.object({ tasks: z.array(OperatorA2aTask) }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'a2a-tasks'],
  run: async (ctx, _caller, { query }) => ({ tasks: await ctx.a2a.operatorList(query) }),
})

export const operatorReadA2aTask = defineOperation({
  name: 'operatorReadA2aTask',
  summary: 'One A2A task and its events, without message or artifact contents (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/a2a/:id',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: OperatorA2aTask.extend({
    events: z.array(z.looseObject({ generation: z.number(), kind: z.string() })),
  }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'a2a-task'],
  run: async (ctx, _caller, { params }) => found(await ctx.a2a.operatorRead(params.id), 'A2A task'),
})

/** The operator's A2A reads. */
export const a2aDashboardOperations: Operation[] = [operatorListA2aTasks, operatorReadA2aTask]
