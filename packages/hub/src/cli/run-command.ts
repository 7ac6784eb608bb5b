// Finding, helping and running a generated command from the command index: a command loads the
// SDK's requests, the auth table and this, never the operation registry nor the schema of every
// contract (a network command started in about 1.5 s when it did, against 60 ms for node itself).
// A run on the hub's database (`--data-dir`, `--database-url`) and a contract's own text output
// load what they need when they are asked for.
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import {
  fetchDiscovery,
  loadIdentity,
  requestJson,
  type SignedBody,
  sendSigned,
} from '@baton/client/requests'
import { DISCOVERY_PATH, parseWholeNumber } from '@baton/protocol/primitives'
import { AUTH_KINDS } from '../ops/auth-kinds.js'
import { remoteInvoke } from '../ops/remote.js'
import type { CliField, CommandEntry, CommandIndex } from './command-index.js'
import { resolveWords } from './commands.js'
import { discoveryCache } from './discovery-cache.js'
import { didYouMean, type Io, UsageError } from './io.js'
import { labeled } from './labels.js'
import { traceOfCommand } from './trace.js'

/** The flags every generated command takes, besides its input. */
export const COMMON_FLAGS = {
  hub: 'URL of the hub (or BATON_HUB)',
  identity: 'identity file to sign with (or BATON_IDENTITY), for signed operations',
  token: 'the handoff token (or BATON_TOKEN), for token operations',
  'admin-token': "the operator's token (or BATON_ADMIN_TOKEN), for admin operations",
  'idempotency-key': 'makes a retry safe, for operations that accept one',
  'data-dir':
    "run on a stopped or running hub's SQLite files directly instead of --hub, for admin operations",
  'database-url':
    "run on the hub's PostgreSQL database directly instead of --hub, for admin operations",
  all: "every page, following the answer's cursor, for listings that page",
  body: 'the whole request body from a JSON file, or - for stdin; flags override its fields',
  json: 'print the wire body (compact JSON), errors included',
  traceparent: 'W3C traceparent of the trace to continue (or TRACEPARENT, with TRACESTATE)',
} as const

/** `handoff_id` → `handoff-id`, `budgetMicros` → `budget-micros`. */
export function flagName(field: string): string {
  return field
    .replace(/_/g, '-')
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase()
}

/** The common flags a command takes: the credential its auth needs, and what it accepts. */
export function commonFlags(
  c: Pick<CommandEntry, 'auth' | 'pages' | 'idempotencyKey' | 'body'>,
): (keyof typeof COMMON_FLAGS)[] {
  const kind = AUTH_KINDS[c.auth].cli
  const credential = kind.credential
  return [
    'hub',
    ...(credential ? [credential.flag] : []),
    ...(kind.admin ? (['data-dir', 'database-url'] as const) : []),
    ...(c.pages ? (['all'] as const) : []),
    ...(c.idempotencyKey ? (['idempotency-key'] as const) : []),
    ...(c.body !== 'none' ? (['body'] as const) : []),
    'json',
    'traceparent',
  ]
}

/** Every flag a command takes: its input's, its aliases and the common ones. */
export function commandFlags(c: CommandEntry): string[] {
  const own = [...c.positionals, ...c.fields].map((f) => f.flag)
  return [...new Set([...own, ...Object.keys(c.aliases), ...commonFlags(c), 'help'])]
}

