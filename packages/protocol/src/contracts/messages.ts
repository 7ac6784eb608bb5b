import { z } from 'zod'
import { defineContract } from '../contract.js'
import {
  AckView,
  inboxQuery,
  MessagePageView,
  SentMessageView,
  sendMessageInput,
} from '../messages.js'

const tags = ['messages']

/** seed 000: a durable message with a hub-signed receipt; a repeat of its key answers the same. */
export const sendMessage = defineContract({
  name: 'sendMessage',
  summary:
    'Send a message to an admitted agent; answers its id, global sequence and a hub-signed receipt (the same for a repeat of the same idempotencyKey)',
  tags,
  method: 'POST',
  path: '/v1/messages',
  auth: 'signature',
  body: (config) => sendMessageInput(config.messages),
  output: SentMessageView,
  status: 201,
  errors: ['recipient_unknown', 'idempotency_conflict', 'message_too_large'],
  tool: {
    name: 'send_message',
    title: 'Send a message',
    description: (config) =>
      `Send a JSON message (at most ${config.messages.maxBodyBytes} bytes as canonical JSON) to an admitted agent (its did:key principal). Answers the message id, its global sequence and a receipt signed by the hub. Repeating the same recipient, body and idempotencyKey answers the same id and receipt; reusing the key for anything else is an error.`,
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** seed 000: the caller's own inbox after an exclusive global sequence; `wait` long-polls. */
export const listMessages = defineContract({
  name: 'listMessages',
  summary:
    'Read your own inbox after an exclusive global sequence, oldest first; `wait` long-polls for a new message',
  tags,
  method: 'GET',
  path: '/v1/messages',
  auth: 'signature',
  query: (config) => inboxQuery(config.messages),
  output: MessagePageView,
  errors: [],
  longPoll: true,
  tool: false,
})

/** seed 000: acknowledging a message of the own inbox; a repeat answers the same `ackedAt`. */
export const ackMessage = defineContract({
  name: 'ackMessage',
  summary: 'Acknowledge a message of your own inbox; repeating it answers the same ackedAt',
  tags,
  method: 'POST',
  path: '/v1/messages/:id/ack',
  auth: 'signature',
  params: z.strictObject({ id: z.string().max(256).describe('The message id') }),
  output: AckView,
  errors: ['message_not_found'],
  tool: {
    name: 'ack_message',
    title: 'Acknowledge a message',
    description:
      'Acknowledge a message of your own inbox once you have handled or durably queued it. Repeating it answers the same ackedAt.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
})

/** Every message operation, in the order they are documented. */
export const messageContracts = [sendMessage, listMessages, ackMessage]

// The operator's reads, which the dashboard shows: one read each, reached with the admin token
// here and with the dashboard's session on its own pages.

export const operatorListMessages = defineContract({
  name: 'operatorListMessages',
  summary:
    'Without principal, the counts and sequence of each recipient; with it, the messages to or from it, metadata only (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/messages',
  auth: 'operator',
  query: z.object({
    principal: z.string().max(500).optional().describe('A did:key: the messages to or from it'),
  }),
  output: z.union([
    z.object({
      principal: z.string(),
      messages: z.array(
        z.looseObject({ id: z.string(), sequence: z.number(), direction: z.string() }),
      ),
    }),
    z.object({
      principals: z.array(
        z.looseObject({ principal: z.string(), total: z.number(), unacked: z.number() }),
      ),
    }),
  ]),
  errors: [],
  tool: false,
  cli: ['dashboard', 'messages'],
})

export const operatorReadMessageBody = defineContract({
  name: 'operatorReadMessageBody',
  summary: 'The body of one message, when the operator asks for it (operator only)',
  tags: ['dashboard'],
  method: 'GET',
  path: '/admin/v1/dashboard/messages/:id/body',
  auth: 'operator',
  params: z.strictObject({ id: z.string().min(1).max(200) }),
  output: z.object({ id: z.string(), body: z.unknown() }),
  errors: ['not_found'],
  tool: false,
  cli: ['dashboard', 'message-body'],
})

/** The operator's message reads. */
export const messageDashboardContracts = [operatorListMessages, operatorReadMessageBody]
