import {
  advanceInput,
  CreatedHandoffView,
  createHandoffInput,
  HandoffView,
  MoveResultView,
  WaitView,
  waitSeconds,
  wholeNumber,
} from '@baton/protocol'
import { z } from 'zod'
import { found } from '../ops/found.js'
import type { CompositeTool } from '../ops/mcp.js'
import { defineOperation } from '../ops/operation.js'
import { withProgress } from '../ops/progress.js'

const tags = ['token handoffs']
const HandoffId = z.string().max(128).describe('The handoff id')
const handoffErrors = ['handoff_not_found', 'handoff_expired'] as const

/** seed 002: create a handoff; both tokens are answered only this once. */
export const createHandoff = defineOperation({
  name: 'createHandoff',
  summary: 'Create a handoff; answers both tokens, shown only this once',
  tags,
  method: 'POST',
  path: '/services/v1/handoff',
  auth: 'none',
  body: (config) => createHandoffInput(config.handoff),
  output: CreatedHandoffView,
  status: 201,
  bodyLimit: 64 * 1024,
  idempotencyKey: true,
  errors: ['payload_too_large', 'invalid_machine', 'invalid_notify_url'],
  tool: {
    name: 'create_agent_handoff',
    title: 'Create an agent handoff',
    description: (config) =>
      `Create a handoff holding a JSON payload (at most ${config.handoff.maxPayloadBytes} bytes as JSON) for another agent. Answers a handoff_id, an owner_token to keep and a receiver_token to pass to the other agent; both are shown only once. Optional: note, notify_url, and a custom forward-only machine (states, final, transitions).`,
    annotations: { destructiveHint: false, idempotentHint: false },
  },
  run: (ctx, caller, { body }) =>
    ctx.handoffs.create(body, {
      ip: caller.ip,
      idempotencyKey: caller.idempotencyKey,
      carry: caller.carry,
      trace: caller.trace,
    }),
})

/** seed 002: read a handoff with either token. */
export const readHandoff = defineOperation({
  name: 'readHandoff',
  summary: 'Read a handoff with either token',
  tags,
  method: 'GET',
  path: '/services/v1/handoff/:handoff_id',
  auth: 'handoff-token',
  params: z.strictObject({ handoff_id: HandoffId }),
  output: HandoffView,
  errors: [...handoffErrors],
  tool: false,
  run: (ctx, caller, { params }) => ctx.handoffs.read(params.handoff_id, caller.token),
})

