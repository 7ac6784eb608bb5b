import type { Io } from './io.js'

// Each subcommand, and the error reporting (which loads the protocol's schemas), is imported only
// when needed, so `baton --help` and `baton --version` load nothing but this file.
const stdio: Io = {
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
}

type Command = (argv: string[], io: Io) => Promise<number>

const commands: Record<string, { run: Command; summary: string }> = {
  serve: {
    run: async (argv, io) => (await import('./serve.js')).serveCommand(argv, io),
    summary: 'run the hub (SQLite under ./data unless DATABASE_URL is set)',
  },
  dev: {
    run: async (argv, io) => (await import('./dev-command.js')).devCommand(argv, io),
    summary:
      'a hub for a first look: open admission, a fresh admin token, a signed-in dashboard link',
  },
  handoff: {
    run: async (argv, io) => (await import('./handoff-command.js')).handoffCommand(argv, io),
    summary: 'create, read, advance and wait on token handoffs',
  },
  mcp: {
    run: async (argv, io) => (await import('./mcp-command.js')).mcpCommand(argv, io),
    summary: 'an MCP server over stdio that calls a hub',
  },
  receipt: {
    run: async (argv, io) => (await import('./receipt-command.js')).receiptCommand(argv, io),
    summary: 'verify a saved message receipt against the hub key (discovery or a JWK file)',
  },
  identity: {
    run: async (argv, io) => (await import('./identity-command.js')).identityCommand(argv, io),
    summary: 'make an agent identity (an Ed25519 key and its did:key principal)',
  },
  request: {
    run: async (argv, io) => (await import('./request-command.js')).requestCommand(argv, io),
    summary:
      'send one signed request: request <discovery-url> <identity-file> METHOD PATH [body-file]',
  },
  admin: {
    run: async (argv, io) => (await import('./admin-command.js')).adminCommand(argv, io),
    summary: 'approve, reject or suspend principals (admin API or the hub database)',
  },
  transfer: {
    run: async (argv, io) => (await import('./transfer-command.js')).transferCommand(argv, io),
    summary: 'session transfers (seed 004): snapshot, token, provision, activate, status',
  },
  runtime: {
    run: async (argv, io) => (await import('./runtime-command.js')).runtimeCommand(argv, io),
    summary: 'a destination runtime: claims, verifies, runs and meters transferred agents',
  },
  context: {
    run: async (argv, io) => (await import('./context-command.js')).contextCommand(argv, io),
    summary: 'make, sign, verify and digest signed handoff contexts (offers and statuses)',
  },
}

const USAGE = `baton <command> [options]

${Object.entries(commands)
  .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
  .join('\n')}

Run baton <command> --help for a command's options; baton --version prints the version.`

/** The `baton` command: dispatches to a subcommand and answers the exit code. */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  const [name, ...rest] = argv
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(USAGE)
    return name ? 0 : 64
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout((await import('../version.js')).VERSION)
    return 0
  }
  const command = commands[name]
  if (!command) {
    io.stderr(`baton: unknown command ${JSON.stringify(name)}\n\n${USAGE}`)
    return 64
  }
  try {
    return await command.run(rest, io)
  } catch (error) {
    const code = (error as { code?: string })?.code
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`baton ${name}: ${(error as Error).message}`)
      return 64
    }
    const { reportError } = await import('./io.js')
    return reportError(error, io, rest.includes('--json'))
  }
}
