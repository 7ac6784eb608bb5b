import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { fetchDiscovery, type ReceiptExpectations, verifyMessageReceipt } from '@baton/client'
import { PublicJwk } from '@baton/protocol'
import { EXIT, type Io, UsageError } from './io.js'

const USAGE = `baton receipt verify (--discovery URL | --hub-key JWK-FILE) [--body-file F] [--json] <receipt-file>

  Checks a message receipt (the hub-signed compact JWS answered by POST /v1/messages) against the
  hub's public key: from the hub's discovery document (/.well-known/agent-net), or offline from a
  saved JWK file. The receipt file holds the JWS text, or the saved JSON answer with a "receipt"
  field (its id, sender and recipient are then checked too). --body-file also checks the body
  digest against a saved message body (JSON), or a saved send request with a "body" field.

Exit 0: valid. Exit 1: invalid. Exit 2: the key or files could not be read.`

async function readJsonOrText(file: string): Promise<{ text: string; json: unknown }> {
  const text = (await readFile(file, 'utf8')).trim()
  try {
    return { text, json: JSON.parse(text) }
  } catch {
    return { text, json: undefined }
  }
}

/** `baton receipt verify`: checks a saved message receipt offline or against discovery. */
export async function receiptCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      discovery: { type: 'string' },
      'hub-key': { type: 'string' },
      'body-file': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  const [sub, file, ...extra] = positionals
  if (values.help || !sub) {
    io.stdout(USAGE)
    return values.help ? EXIT.ok : EXIT.usage
  }
  if (sub !== 'verify') throw new UsageError(`unknown receipt command ${JSON.stringify(sub)}`)
  if (!file || extra.length > 0) throw new UsageError('baton receipt verify needs one receipt file')
  if ((values.discovery === undefined) === (values['hub-key'] === undefined)) {
    throw new UsageError('give exactly one of --discovery URL or --hub-key JWK-FILE')
  }

  let hubKey: PublicJwk
  if (values.discovery !== undefined) {
    hubKey = (await fetchDiscovery(values.discovery)).hubKey
  } else {
    const parsed = PublicJwk.safeParse((await readJsonOrText(values['hub-key']!)).json)
    if (!parsed.success) throw new UsageError('--hub-key must hold an Ed25519 public JWK')
    hubKey = parsed.data
  }

  const saved = await readJsonOrText(file)
  const expect: ReceiptExpectations = {}
  let receipt = saved.text
  if (saved.json && typeof saved.json === 'object') {
    const answer = saved.json as Record<string, unknown>
    if (typeof answer.receipt !== 'string') {
      throw new UsageError('the receipt file holds JSON without a "receipt" field')
    }
    receipt = answer.receipt
    if (typeof answer.id === 'string') expect.messageId = answer.id
    if (typeof answer.sender === 'string') expect.sender = answer.sender
    if (typeof answer.recipient === 'string') expect.recipient = answer.recipient
  }
  if (values['body-file'] !== undefined) {
    const body = (await readJsonOrText(values['body-file'])).json
    if (body === undefined) throw new UsageError('--body-file must hold JSON')
    const sent = body as Record<string, unknown>
    expect.body =
      sent && typeof sent === 'object' && 'idempotencyKey' in sent && 'body' in sent
        ? sent.body
        : body
  }

  const check = verifyMessageReceipt(receipt, hubKey, expect)
  if (values.json) io.stdout(JSON.stringify(check, null, 2))
  else if (check.valid) {
    const p = check.payload
    io.stdout(
      `valid: message ${p.messageId} #${p.sequence} ${p.sender} -> ${p.recipient} at ${p.createdAt}`,
    )
  } else io.stderr(`invalid: ${check.reason}`)
  return check.valid ? EXIT.ok : EXIT.refused
}
