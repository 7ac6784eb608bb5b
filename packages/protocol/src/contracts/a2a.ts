import { z } from 'zod'
import {
  A2aCancelTaskParams,
  A2aGetTaskParams,
  A2aListTasksParams,
  A2aPushConfigInput,
  A2aSendMessageParams,
} from '../a2a.js'
import { defineContract } from '../contract.js'
import { DID_KEY_PATTERN } from '../did-key.js'

const tags = ['a2a']
// A task's id is the hub's and a config's the setter's: any other id answers like a missing one.
const Id = z.string().min(1).max(256)
const TaskId = z.strictObject({ id: Id.describe('The task id') })
const TaskOfConfig = z.strictObject({ taskId: Id.describe('The task id') })
const ConfigRef = TaskOfConfig.extend({
  id: Id.describe('The push notification config id'),
})
const TaskAnswer = z.object({
  id: z.string(),
  contextId: z.string(),
  status: z.object({ state: z.string() }),
  generation: z.number().int(),
})
const PushConfigAnswer = z.object({ id: z.string(), taskId: z.string(), url: z.string() })
const ListQuery = A2aListTasksParams.omit({ tenant: true })

/** A2A 1.0 agent card discovery: the hub's own card, or the same card addressed to one agent. */
export const a2aAgentCard = defineContract({
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
      .regex(DID_KEY_PATTERN, 'an agent’s did:key')
      .optional()
      .describe('The did:key of the agent the card addresses; its interface then carries it'),
  }),
  output: z.looseObject({ name: z.string(), supportedInterfaces: z.array(z.unknown()) }),
  errors: ['invalid_request', 'principal_not_found'],
  tool: false,
})

/** A2A SendMessage: create a task for `tenant`, or continue one; idempotent by messageId. */
export const a2aSendMessage = defineContract({
  name: 'a2aSendMessage',
  cli: ['a2a', 'send'],
  summary:
    'A2A SendMessage: create a task addressed to an admitted agent (tenant) or continue one you are a party to; a repeated messageId answers the first result',
  tags,
  method: 'POST',
  path: '/v1/a2a/messages',
  auth: 'signature',
  body: A2aSendMessageParams,
  output: z.strictObject({ task: TaskAnswer }),
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
    'budget_invalid',
    'budget_insufficient',
    'budget_unit_mismatch',
    'budget_closed',
    'budget_expired',
    'budget_limit_reached',
  ],
  tool: false,
  longPoll: true,
})

/** A2A GetTask; `currentGeneration` (dev-1.1) long-polls for the next change. */
export const a2aGetTask = defineContract({
  name: 'a2aGetTask',
  cli: ['a2a', 'get'],
  summary:
    'A2A GetTask: a task you sent or are the agent of; with currentGeneration, waits until the task moves past it',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:id',
  auth: 'signature',
  params: TaskId,
  query: A2aGetTaskParams.pick({ historyLength: true, currentGeneration: true }),
  output: TaskAnswer,
  errors: ['a2a_task_not_found'],
  tool: false,
  longPoll: true,
})

/** A2A ListTasks: the caller's tasks, most recently changed first. */
export const a2aListTasks = defineContract({
  name: 'a2aListTasks',
  cli: ['a2a', 'list'],
  summary: 'A2A ListTasks: the tasks you sent or are the agent of, most recently changed first',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks',
  auth: 'signature',
  query: ListQuery,
  output: z.object({ tasks: z.array(TaskAnswer), nextPageToken: z.string() }),
  errors: [],
  tool: false,
})

/** A2A CancelTask. */
export const a2aCancelTask = defineContract({
  name: 'a2aCancelTask',
  cli: ['a2a', 'cancel'],
  summary: 'A2A CancelTask: end a task you are a party to that has not ended',
  tags,
  method: 'POST',
  path: '/v1/a2a/tasks/:id/cancel',
  auth: 'signature',
  params: TaskId,
  body: A2aCancelTaskParams.omit({ id: true }).optional(),
  output: TaskAnswer,
  errors: ['a2a_task_not_found', 'a2a_task_not_cancelable'],
  tool: false,
})

/** A2A CreateTaskPushNotificationConfig, delivered through the hub's signed notify outbox. */
export const a2aSetPushConfig = defineContract({
  name: 'a2aSetPushConfig',
  cli: ['a2a', 'push-set'],
  summary:
    'A2A CreateTaskPushNotificationConfig: a webhook for a task’s changes, posted signed by the hub (RFC 9421) with the config token in X-A2A-Notification-Token, through its durable outbox',
  tags,
  method: 'POST',
  path: '/v1/a2a/tasks/:taskId/push-configs',
  auth: 'signature',
  params: TaskOfConfig,
  body: A2aPushConfigInput.omit({ taskId: true }),
  output: PushConfigAnswer,
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
})

/** A2A GetTaskPushNotificationConfig. */
export const a2aGetPushConfig = defineContract({
  name: 'a2aGetPushConfig',
  cli: ['a2a', 'push-get'],
  summary: 'A2A GetTaskPushNotificationConfig: one push config you set on a task',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:taskId/push-configs/:id',
  auth: 'signature',
  params: ConfigRef,
  output: PushConfigAnswer,
  errors: ['a2a_task_not_found', 'a2a_push_config_not_found'],
  tool: false,
})

/** A2A ListTaskPushNotificationConfigs. */
export const a2aListPushConfigs = defineContract({
  name: 'a2aListPushConfigs',
  cli: ['a2a', 'push-list'],
  summary: 'A2A ListTaskPushNotificationConfigs: the push configs you set on a task',
  tags,
  method: 'GET',
  path: '/v1/a2a/tasks/:taskId/push-configs',
  auth: 'signature',
  params: TaskOfConfig,
  output: z.object({ configs: z.array(PushConfigAnswer) }),
  errors: ['a2a_task_not_found'],
  tool: false,
})

/** A2A DeleteTaskPushNotificationConfig. */
export const a2aDeletePushConfig = defineContract({
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
})

/** Every A2A operation, in the order they are documented. */
export const a2aContracts = [
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

export const operatorListA2aTasks = defineContract({
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
})

export const operatorReadA2aTask = defineContract({
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
})

/** The operator's A2A reads. */
export const a2aDashboardContracts = [operatorListA2aTasks, operatorReadA2aTask]