/** `--help` of one command: its summary, arguments and flags with types, from the schemas. */
export function commandHelp(c: CommandEntry): string {
  const head = [...(c.admin ? ['admin'] : []), ...c.words].join(' ')
  const args = c.positionals
    .map((p) => (c.defaults[p.name] === undefined ? ` <${p.flag}>` : ` [<${p.flag}>]`))
    .join('')
  const auth = AUTH_KINDS[c.auth].cli.help
  const row = (name: string, type: string, note: string, text = '') =>
    `  ${name.padEnd(26)} ${type.padEnd(14)} ${note.padEnd(9)} ${text}`.trimEnd()
  // Path parameters by the argument names the command line uses: `{state}` and `:state` read
  // `<state>`, as in the usage line above.
  const named = (text: string, pattern: RegExp) =>
    text.replace(pattern, (whole, name: string) =>
      c.positionals.some((p) => p.name === name) ? `<${flagName(name)}>` : whole,
    )
  const lines = [
    `baton ${head}${args} [flags]`,
    '',
    named(c.summary, /\{(\w+)\}/g),
    `${c.method} ${named(c.path, /:(\w+)/g)} · ${auth}`,
  ]
  if (c.positionals.length > 0) {
    lines.push('', 'Arguments (or as flags):')
    for (const p of c.positionals) {
      const note = c.defaults[p.name] === undefined ? 'required' : `= ${c.defaults[p.name]}`
      lines.push(row(`<${p.flag}>`, p.type, note, p.description))
    }
  }
  if (c.fields.length > 0) {
    lines.push('', 'Flags:')
    for (const f of c.fields) {
      lines.push(row(`--${f.flag}`, f.type, f.required ? 'required' : '', f.description))
    }
  }
  const aliases = Object.entries(c.aliases)
  if (aliases.length > 0) {
    lines.push('', 'Also:')
    for (const [flag, field] of aliases) {
      const target = `--${flagName(field.replace(/^@/, ''))}`
      const text = field.startsWith('@') ? `a JSON file (or -) for ${target}` : `same as ${target}`
      lines.push(`  ${`--${flag}`.padEnd(26)} ${text}`)
    }
  }
  lines.push('', 'Common:')
  const own = new Set([...c.positionals, ...c.fields].map((f) => f.flag))
  for (const flag of commonFlags(c).filter((f) => !own.has(f)))
    lines.push(`  ${`--${flag}`.padEnd(26)} ${COMMON_FLAGS[flag]}`)
  lines.push(
    '',
    'A json flag takes inline JSON, @file.json, or @- for stdin; a time flag an ISO 8601 time or a',
    'duration from now (90s, 15m, 2h, 7d). Exit codes: 0 ok, 1 refused (4xx), 2 failed (5xx or',
    'network), 64 usage.',
  )
  return lines.join('\n')
}

