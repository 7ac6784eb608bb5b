import {
  A2A_EXTENSION_URI,
  A2A_RELAY_EXTENSION_URI,
  BatonError,
  contracts,
  publicKeyOfPrincipal,
} from '@baton/protocol'
import type { AppContext } from '../app.js'
import { found } from '../ops/found.js'
import { bind, type Operation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

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
          uri: A2A_RELAY_EXTENSION_URI,
          description:
            'Baton relay: the metadata of tasks and events carries generation, owner and agent; the agent of a task sets its state and artifacts in the metadata of its own SendMessage; ifGenerationMatch may ride there for A2A 1.0 clients.',
          required: false,
        },
        {
          uri: A2A_EXTENSION_URI,
          description:
            'Signed handoff context (seed 003): a Handoff object in A2aMessage.metadata is checked by the hub as a delegation witness; its view of the hop rides back in the task metadata.',
          required: false,
        },
      ],
    },
    securitySchemes: {
      httpSignature: {
        httpAuthSecurityScheme: {
          scheme: 'Signature',
          description:
            'Every request is signed as /v1 is: HTTP A2aMessage Signatures (RFC 9421) over @method, @target-uri, content-digest (RFC 9530), created and a nonce, keyid the did:key of an admitted agent.',
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

export const a2aAgentCard = bind(contracts.a2aAgentCard, async (ctx, caller, { query }) => {
  // A did:key of the published form that holds no Ed25519 key names no agent.
  if (query.tenant !== undefined && publicKeyOfPrincipal(query.tenant) === undefined) {
    throw new BatonError('principal_not_found', 'The tenant is no Ed25519 did:key', {
      field: 'tenant',
    })
  }
  return agentCard(ctx, caller.origin ?? ctx.config.identity.publicUrl ?? '', query.tenant)
})

export const a2aSendMessage = bind(contracts.a2aSendMessage, async (ctx, caller, { body }) => ({
  task: (await ctx.a2a.send(signer(caller), body, caller.signal, caller.ip, caller)).task,
}))

export const a2aGetTask = bind(contracts.a2aGetTask, (ctx, caller, { params, query }) =>
  ctx.a2a.get(signer(caller), { ...query, id: params.id }, caller.signal, caller.ip),
)

export const a2aListTasks = bind(contracts.a2aListTasks, (ctx, caller, { query }) =>
  ctx.a2a.list(signer(caller), query),
)

export const a2aCancelTask = bind(contracts.a2aCancelTask, (ctx, caller, { params }) =>
  ctx.a2a.cancel(signer(caller), { id: params.id }, caller),
)

export const a2aSetPushConfig = bind(contracts.a2aSetPushConfig, (ctx, caller, { params, body }) =>
  ctx.a2a.setPushConfig(signer(caller), { ...body, taskId: params.taskId }, caller),
)

export const a2aGetPushConfig = bind(contracts.a2aGetPushConfig, (ctx, caller, { params }) =>
  ctx.a2a.getPushConfig(signer(caller), params),
)

export const a2aListPushConfigs = bind(contracts.a2aListPushConfigs, (ctx, caller, { params }) =>
  ctx.a2a.listPushConfigs(signer(caller), params),
)

export const a2aDeletePushConfig = bind(contracts.a2aDeletePushConfig, (ctx, caller, { params }) =>
  ctx.a2a.deletePushConfig(signer(caller), params, caller),
)

export const operatorListA2aTasks = bind(
  contracts.operatorListA2aTasks,
  async (ctx, _caller, { query }) => ({ tasks: await ctx.a2a.operatorList(query) }),
)

export const operatorReadA2aTask = bind(
  contracts.operatorReadA2aTask,
  async (ctx, _caller, { params }) => found(await ctx.a2a.operatorRead(params.id), 'A2A task'),
)

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

/** The operator's A2A reads. */
export const a2aDashboardOperations: Operation[] = [operatorListA2aTasks, operatorReadA2aTask]
