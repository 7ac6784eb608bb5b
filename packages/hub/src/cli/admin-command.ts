import { type CommandIndex, loadCommandIndex } from './command-index.js'
import { ADMISSION } from './commands.js'
import { type Io, UsageError } from './io.js'
import { runGroup, treeOf } from './run-command.js'

const USAGE = (
  index: CommandIndex,
) => `baton admin <command> (--hub URL [--admin-token T] | --data-dir D | --database-url U)

  list [--state pending|approved|rejected|suspended]   enrolled principals, oldest first: every
       [--limit N] [--cursor C] [--all]                page, or with --limit or --cursor one page
                                                        and its next_cursor
  show <principal>                                      one principal
  approve <principal>                                   admit a pending (or suspended, rejected) key
  reject <principal>                                    refuse a key
  suspend <principal>                                   stop an admitted key

Each is a shorter name of a command below (list is principal list, approve P is principal decide
P approve). With --hub, the hub's admin API is called with the operator token (--admin-token or
BATON_ADMIN_TOKEN). With --data-dir (SQLite) or --database-url (PostgreSQL) the command runs on
the hub's database directly, through the same operation. Admission is never an MCP tool.

Every operator operation of the admin API is a command of its own:
${index.admin.map(([group, actions]) => `  baton admin ${group} ${actions.join('|')}`).join('\n')}`

/** `--token`, the flag these words took before the generated commands, is `--admin-token`. */
const renamed = (argv: string[]) =>
  argv.map((a) => (a === '--token' ? '--admin-token' : a.replace(/^--token=/, '--admin-token=')))

const SWITCHES = new Set(['--json', '--all', '--help', '-h'])

/** Where the first argument that is no flag and no flag's value stands, or -1. */
function firstArgument(args: string[]): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (!a.startsWith('-')) return i
    if (!SWITCHES.has(a) && !a.includes('=')) i++
  }
  return -1
}

/**
 * `baton admin`: every operator operation as a generated command (`baton admin <group>
 * <command>`), and the admission words as aliases of some of them.
 */
export async function adminCommand(argv: string[], io: Io): Promise<number> {
  const [first, ...rest] = argv
  const index = await loadCommandIndex()
  if (!first || first === '--help' || first === '-h') {
    io.stdout(USAGE(index))
    return first ? 0 : 64
  }
  const tree = treeOf(index.commands)
  const alias = (ADMISSION as Record<string, { words: readonly string[]; decision?: string }>)[
    first
  ]
  if (alias) {
    const args = renamed(rest)
    if (alias.decision) {
      const at = firstArgument(args)
      if (at < 0) throw new UsageError(`admin ${first} needs a principal`)
      args.splice(at + 1, 0, alias.decision)
    }
    // `list` reads every page unless the caller names one.
    const onePage = args.some((a) => /^--(limit|cursor)(=|$)/.test(a))
    if (first === 'list' && !onePage && !args.includes('--all')) args.push('--all')
    return (await runGroup(tree.admin, [...alias.words, ...args], io, true, undefined, index)) ?? 64
  }
  const code = await runGroup(tree.admin, argv, io, true, undefined, index)
  if (code !== undefined) return code
  throw new UsageError(`unknown admin command ${JSON.stringify(first)}\n\n${USAGE(index)}`)
}