/** The help of a group: its commands and their summaries. */
export function groupHelp(group: string, commands: CommandEntry[], admin: boolean): string {
  const prefix = admin ? 'admin ' : ''
  return [
    `baton ${prefix}${group} <command> [flags]`,
    '',
    ...commands.map(
      (c) => `  ${c.words[1].padEnd(14)} ${c.summary}${c.admin && !admin ? ' [admin]' : ''}`,
    ),
    '',
    `Run baton ${prefix}${group} <command> --help for its flags.`,
  ].join('\n')
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

async function readJson(source: string, what: string): Promise<unknown> {
  let text: string
  try {
    text = source === '-' ? await readStdin() : await readFile(source, 'utf8')
  } catch (error) {
    throw new UsageError(`cannot read ${source}: ${(error as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${(error as Error).message}`)
  }
}

const DURATION_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** A time flag's value: an ISO 8601 time as given, or a duration (`2h`) as now plus that. */
export function parseTime(raw: string, now: () => number = Date.now): string {
  const m = /^(\d+)(s|m|h|d)$/.exec(raw)
  if (!m) return raw
  const unit = m[2] as keyof typeof DURATION_UNITS_MS
  // A duration reaches at most the last instant a Date can hold.
  const amount = parseWholeNumber(m[1])
  const at = amount === undefined ? Number.NaN : now() + amount * DURATION_UNITS_MS[unit]
  if (!(Math.abs(at) <= 8.64e15)) throw new UsageError(`${raw} is further ahead than a time can be`)
  return new Date(at).toISOString()
}

async function parseFlagValue(f: CliField, raw: string | boolean): Promise<unknown> {
  if (typeof raw === 'string' && f.time) return parseTime(raw)
  if (typeof raw === 'boolean' || f.kind === 'string') return raw
  if (f.kind === 'number') {
    if (!/^-?\d+(\.\d+)?$/.test(raw)) throw new UsageError(`--${f.flag} must be a number`)
    return Number(raw)
  }
  if (f.kind === 'boolean') {
    if (raw !== 'true' && raw !== 'false') throw new UsageError(`--${f.flag} is true or false`)
    return raw === 'true'
  }
  if (raw.startsWith('@')) return readJson(raw.slice(1), `--${f.flag}`)
  try {
    return JSON.parse(raw)
  } catch {
    throw new UsageError(`--${f.flag} takes JSON (inline, @file.json or @-)`)
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`
  return `${n} B`
}

/** A command that takes `seconds` waits up to that long. */
function waitSeconds(c: CommandEntry, input: Record<string, unknown>): number | undefined {
  const f = [...c.positionals, ...c.fields].find((x) => x.name === 'seconds')
  if (!f) return undefined
  const n = Number(input.seconds ?? 0)
  return Number.isFinite(n) && n > 0 ? n : undefined
}

/** A contract's own text of an answer, for the command that declares one (`cli.text`). */
async function textOf(c: CommandEntry, result: unknown): Promise<string | undefined> {
  if (!c.text) return undefined
  const { CONTRACTS } = await import('@baton/protocol')
  const cli = CONTRACTS.find((k) => k.name === c.name)?.cli
  return cli && !Array.isArray(cli)
    ? (cli as { text?: (o: unknown) => string }).text?.(result)
    : undefined
}

/**
 * Runs a generated command: flags into the operation's input, sent through `remoteInvoke` (the
 * stdio MCP server's path), the wire body printed. The hub validates the input, so a bad value
 * gets the same code from every face. `index` is where the command was found, for the commands
 * it calls besides (the labels of a listing).
 */
export async function runGenerated(
  c: CommandEntry,
  argv: string[],
  io: Io,
  index?: CommandIndex,
): Promise<number> {
  const byFlag = new Map<string, CliField>()
  for (const f of [...c.positionals, ...c.fields]) byFlag.set(f.flag, f)
  const options: Record<string, { type: 'string' | 'boolean' }> = {}
  for (const flag of commonFlags(c))
    options[flag] = { type: flag === 'json' || flag === 'all' ? 'boolean' : 'string' }
  for (const [flag, f] of byFlag)
    options[flag] = { type: f.kind === 'boolean' ? 'boolean' : 'string' }
  for (const flag of Object.keys(c.aliases)) options[flag] = { type: 'string' }
  const parsed = parseCommandArgs(c.words.join(' '), argv, {
    ...options,
    help: { type: 'boolean', short: 'h' },
  })
  const values = parsed.values as Record<string, string | boolean | undefined>
  const { positionals } = parsed
  if (values.help) {
    io.stdout(commandHelp(c))
    return 0
  }
  const json = values.json === true
  // A flag an input field claims (a body's `token`, say) is that field, not the common flag.
  const common = (flag: keyof typeof COMMON_FLAGS) =>
    byFlag.has(flag) ? undefined : (values[flag] as string | undefined)
  if (positionals.length > c.positionals.length) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[c.positionals.length])}`)
  }

  const parts: Record<CliField['part'], Record<string, unknown>> = {
    params: {},
    query: {},
    body: {},
  }
  const bodyFile = common('body')
  let hasBody = false
  if (bodyFile !== undefined) {
    const whole = await readJson(bodyFile, '--body')
    if (
      c.body !== 'fields' ||
      typeof whole !== 'object' ||
      whole === null ||
      Array.isArray(whole)
    ) {
      if (c.body === 'none') throw new UsageError(`${c.words.join(' ')} takes no body`)
      parts.body = whole as Record<string, unknown>
    } else parts.body = { ...(whole as Record<string, unknown>) }
    hasBody = true
  }
  c.positionals.forEach((p, i) => {
    if (positionals[i] !== undefined) parts.params[p.name] = positionals[i]
  })
  for (const [flag, f] of byFlag) {
    const raw = values[flag]
    if (raw !== undefined) parts[f.part][f.name] = await parseFlagValue(f, raw as string | boolean)
  }
  for (const [flag, target] of Object.entries(c.aliases)) {
    const raw = values[flag] as string | undefined
    if (raw === undefined) continue
    const field = byFlag.get(flagName(target.replace(/^@/, '')))
    if (!field) continue
    parts[field.part][field.name] = target.startsWith('@')
      ? await readJson(raw, `--${flag}`)
      : await parseFlagValue(field, raw)
  }
  for (const [name, text] of Object.entries(c.defaults)) {
    const field = [...c.positionals, ...c.fields].find((f) => f.name === name)
    if (field && parts[field.part][name] === undefined && !(field.part === 'body' && hasBody)) {
      parts[field.part][name] = await parseFlagValue(field, text)
    }
  }
  const missing = [...c.positionals, ...c.fields].filter(
    (f) => f.required && parts[f.part][f.name] === undefined && !(f.part === 'body' && hasBody),
  )
  if (missing.length > 0) {
    throw new UsageError(
      `${c.words.join(' ')} needs ${missing.map((f) => (f.part === 'params' ? `<${f.flag}>` : `--${f.flag}`)).join(', ')} (see --help)`,
    )
  }

  const body =
    c.body !== 'none' && (hasBody || Object.keys(parts.body).length > 0) ? parts.body : undefined
  const input = { params: parts.params, query: parts.query, body }
  const pages = values.all === true ? c.pages : undefined
  const print = async (result: unknown) => {
    const text = json ? undefined : await textOf(c, result)
    io.stdout(json ? JSON.stringify(result) : (text ?? JSON.stringify(result, null, 2)))
    return 0
  }
  // An operator's command may run on the hub's database itself, as the hub would run it.
  const dataDir = common('data-dir')
  const databaseUrl = common('database-url')
  if (dataDir !== undefined || databaseUrl !== undefined) {
    return print(await runLocally(c, input, { dataDir, databaseUrl }, pages, io))
  }

  const kind = AUTH_KINDS[c.auth]
  // A signed command's identity file names the hub it was made for (its discovery URL).
  const identityFile =
    kind.remote === 'signed' ? (common('identity') ?? process.env.BATON_IDENTITY) : undefined
  const identity = identityFile ? await loadIdentity(identityFile) : undefined
  const hub =
    common('hub') ?? process.env.BATON_HUB ?? (identity ? new URL(identity.hub).origin : undefined)
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  // The credential its auth needs: a bearer token the invoke sends, or the identity it signs with.
  const wanted = kind.cli.credential
  let credential: string | undefined
  if (wanted) {
    credential = wanted.env.reduce<string | undefined>(
      (found, name) => found ?? process.env[name],
      common(wanted.flag),
    )
    if (!credential) throw new UsageError(wanted.missing)
  }
  const token = kind.remote === 'bearer' ? credential : undefined
  const signer =
    kind.remote === 'signed' && credential
      ? {
          identity: identity ?? (await loadIdentity(credential)),
          // Kept between commands as the hub's cache headers allow; a command whose answer
          // follows the hub's live runtime availability revalidates it first.
          discovery: await fetchDiscovery(new URL(DISCOVERY_PATH, hub).href, {
            cache: discoveryCache(),
            fresh: c.freshDiscovery,
          }),
          options: {},
        }
      : undefined

  const showUpload = !json && c.upload && body !== undefined
  let upload: ((sent: number, total: number) => void) | undefined
  if (showUpload) {
    const size = Buffer.byteLength(JSON.stringify(body), 'utf8')
    io.stderr(`uploading ${c.words[1]}: ${formatBytes(size)}…`)
    let shown = -1
    upload = (sent, total) => {
      // A line every tenth of the way, so a long upload shows it is moving.
      const tenth = Math.floor((sent / total) * 10)
      if (tenth === shown || total < 1024 * 1024) return
      shown = tenth
      io.stderr(`  ${formatBytes(sent)} of ${formatBytes(total)} (${tenth * 10}%)`)
    }
  }
  const invoke = remoteInvoke({
    plain: (method, path, b, h, signal) =>
      requestJson(hub, method, path, b, { headers: h, signal }),
    ...(signer
      ? {
          signed: (
            method: string,
            path: string,
            b: unknown,
            h: Record<string, string>,
            signal: AbortSignal,
          ) =>
            sendSigned(signer, method, path, b as SignedBody, h, {
              signal,
              ...(upload ? { onUploadProgress: upload } : {}),
            }),
        }
      : {}),
  })
  const trace = traceOfCommand(common('traceparent'))
  const abort = new AbortController()
  const wait = json ? undefined : waitSeconds(c, { ...parts.params, ...parts.query })
  const started = Date.now()
  if (wait) io.stderr(`waiting up to ${wait} s for a change…`)
  const timer = wait
    ? setInterval(() => {
        io.stderr(`  ${Math.round((Date.now() - started) / 1000)} s of ${wait} s`)
      }, 5000)
    : undefined
  let result: unknown
  try {
    result = await everyPage(pages, input, (page) =>
      invoke(c, page, {
        signal: abort.signal,
        trace,
        ...(token ? { token } : {}),
        ...(common('idempotency-key') ? { idempotencyKey: common('idempotency-key') } : {}),
      }),
    )
    // A person reads agents by their labels: listings show them beside each did:key.
    if (!json) {
      const commands = index?.commands ?? (await loadIndex()).commands
      result = await labeled(c, result, commands, invoke, { signal: abort.signal, trace })
    }
  } finally {
    if (timer) clearInterval(timer)
  }
  if (showUpload) {
    io.stderr(`uploaded in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  }
  return print(result)
}

async function loadIndex(): Promise<CommandIndex> {
  return (await import('./command-index.js')).loadCommandIndex()
}

type Input = { params: Record<string, unknown>; query: Record<string, unknown>; body: unknown }

/**
 * One answer, or with `pages` every page from the one asked for: each page's cursor is fed to the
 * next request until the answer names none, and the items of all pages are answered together.
 */
async function everyPage(
  pages: CommandEntry['pages'],
  input: Input,
  read: (page: Input) => Promise<unknown>,
): Promise<unknown> {
  if (!pages) return read(input)
  const items: unknown[] = []
  let query = input.query
  for (;;) {
    const page = (await read({ ...input, query })) as Record<string, unknown>
    items.push(...((page[pages.items] as unknown[] | undefined) ?? []))
    const next = page[pages.next]
    if (next === null || next === undefined) return { ...page, [pages.items]: items }
    query = { ...query, [pages.cursor]: next }
  }
}

/**
 * Runs an operation on the hub's database itself, through the same composition root and the same
 * one parse of its input as the hub: the operator's way in when no hub answers, or before one runs.
 */
async function runLocally(
  c: CommandEntry,
  input: Input,
  where: { dataDir?: string | undefined; databaseUrl?: string | undefined },
  pages: CommandEntry['pages'],
  io: Io,
): Promise<unknown> {
  const [{ createApp }, { loadConfig }, { createLogger }, { localInvoke }, { OPERATIONS }] =
    await Promise.all([
      import('../app.js'),
      import('../config.js'),
      import('../log.js'),
      import('../ops/local.js'),
      import('../ops/registry.js'),
    ])
  const op = OPERATIONS.find((o) => o.name === c.name)
  if (!op) throw new UsageError(`${c.words.join(' ')} is not an operation of this hub`)
  const config = loadConfig(process.env, {
    ...(where.dataDir !== undefined ? { 'data-dir': where.dataDir } : {}),
    ...(where.databaseUrl !== undefined ? { 'database-url': where.databaseUrl } : {}),
  })
  const ctx = await createApp(config, {
    log: createLogger('warn', { write: (line: string) => io.stderr(line) }),
  })
  try {
    const invoke = localInvoke(ctx, { ip: 'local' })
    return await everyPage(pages, input, (page) =>
      invoke(op, page, { signal: new AbortController().signal }),
    )
  } finally {
    await ctx.close()
  }
}

/** The generated commands by group and action, for dispatch, help and completion. */
export interface CommandTree<C extends CommandEntry = CommandEntry> {
  groups: Map<string, C[]>
  admin: Map<string, C[]>
}

/** Groups commands: agent-facing ones at the top, operator ones under `admin`. */
export function treeOf<C extends CommandEntry>(commands: readonly C[]): CommandTree<C> {
  const tree: CommandTree<C> = { groups: new Map(), admin: new Map() }
  for (const c of commands) {
    const at = c.admin ? tree.admin : tree.groups
    const list = at.get(c.words[0]) ?? []
    list.push(c)
    at.set(c.words[0], list)
  }
  return tree
}

/**
 * Dispatches `<group> <action> …` within one level of the tree (the top, or `admin`); answers
 * `undefined` when the group is not one of its groups.
 */
export async function runGroup(
  groups: Map<string, CommandEntry[]>,
  argv: string[],
  io: Io,
  admin: boolean,
  fallback?: Map<string, CommandEntry[]>,
  index?: CommandIndex,
): Promise<number | undefined> {
  const [typed, typedAction, ...rest] = argv
  // An older word (`capabilities delete`) runs the command its noun now names (`grant revoke`).
  const [group, action] = typed ? resolveWords(typed, typedAction) : [typed, typedAction]
  const commands = group ? groups.get(group) : undefined
  if (!group || !commands) return undefined
  const operatorOnly = (fallback?.get(group) ?? []).filter(
    (o) => !commands.some((c) => c.words[1] === o.words[1]),
  )
  const help = () => groupHelp(group, [...commands, ...operatorOnly], admin)
  if (!action || action === '--help' || action === '-h') {
    io.stdout(help())
    return action ? 0 : 64
  }
  let command = commands.find((c) => c.words[1] === action)
  // An operator command whose words no agent command takes is reachable without `admin` too
  // (`baton transfer token`); where both exist, an admin token without an identity picks it.
  const operator = fallback?.get(group)?.find((c) => c.words[1] === action)
  if (operator) {
    const identity = rest.includes('--identity')
    const adminToken = rest.includes('--admin-token') || !!process.env.BATON_ADMIN_TOKEN
    if (!command || (adminToken && !identity)) command = operator
  }
  if (!command) {
    const actions = [...commands, ...operatorOnly].map((c) => c.words[1])
    throw new UsageError(
      `unknown command ${JSON.stringify(`${group} ${action}`)}${didYouMean(action, actions, `${group} `)}\n\n${help()}`,
    )
  }
  return runGenerated(command, rest, io, index)
}

/**
 * Node's parseArgs for one command, its errors said the house way: `unknown option --form (did
 * you mean --from?)`, a usage error (exit 64) naming the command.
 */
export function parseCommandArgs(
  command: string,
  argv: string[],
  options: Record<string, { type: 'string' | 'boolean'; short?: string }>,
) {
  try {
    return parseArgs({ args: argv, allowPositionals: true, options, strict: true })
  } catch (error) {
    throw rephraseParseError(command, error, Object.keys(options))
  }
}

/** A parseArgs error as a usage error of `command`; anything else passes unchanged. */
export function rephraseParseError(command: string, error: unknown, flags: string[]): unknown {
  const code = (error as { code?: unknown })?.code
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) return error
  const message = (error as Error).message
  const option = /'(-{1,2}[^'\s]+)'/.exec(message)?.[1]
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
    const name = option.replace(/^-+/, '').split('=')[0]!
    const hint = didYouMean(name, flags, '--')
    return new UsageError(`unknown option ${option}${hint}`, command)
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    return new UsageError(`option ${option.replace(/ .*/, '')} takes a value`, command)
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return new UsageError(`unexpected argument${option ? ` ${option}` : ''}`, command)
  }
  return new UsageError(message, command)
}
