import { z } from 'zod'
import { waitSeconds, wholeNumber, withCode } from '../codecs.js'
import { defineContract } from '../contract.js'
import {
  advanceInput,
  CreatedHandoffView,
  createHandoffInput,
  HandoffView,
  MoveResultView,
  StateName,
  WaitView,
} from '../handoff.js'

const tags = ['token handoffs']
const HandoffId = z.string().max(128).describe('The handoff id')
const handoffErrors = ['handoff_not_found', 'handoff_expired'] as const

/** seed 002: create a handoff; both tokens are answered only this once. */
export const createHandoff = defineContract({
  name: 'createHandoff',
  summary: 'Create a handoff; answers both tokens, shown only this once',
  tags,
  method: 'POST',
  path: '/services/v1/handoff',
  auth: 'none',
  body: (config) => createHandoffInput(config.handoff),
  output: CreatedHandoffView,
  status: 201,
  // The payload at its limit, and room for a note, a machine and a notify_url.
  bodyLimit: (config) => config.handoff.maxPayloadBytes + 48 * 1024,
  idempotencyKey: true,
  errors: ['payload_too_large', 'invalid_machine', 'invalid_notify_url'],
  tool: {
    name: 'create_agent_handoff',
    title: 'Create an agent handoff',
    description: (config) =>
      `Create a handoff holding a JSON payload (at most ${config.handoff.maxPayloadBytes} bytes as JSON) for another agent. Answers a handoff_id, an owner_token to keep and a receiver_token to pass to the other agent; both are shown only once. Optional: note, notify_url, and a custom forward-only machine (states, final, transitions).`,
    annotations: { destructiveHint: false, idempotentHint: false },
  },
})

/** seed 002: read a handoff with either token. */
export const readHandoff = defineContract({
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
})

/** seed 002: a move commits only from exactly the stated `from`. */
export const advanceHandoff = defineContract({
  name: 'advanceHandoff',
  summary: 'Move a handoff to {state}, only from exactly `from`',
  tags,
  method: 'POST',
  path: '/services/v1/handoff/:handoff_id/:state',
  auth: 'handoff-token',
  params: z.strictObject({
    handoff_id: HandoffId,
    // A name no machine can hold names no state of this one.
    state: withCode(StateName.max(64), 'unknown_state').describe('The state to enter'),
  }),
  body: (config) => advanceInput(config.handoff),
  output: MoveResultView,
  // A note at its limit, each character escaped as JSON may write it, and room for the rest.
  bodyLimit: (config) => 16 * 1024 + 6 * config.handoff.maxNoteChars,
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
})

/** seed 002: answers as soon as the handoff changes or ends, within the hub's longest wait. */
export const waitHandoff = defineContract({
  name: 'waitHandoff',
  summary:
    "Answer as soon as the handoff changes or ends, within {seconds} (clamped to the hub's longest wait)",
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
})

/** Every token-handoff contract, in the order they are documented. */
export const handoffContracts = [createHandoff, readHandoff, advanceHandoff, waitHandoff]

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

export const operatorListHandoffs = defineContract({
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
})

export const operatorReadHandoff = defineContract({
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
})

export const operatorReadHandoffPayload = defineContract({
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
})

export const operatorNotifyQueue = defineContract({
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
})

/** The operator's handoff reads. */
export const handoffDashboardContracts = [
  operatorListHandoffs,
  operatorReadHandoff,
  operatorReadHandoffPayload,
  operatorNotifyQueue,
]
