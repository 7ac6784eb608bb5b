import { z } from 'zod'
import { booleanFlag, DEFAULT_MAX_WAIT_SECONDS, waitSeconds, wholeNumber } from './codecs.js'
import { nonNullJson } from './json.js'
import { handedTrace } from './trace.js'

/** Message limits; the body size is overridable by the hub's configuration. */
export const MESSAGE_LIMITS = {
  /** Largest message body, as canonical JSON (RFC 8785), in bytes. */
  maxBodyBytes: 64 * 1024,
  /** Longest idempotencyKey (seed 000 keys such as `handoff:RUN_ID:task:TASK_ID:v1` fit). */
  maxIdempotencyKeyChars: 200,
  /** Messages answered per inbox page when `limit` is not given. */
  defaultPageSize: 20,
  /** Most messages answered per inbox page; a larger `limit` is a 400. */
  maxPageSize: 100,
  /** Longest long-poll `wait`, in seconds; longer waits are clamped. */
  maxWaitSeconds: DEFAULT_MAX_WAIT_SECONDS,
  /** Deepest nesting of arrays and objects in a body; deeper is a 400. */
  maxDepth: 64,
} as const

/**
 * The `typ` header of a message receipt. A receipt is a compact JWS (RFC 7515) signed with the
 * hub's Ed25519 key (RFC 8037): protected header `{"alg":"EdDSA","kid":<hubKey.kid>,"typ":RECEIPT_TYPE}`,
 * payload a `MessageReceiptPayload` as JSON, both base64url without padding. Anyone holding the
 * `hubKey` of the hub's discovery document can verify it offline (`verifyMessageReceipt` in
 * @baton/client, or `baton receipt verify`). The hub stores it verbatim: a replay answers the same bytes.
 */
export const RECEIPT_TYPE = 'baton-message-receipt+jws'

/** The `v` of a receipt payload; a new payload shape gets a new number. */
export const RECEIPT_VERSION = 1

/** The limits of a message's input that a hub's operator may change. */
export interface MessageInputLimits {
  /** Largest body, as canonical JSON (RFC 8785), in bytes. */
  maxBodyBytes: number
  /** Longest long-poll `wait`, in seconds; longer waits are clamped. */
  maxWaitSeconds: number
}

/**
 * The body of `POST /v1/messages` (seed 000: `handoff-notice.json`, `handoff-reply.json`) under a
 * hub's limits. A body's canonical size is no JSON Schema rule: it is `message_too_large` (413).
 */
export function sendMessageInput(
  limits: Pick<MessageInputLimits, 'maxBodyBytes'> = MESSAGE_LIMITS,
) {
  return z.strictObject({
    recipient: z.string().min(1).max(200),
    body: nonNullJson().describe(
      `Any JSON but null, at most ${limits.maxBodyBytes} bytes as RFC 8785 canonical JSON and ${MESSAGE_LIMITS.maxDepth} levels deep`,
    ),
    idempotencyKey: z.string().min(1).max(MESSAGE_LIMITS.maxIdempotencyKeyChars),
  })
}
/** The body of `POST /v1/messages` under the default limits. */
export const SendMessageInput = sendMessageInput()

/** A parsed send request. */
export type SendMessageInput = z.infer<typeof SendMessageInput>

/**
 * The query of `GET /v1/messages` under a hub's limits: the whole rule of its shape, so a cursor,
 * a page size, the flag and the wait arrive as the numbers and the boolean the inbox reads.
 */
export function inboxQuery(limits: Pick<MessageInputLimits, 'maxWaitSeconds'> = MESSAGE_LIMITS) {
  return z.strictObject({
    after: wholeNumber()
      .optional()
      .describe('Exclusive global sequence (default 0); pass the last nextAfter'),
    limit: wholeNumber({ min: 1, max: MESSAGE_LIMITS.maxPageSize })
      .optional()
      .describe(
        `At most this many messages, 1 to ${MESSAGE_LIMITS.maxPageSize} (default ${MESSAGE_LIMITS.defaultPageSize})`,
      ),
    unacked: booleanFlag().optional().describe('true: only messages not yet acknowledged'),
    wait: waitSeconds()
      .optional()
      .describe(
        `Seconds to wait for a message when none is there; longer than ${limits.maxWaitSeconds} is clamped`,
      ),
  })
}
/** The query of an inbox read under the default limits. */
export const InboxQuery = inboxQuery()
/** A parsed inbox query. */
export type InboxQuery = z.output<typeof InboxQuery>

/**
 * What a hub receipt attests, signed by the hub's key: the message, its place in the global
 * order, both parties and the SHA-256 of the body's RFC 8785 canonical JSON.
 */
export interface MessageReceiptPayload {
  v: typeof RECEIPT_VERSION
  messageId: string
  sequence: number
  sender: string
  recipient: string
  /** `sha-256:` and the base64url SHA-256 of the body as RFC 8785 (JCS) canonical JSON. */
  bodyDigest: string
  /** When the hub committed the message, ISO 8601. */
  createdAt: string
}

/** The answer of `POST /v1/messages`: identical, byte for byte, for every replay of the key. */
export const SentMessageView = z.object({
  id: z.string(),
  sequence: z.number().int(),
  sender: z.string(),
  recipient: z.string(),
  bodyDigest: z.string(),
  createdAt: z.iso.datetime(),
  /** A compact JWS (`alg: EdDSA`, `kid` of the hub key) over a `MessageReceiptPayload`. */
  receipt: z.string(),
})
/** A sent message with its receipt. */
export type SentMessageView = z.infer<typeof SentMessageView>

/** One inbox message. */
export const MessageView = z.object({
  id: z.string(),
  sequence: z.number().int(),
  sender: z.string(),
  recipient: z.string(),
  body: z.unknown(),
  createdAt: z.iso.datetime(),
  ackedAt: z.iso.datetime().nullable(),
  ...handedTrace('the request that sent the message'),
})
/** An inbox message. */
export type MessageView = z.infer<typeof MessageView>

/** The answer of `GET /v1/messages`: oldest first; `nextAfter` is the cursor for the next page. */
export const MessagePageView = z.object({
  messages: z.array(MessageView),
  /** The last sequence answered, or the given `after` when none was. */
  nextAfter: z.number().int(),
})
/** A page of the inbox. */
export type MessagePageView = z.infer<typeof MessagePageView>

/** The answer of `POST /v1/messages/{id}/ack`; repeating an ack answers the same `ackedAt`. */
export const AckView = z.object({
  id: z.string(),
  sequence: z.number().int(),
  ackedAt: z.iso.datetime(),
})
/** An acknowledgement. */
export type AckView = z.infer<typeof AckView>