/** seed 002: a move commits only from exactly the stated `from`. */
export const advanceHandoff = defineOperation({
  name: 'advanceHandoff',
  summary: 'Move a handoff to {state}, only from exactly `from`',
  tags,
  method: 'POST',
  path: '/services/v1/handoff/:handoff_id/:state',
  auth: 'handoff-token',
  params: z.strictObject({
    handoff_id: HandoffId,
    state: z.string().max(128).describe('The state to enter'),
  }),
  body: (config) => advanceInput(config.handoff),
  output: MoveResultView,
  bodyLimit: 16 * 1024,
  errors: [
    ...handoffErrors,
    'unknown_state',
    'state_conflict',
    'transition_not_allowed',
    'idempotency_conflict',
  ],
  tool: {
    name: 'advance_agent_handoff',
    title: 'Move an agent handoff',
    description:
      'Move a handoff to `state`, committing only if it is exactly in `from`. A conflict answers the state it is really in. Give a nonce of your own to make the move safe to repeat.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  cli: ['handoff', 'advance'],
  run: (ctx, caller, { params, body }) =>
    ctx.handoffs.advance(params.handoff_id, params.state, body, caller.token, caller),
})

/** seed 002: answers as soon as the handoff changes or ends, within the hub's longest wait. */
export const waitHandoff = defineOperation({
  name: 'waitHandoff',
  summary:
    "Answer as soon as the handoff changes or ends, within {seconds} (clamped to the hub's longest wait, 25 s by default)",
  tags,
  method: 'GET',
  path: '/services/v1/handoff/:handoff_id/wait/:seconds',
  auth: 'handoff-token',
  params: z.strictObject({
    handoff_id: HandoffId,
    seconds: waitSeconds().describe('How long to wait; larger values are clamped'),
  }),
  query: z.strictObject({
    version: wholeNumber()
      .optional()
      .describe('The version the caller has seen; a later version answers at once'),
  }),
  output: WaitView,
  errors: [...handoffErrors],
  longPoll: true,
  tool: false,
  cli: { name: ['handoff', 'wait'], defaults: { seconds: '25' } },
  run: (ctx, caller, { params, query }) =>
    withProgress(
      caller,
      Math.min(params.seconds, ctx.config.handoff.maxWaitSeconds),
      ctx.handoffs.wait(
        params.handoff_id,
        caller.token,
        params.seconds,
        query.version,
        caller.signal,
        caller.ip,
      ),
    ),
})

/** Seed 002's third tool: a read, or with `wait_seconds` a wait, in one tool. */
export const readAgentHandoffTool: CompositeTool = {
  name: 'read_agent_handoff',
  title: 'Read an agent handoff',
  description: (config) =>
    `Read a handoff: state, version, payload, machine and history. With wait_seconds (at most ${config.handoff.maxWaitSeconds}) it answers as soon as the handoff changes or ends; pass the version you have seen so a change in between is not missed.`,
  auth: 'handoff-token',
  input: (config) => ({
    handoff_id: HandoffId,
    token: z.string().describe('The owner or receiver token'),
    wait_seconds: z.number().int().min(0).max(config.handoff.maxWaitSeconds).optional(),
    version: z.number().int().min(0).optional().describe('The version you have already seen'),
  }),
  output: HandoffView.extend({ changed: z.boolean().optional() }),
  ops: [readHandoff, waitHandoff],
  annotations: { readOnlyHint: true },
  call: (invoke, args, caller) => {
    const { handoff_id, token, wait_seconds, version } = args as {
      handoff_id: string
      token: string
      wait_seconds?: number
      version?: number
    }
    if (wait_seconds === undefined && version === undefined) {
      return invoke(
        readHandoff,
        { params: { handoff_id }, query: {}, body: undefined },
        {
          ...caller,
          token,
        },
      )
    }
    return invoke(
      waitHandoff,
      {
        params: { handoff_id, seconds: wait_seconds ?? 0 },
        query: version === undefined ? {} : { version },
        body: undefined,
      },
      { ...caller, token },
    )
  },
}

/** Every token-handoff operation, in the order they are documented. */
export const handoffOperations = [createHandoff, readHandoff, advanceHandoff, waitHandoff]
/** Token-handoff tools that are not a single operation. */
export const handoffComposites = [readAgentHandoffTool]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

const OperatorHandoffView = z.looseObject({
  id: z.string(),
  state: z.string(),
  version: z.number(),
  ended: z.boolean(),
  expired: z.boolean(),
  note: z.string().nullable(),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
})

export const operatorListHandoffs = defineOperation({
  name: 'operatorListHandoffs',
  summary:
    'Token handoffs, most recently changed first, with whether each is expired (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/handoffs',
  auth: 'operator',
  query: z.object({
    state: z
      .string()
      .max(500)
      .optional()
      .describe('A state name, expired (past expiry) or open (not ended, unexpired)'),
  }),
  output: z.object({
    handoffs: z.array(OperatorHandoffView.extend({ states: z.array(z.string()) })),
  }),
  errors: [],
  tool: false,
  cli: ['dashboard', 'handoffs'],
  run: async (ctx, _caller, { query }) => ({ handoffs: await ctx.handoffs.operatorList(query) }),
})

export const operatorReadHandoff = defineOperation({
  name: 'operatorReadHandoff',
  summary:
    'One token handoff with its machine and history of moves; no tokens, no payload (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/handoffs/:id',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: OperatorHandoffView.extend({
    machine: z.unknown(),
    payloadChars: z.number(),
    history: z.array(z.looseObject({ version: z.number(), from: z.string(), to: z.string() })),
  }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'handoff'],
  run: async (ctx, _caller, { params }) =>
    found(await ctx.handoffs.operatorRead(params.id), 'handoff'),
})

export const operatorReadHandoffPayload = defineOperation({
  name: 'operatorReadHandoffPayload',
  summary: 'The payload of one token handoff, when the operator asks for it (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/handoffs/:id/payload',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: z.object({ id: z.string(), payload: z.unknown() }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'handoff-payload'],
  run: async (ctx, _caller, { params }) =>
    found(await ctx.handoffs.operatorPayload(params.id), 'handoff'),
})

export const operatorNotifyQueue = defineOperation({
  name: 'operatorNotifyQueue',
  summary:
    'The notify_url outbox: counts by status, and the oldest pending and dead signals (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/notify',
  auth: 'operator',
  output: z.looseObject({}),
  errors: [],
  tool: false,
  cli: ['dashboard', 'notify'],
  run: (ctx) => ctx.notifier.queue(),
})

/** The operator's handoff reads. */
export const handoffDashboardOperations = [
  operatorListHandoffs,
  operatorReadHandoff,
  operatorReadHandoffPayload,
  operatorNotifyQueue,
]
