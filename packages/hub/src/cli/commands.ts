import type { Io } from './io.js'

/** A hand-written command's entry point. */
export type Command = (argv: string[], io: Io) => Promise<number>

/** How a group is named: the words it replaced, and actions renamed to match the SDK and MCP. */
export interface GroupNoun {
  /** Older words for the group, still answered to but neither listed in help nor completed. */
  was?: readonly string[]
  /** Older action → its name now, under either word (`capabilities delete` is `grant revoke`). */
  actions?: Readonly<Record<string, string>>
}

/**
 * The noun of every generated group, singular as `gh issue list` and `kubectl get pod` have it.
 * A path's first segment is read through this table (`/v1/capabilities/:id` is `baton grant
 * revoke`, the SDK's `GrantClient.revoke` and the `revoke_grant` tool), and dispatch reads the
 * older words through it, so each alias is declared once, here.
 */
export const GROUP_NOUNS = {
  a2a: {},
  budget: {},
  compute: {},
  dashboard: {},
  grant: { was: ['capabilities'], actions: { delete: 'revoke' } },
  guide: { was: ['guides'] },
  handoff: {},
  home: {},
  hop: { was: ['hops'] },
  hub: {},
  me: {},
  message: { was: ['messages'], actions: { create: 'send' } },
  principal: { was: ['principals'] },
  resource: { was: ['resources'] },
  transfer: {},
} as const satisfies Record<string, GroupNoun>

const NOUN_OF = new Map<string, string>(
  Object.entries(GROUP_NOUNS as Record<string, GroupNoun>).flatMap(([noun, { was = [] }]) =>
    [noun, ...was].map((w) => [w, noun] as const),
  ),
)

/**
 * A group and action as typed, in the words of the table: `['capabilities', 'delete']` →
 * `['grant', 'revoke']`; a word the table does not know passes unchanged.
 */
export function resolveWords(group: string, action?: string): [string, string | undefined] {
  const noun = NOUN_OF.get(group)
  if (!noun) return [group, action]
  const actions: Readonly<Record<string, string>> =
    (GROUP_NOUNS as Record<string, GroupNoun>)[noun]?.actions ?? {}
  return [noun, action === undefined ? undefined : (actions[action] ?? action)]
}

/** The older words, one line each, as the top-level help lists them once. */
export function aliasLines(): string[] {
  return Object.entries(GROUP_NOUNS as Record<string, GroupNoun>).flatMap(([noun, g]) =>
    (g.was ?? []).map((w) => {
      const renamed = Object.entries(g.actions ?? {}).map(
        ([from, to]) => `${w} ${from} → ${noun} ${to}`,
      )
      return [`${w} → ${noun}`, ...renamed].join(', ')
    }),
  )
}

/**
 * The admission words of `baton admin`, each an alias of a generated command: the words it runs,
 * and a decision it adds as the last argument (`admin approve P` is `admin principal decide P
 * approve`). `list` reads every page unless `--limit` or `--cursor` asks for one.
 */
export const ADMISSION = {
  list: { words: ['principal', 'list'] },
  show: { words: ['principal', 'read'] },
  approve: { words: ['principal', 'decide'], decision: 'approve' },
  reject: { words: ['principal', 'decide'], decision: 'reject' },
  suspend: { words: ['principal', 'decide'], decision: 'suspend' },
} as const satisfies Record<string, { words: readonly [string, string]; decision?: string }>

/**
 * The commands that are not one operation each (every other command is generated from the
 * operation registry): how each runs, its line of help, the words completion offers after it,
 * and whether it prints JSON (so `--json` makes it the compact wire form). Dispatch, the top-level
 * help and completion all read this one table. Each module is imported only when its command
 * runs, so `baton --version` loads almost nothing.
 */
export const HANDWRITTEN: Record<
  string,
  { run: Command; summary: string; next: readonly string[]; printsJson: boolean }
> = {
  serve: {
    run: async (argv, io) => (await import('./serve.js')).serveCommand(argv, io),
    summary: 'run the hub (SQLite under ./data unless DATABASE_URL is set)',
    next: [],
    printsJson: true,
  },
  dev: {
    run: async (argv, io) => (await import('./dev-command.js')).devCommand(argv, io),
    summary:
      'a hub for a first look: open admission, a fresh admin token, a signed-in dashboard link',
    next: [],
    printsJson: true,
  },
  backup: {
    run: async (argv, io) => (await import('./backup-command.js')).backupCommand(argv, io),
    summary: 'copy a running SQLite hub consistently: backup --out FILE [--data-dir D]',
    next: ['--out', '--data-dir'],
    printsJson: true,
  },
  restore: {
    run: async (argv, io) => (await import('./backup-command.js')).restoreCommand(argv, io),
    summary: 'put a backup back while no hub runs: restore --from FILE [--data-dir D] [--kek K]',
    next: ['--from', '--data-dir', '--kek'],
    printsJson: true,
  },
  mcp: {
    run: async (argv, io) => (await import('./mcp-command.js')).mcpCommand(argv, io),
    summary: 'an MCP server over stdio that calls a hub',
    next: ['--hub', '--identity'],
    printsJson: true,
  },
  receipt: {
    run: async (argv, io) => (await import('./receipt-command.js')).receiptCommand(argv, io),
    summary: 'verify a saved message receipt against the hub key (discovery or a JWK file)',
    next: ['verify'],
    printsJson: false,
  },
  identity: {
    run: async (argv, io) => (await import('./identity-command.js')).identityCommand(argv, io),
    summary: 'make an agent identity (an Ed25519 key and its did:key principal)',
    next: ['init'],
    printsJson: true,
  },
  request: {
    run: async (argv, io) => (await import('./request-command.js')).requestCommand(argv, io),
    summary:
      'send one signed request: request <discovery-url> <identity-file> METHOD PATH [body-file]',
    next: [],
    printsJson: true,
  },
  admin: {
    run: async (argv, io) => (await import('./admin-command.js')).adminCommand(argv, io),
    summary: 'the operator: admission (admin API or the hub database) and the admin operations',
    next: Object.keys(ADMISSION),
    printsJson: false,
  },
  runtime: {
    run: async (argv, io) => (await import('./runtime-command.js')).runtimeCommand(argv, io),
    summary: 'a destination runtime: claims, verifies, runs and meters transferred agents',
    next: [],
    printsJson: true,
  },
  context: {
    run: async (argv, io) => (await import('./context-command.js')).contextCommand(argv, io),
    summary: 'make, sign, verify and digest signed handoff contexts (offers and statuses)',
    next: [],
    printsJson: true,
  },
  completion: {
    run: async (argv, io) => (await import('./completion.js')).completionCommand(argv, io),
    summary: 'print a shell completion script: completion bash|zsh|fish',
    next: ['bash', 'zsh', 'fish'],
    printsJson: false,
  },
}
