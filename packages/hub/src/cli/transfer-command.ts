import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { SignedClient, TransferAdminClient, TransferClient } from '@baton/client'
import { type Io, UsageError } from './io.js'

const USAGE = `baton transfer <command> --hub URL [--json]

As an agent (signed with --identity FILE):
  snapshot   [--file F]  (else stdin) [--idempotency-key K]   stage a snapshot
  provision  <id> --tier T --budget MICROS --rate MICROS_PER_S --token TOKEN
  claim      <id>            claim-next --tier T               (a runtime)
  push       <id> [--checksum C]   fetches the snapshot and computes C when not given
  activate   <id> --token TOKEN
  usage      <id> --key K --amount MICROS                      (the claiming runtime)
  status     <id>            wait <id> [--seconds 25] [--version V]

As the orchestrator (operator token, --admin-token or BATON_ADMIN_TOKEN):
  token      <id> --scope provision --tier T --budget MICROS --rate MICROS_PER_S [--ttl SECONDS]
  token      <id> --scope activate [--ttl SECONDS]
  status     <id> --admin-token T
  terminate  <id> [--reason R]

Money is integer micro-units (1 unit = 1000000). The hub URL may also come from BATON_HUB, the
identity file from BATON_IDENTITY.`

/** `baton transfer …`: session transfers (seed 004) from a shell. */
export async function transferCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      hub: { type: 'string' },
      identity: { type: 'string' },
      'admin-token': { type: 'string' },
      json: { type: 'boolean' },
      file: { type: 'string' },
      'idempotency-key': { type: 'string' },
      tier: { type: 'string' },
      budget: { type: 'string' },
      rate: { type: 'string' },
      token: { type: 'string' },
      scope: { type: 'string' },
      ttl: { type: 'string' },
      checksum: { type: 'string' },
      key: { type: 'string' },
      amount: { type: 'string' },
      seconds: { type: 'string' },
      version: { type: 'string' },
      reason: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  })
  const [sub, id] = positionals
  if (values.help || !sub) {
    io.stdout(USAGE)
    return values.help ? 0 : 64
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const int = (v: string | undefined, name: string): number => {
    if (v === undefined || !/^\d{1,15}$/.test(v)) {
      throw new UsageError(`--${name} must be a whole number (money in micro-units)`)
    }
    return Number(v)
  }
  const needId = () => {
    if (!id) throw new UsageError(`baton transfer ${sub} needs a transfer id`)
    return id
  }
  const adminToken = values['admin-token'] ?? process.env.BATON_ADMIN_TOKEN
  const admin = () => {
    if (!adminToken) throw new UsageError('--admin-token is required (or set BATON_ADMIN_TOKEN)')
    return new TransferAdminClient(hub, adminToken)
  }
  const agent = async () => {
    const identity = values.identity ?? process.env.BATON_IDENTITY
    if (!identity) throw new UsageError('--identity FILE is required (or set BATON_IDENTITY)')
    const signed = await SignedClient.fromFile(
      new URL('/.well-known/agent-net', hub).href,
      identity,
    )
    return new TransferClient(signed)
  }
  let result: unknown
  switch (sub) {
    case 'snapshot': {
      const text = values.file ? await readFile(values.file, 'utf8') : await readStdin()
      let snapshot: unknown
      try {
        snapshot = JSON.parse(text)
      } catch (e) {
        throw new UsageError(`the snapshot is not valid JSON: ${(e as Error).message}`)
      }
      const size = Buffer.byteLength(text, 'utf8')
      const started = Date.now()
      if (!values.json) io.stderr(`uploading snapshot: ${formatBytes(size)}…`)
      let shown = -1
      result = await (await agent()).snapshot(snapshot, {
        ...(values['idempotency-key'] ? { idempotencyKey: values['idempotency-key'] } : {}),
        ...(values.json
          ? {}
          : {
              onProgress: (sent: number, total: number) => {
                // A line every tenth of the way, so a long upload shows it is moving.
                const tenth = Math.floor((sent / total) * 10)
                if (tenth === shown || total < 1024 * 1024) return
                shown = tenth
                io.stderr(`  ${formatBytes(sent)} of ${formatBytes(total)} (${tenth * 10}%)`)
              },
            }),
      })
      if (!values.json) {
        io.stderr(
          `uploaded ${formatBytes(size)} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
        )
      }
      break
    }
    case 'token': {
      const scope = values.scope
      if (scope !== 'provision' && scope !== 'activate') {
        throw new UsageError('--scope must be provision or activate')
      }
      const minted = await admin().mint(needId(), {
        scope,
        ...(scope === 'provision'
          ? {
              tier: values.tier ?? '',
              budgetMicros: int(values.budget, 'budget'),
              rateMicrosPerSecond: int(values.rate, 'rate'),
            }
          : {}),
        ...(values.ttl ? { ttlSeconds: int(values.ttl, 'ttl') } : {}),
      })
      if (!values.json) {
        io.stdout(minted.token)
        return 0
      }
      result = minted
      break
    }
    case 'provision': {
      if (!values.tier || !values.token) throw new UsageError('provision needs --tier and --token')
      result = await (await agent()).provision(needId(), {
        tier: values.tier,
        budgetMicros: int(values.budget, 'budget'),
        rateMicrosPerSecond: int(values.rate, 'rate'),
        token: values.token,
      })
      break
    }
    case 'claim':
      result = await (await agent()).claim(needId())
      break
    case 'claim-next':
      if (!values.tier) throw new UsageError('claim-next needs --tier')
      result = await (await agent()).claimNext(values.tier)
      break
    case 'push':
      result = await (await agent()).push(needId(), values.checksum)
      break
    case 'activate':
      if (!values.token) throw new UsageError('activate needs --token')
      result = await (await agent()).activate(needId(), values.token)
      break
    case 'usage':
      if (!values.key) throw new UsageError('usage needs --key')
      result = await (await agent()).reportUsage(needId(), {
        idempotencyKey: values.key,
        amountMicros: int(values.amount, 'amount'),
      })
      break
    case 'status':
      result =
        adminToken && !values.identity
          ? await admin().get(needId())
          : await (await agent()).get(needId())
      break
    case 'wait':
      result = await (await agent()).wait(
        needId(),
        values.seconds ? int(values.seconds, 'seconds') : 25,
        values.version ? int(values.version, 'version') : undefined,
      )
      break
    case 'terminate':
      result = await admin().terminate(needId(), values.reason)
      break
    default:
      throw new UsageError(`unknown transfer command ${JSON.stringify(sub)}`)
  }
  io.stdout(JSON.stringify(result, null, 2))
  return 0
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${n} B`
}
