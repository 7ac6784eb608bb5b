import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { HandoffClient } from '@baton/client'
import { type Io, UsageError } from './io.js'

const USAGE = `baton handoff <command> --hub URL [--json]

  create  [--payload JSON | --payload-file F] [--note T] [--notify-url U] [--machine-file F] [--idempotency-key K]
  read    <id> --token T
  advance <id> <state> --from S --token T [--nonce N] [--note T]
  wait    <id> --token T [--seconds 25] [--version V]

The hub URL may also come from BATON_HUB. Tokens may come from BATON_HANDOFF_TOKEN.`

/** `baton handoff create|read|advance|wait`: the token handoff API from a shell. */
export async function handoffCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      hub: { type: 'string' },
      json: { type: 'boolean' },
      token: { type: 'string' },
      payload: { type: 'string' },
      'payload-file': { type: 'string' },
      note: { type: 'string' },
      'notify-url': { type: 'string' },
      'machine-file': { type: 'string' },
      'idempotency-key': { type: 'string' },
      from: { type: 'string' },
      nonce: { type: 'string' },
      seconds: { type: 'string' },
      version: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  const [sub, ...rest] = positionals
  if (values.help || !sub) {
    io.stdout(USAGE)
    return values.help ? 0 : 64
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const client = new HandoffClient(hub)
  const token = values.token ?? process.env.BATON_HANDOFF_TOKEN
  const needToken = () => {
    if (!token) throw new UsageError('--token is required (or set BATON_HANDOFF_TOKEN)')
    return token
  }
  const needId = () => {
    const id = rest[0]
    if (!id) throw new UsageError(`baton handoff ${sub} needs a handoff id`)
    return id
  }
  const int = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined
    if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`)
    return Number(v)
  }
  let result: unknown
  switch (sub) {
    case 'create': {
      let payload: unknown
      try {
        if (values['payload-file'])
          payload = JSON.parse(await readFile(values['payload-file'], 'utf8'))
        else if (values.payload !== undefined) payload = JSON.parse(values.payload)
        else throw new UsageError('create needs --payload JSON or --payload-file F')
      } catch (e) {
        if (e instanceof UsageError) throw e
        throw new UsageError(`the payload is not valid JSON: ${(e as Error).message}`)
      }
      const machine = values['machine-file']
        ? (JSON.parse(await readFile(values['machine-file'], 'utf8')) as object)
        : {}
      const input = {
        payload,
        ...machine,
        ...(values.note !== undefined ? { note: values.note } : {}),
        ...(values['notify-url'] !== undefined ? { notify_url: values['notify-url'] } : {}),
      }
      result = await client.create(input as Parameters<HandoffClient['create']>[0], {
        ...(values['idempotency-key'] ? { idempotencyKey: values['idempotency-key'] } : {}),
      })
      break
    }
    case 'read':
      result = await client.read(needId(), needToken())
      break
    case 'advance': {
      const state = rest[1]
      if (!state) throw new UsageError('advance needs <id> <state>')
      if (!values.from) throw new UsageError('advance needs --from STATE')
      result = await client.advance(
        needId(),
        state,
        {
          from: values.from,
          ...(values.nonce !== undefined ? { nonce: values.nonce } : {}),
          ...(values.note !== undefined ? { note: values.note } : {}),
        },
        needToken(),
      )
      break
    }
    case 'wait':
      result = await client.wait(
        needId(),
        needToken(),
        int(values.seconds, 'seconds') ?? 25,
        int(values.version, 'version'),
      )
      break
    default:
      throw new UsageError(`unknown handoff command ${JSON.stringify(sub)}\n${USAGE}`)
  }
  io.stdout(JSON.stringify(result, null, values.json ? 0 : 2))
  return 0
}
