import type { Io } from './io.js'

/** A hand-written command's entry point. */
export type Command = (argv: string[], io: Io) => Promise<number>

/** The admission words of `baton admin` (the admin API's or the database's own decisions). */
export const ADMISSION = ['list', 'show', 'approve', 'reject', 'suspend'] as const

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
    next: ADMISSION,
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
