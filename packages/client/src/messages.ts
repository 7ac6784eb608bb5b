import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import {
  type AckView,
  contracts,
  createMessageBodyDigest,
  createMessageReceipt,
  type MessagePageView,
  type MessageReceiptPayload,
  type PublicJwk,
  RECEIPT_TYPE,
  RECEIPT_VERSION,
  type SendMessageInput,
  type SentMessageView,
} from '@baton/protocol'
import { ed25519Signer, nodeDigest } from './node-crypto.js'
import type { SignedClient } from './signed-client.js'

// RFC 8785 canonical JSON lives in @baton/protocol; the SDK keeps exporting it.
export { canonicalJson } from '@baton/protocol'

/**
 * The digest a receipt carries for a message body: `sha-256:` and the base64url SHA-256 of the
 * body's RFC 8785 canonical JSON, so any JSON serialization of the same body gives the same digest.
 */
export function messageBodyDigest(body: unknown): string {
  return createMessageBodyDigest(body, nodeDigest)
}

/**
 * Signs a message receipt as a compact JWS (RFC 7515) with Ed25519 (`alg: EdDSA`, RFC 8037); the
 * hub calls this with its own key. The header is `{ alg, kid, typ }` in that order.
 */
export function signMessageReceipt(
  payload: MessageReceiptPayload,
  key: { privateKey: KeyObject; kid: string },
): string {
  return createMessageReceipt(payload, { kid: key.kid, sign: ed25519Signer(key.privateKey) })
}

/** The outcome of checking a receipt: its payload when valid, else the reason it is not. */
export type ReceiptCheck =
  | { valid: true; payload: MessageReceiptPayload; kid: string }
  | { valid: false; reason: string }

/** What a receipt must also say, when the caller knows it (for example its saved message). */
export interface ReceiptExpectations {
  body?: unknown
  messageId?: string
  sender?: string
  recipient?: string
}

const B64U = /^[A-Za-z0-9_-]*$/

function decodePart(part: string): Buffer | undefined {
  if (!B64U.test(part)) return undefined
  const bytes = Buffer.from(part, 'base64url')
  // Only the canonical encoding is accepted, so one receipt has exactly one byte form.
  return bytes.toString('base64url') === part ? bytes : undefined
}

function parseObject(bytes: Buffer | undefined): Record<string, unknown> | undefined {
  if (!bytes) return undefined
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'))
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

function isPayload(p: Record<string, unknown>): boolean {
  return (
    p.v === RECEIPT_VERSION &&
    typeof p.messageId === 'string' &&
    typeof p.sequence === 'number' &&
    Number.isSafeInteger(p.sequence) &&
    p.sequence > 0 &&
    typeof p.sender === 'string' &&
    typeof p.recipient === 'string' &&
    typeof p.bodyDigest === 'string' &&
    typeof p.createdAt === 'string'
  )
}

/**
 * Verifies a message receipt offline against the hub's public key (the `hubKey` of the hub's
 * discovery document): the JWS form, `alg`, `typ` and `kid`, the Ed25519 signature, the payload
 * shape and any expectations given (a `body` is checked through its digest).
 *
 * @example
 * const check = verifyMessageReceipt(sent.receipt, discovery.hubKey, { body })
 * if (!check.valid) throw new Error(check.reason)
 */
export function verifyMessageReceipt(
  receipt: string,
  hubKey: PublicJwk,
  expect: ReceiptExpectations = {},
): ReceiptCheck {
  const parts = typeof receipt === 'string' ? receipt.split('.') : []
  if (parts.length !== 3) return { valid: false, reason: 'not a compact JWS' }
  const [h, p, s] = parts as [string, string, string]
  const header = parseObject(decodePart(h))
  if (!header) return { valid: false, reason: 'the header is not canonical base64url JSON' }
  if (header.alg !== 'EdDSA') return { valid: false, reason: 'alg is not EdDSA' }
  if (header.typ !== RECEIPT_TYPE) return { valid: false, reason: `typ is not ${RECEIPT_TYPE}` }
  if (typeof header.kid !== 'string') return { valid: false, reason: 'no kid' }
  if (hubKey.kid !== undefined && header.kid !== hubKey.kid) {
    return { valid: false, reason: 'kid is not the hub key' }
  }
  const signature = decodePart(s)
  if (signature?.length !== 64) {
    return { valid: false, reason: 'the signature is not 64 canonical base64url bytes' }
  }
  let key: KeyObject
  try {
    key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: hubKey.x },
      format: 'jwk',
    })
  } catch {
    return { valid: false, reason: 'the hub key is not an Ed25519 JWK' }
  }
  if (!verify(null, Buffer.from(`${h}.${p}`, 'ascii'), key, signature)) {
    return { valid: false, reason: 'the signature does not verify with the hub key' }
  }
  const payload = parseObject(decodePart(p))
  if (!payload || !isPayload(payload)) {
    return { valid: false, reason: 'the payload is not a message receipt' }
  }
  const receiptPayload = payload as unknown as MessageReceiptPayload
  if (expect.body !== undefined && receiptPayload.bodyDigest !== messageBodyDigest(expect.body)) {
    return { valid: false, reason: 'the body digest does not match the body' }
  }
  for (const field of ['messageId', 'sender', 'recipient'] as const) {
    if (expect[field] !== undefined && receiptPayload[field] !== expect[field]) {
      return { valid: false, reason: `${field} does not match` }
    }
  }
  return { valid: true, payload: receiptPayload, kid: header.kid }
}

/** Query of an inbox read. */
export interface InboxQuery {
  /** An exclusive global sequence: answers messages after it (default 0). */
  after?: number
  /** At most this many messages (default 20, at most 100). */
  limit?: number
  /** Only messages not yet acknowledged. */
  unacked?: boolean
  /** Seconds to wait for a message when none is there yet (the hub clamps it to its longest). */
  wait?: number
}

/**
 * Typed calls for seed 000's messages over a signed client.
 *
 * @example
 * const messages = new MessagesClient(await SignedClient.fromFile(discoveryUrl, 'agent.identity.json'))
 * const sent = await messages.send({ recipient, body, idempotencyKey: 'run-1:notice' })
 */
export class MessagesClient {
  constructor(private readonly client: SignedClient) {}

  /** Sends a message; repeating the same recipient, body and key answers the same receipt. */
  send(input: SendMessageInput): Promise<SentMessageView> {
    return this.client.call(contracts.sendMessage, { body: input })
  }

  /** Reads the caller's own inbox after an exclusive sequence, oldest first. */
  list(query: InboxQuery = {}): Promise<MessagePageView> {
    return this.client.call(contracts.listMessages, { query })
  }

  /** Acknowledges a message addressed to the caller; repeating it answers the same ackedAt. */
  ack(id: string): Promise<AckView> {
    return this.client.call(contracts.ackMessage, { params: { id } })
  }

  /** Verifies a receipt against the hub key of this client's discovery document. */
  verifyReceipt(receipt: string, expect?: ReceiptExpectations): ReceiptCheck {
    return verifyMessageReceipt(receipt, this.client.discovery.hubKey, expect)
  }
}
