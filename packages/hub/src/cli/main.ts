import { aliasLines, HANDWRITTEN as commands } from './commands.js'
import type { Io } from './io.js'

// Each hand-written subcommand, the generated commands (found and run from the index the build
// writes, without the operation registry) and the error reporting are imported only when
// needed, so `baton --version` loads only this file.
const stdio: Io = {
  stdout: (s) => process.stdout.write(s.endsWith('\n') ? s : `${s}\n`),
  stderr: (s) => process.stderr.write(s.endsWith('\n') ? s : `${s}\n`),
}

/** The top-level help: the hand-written commands, then every generated group and its actions. */
export async function usage(): Promise<string> {
  const tree = await (await import('./command-index.js')).loadCommandIndex()
  const group = (name: string, list: string[]) => `  ${name.padEnd(12)} ${list.join(', ')}`
  return `baton <command> [options]

${Object.entries(commands)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

Operations of the hub, one command each (baton <group> <command> --hub URL …):
${tree.groups.map(([name, list]) => group(name, list)).join('\n')}

Operator operations (baton admin <group> <command> --admin-token T …):
${tree.admin.map(([name, list]) => group(name, list)).join('\n')}

Older words still answer, as aliases: ${aliasLines().join('; ')}.

Run baton <command> --help, or baton <group> <command> --help, for the options; baton --version
prints the version.
Exit codes: 0 ok, 1 refused (4xx), 2 failed (5xx or network), 64 usage.`
}

/** One JSON value per line, compact; text that is not JSON passes unchanged. */
function compactJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text))
  } catch {
    return text
  }
}

/** The `baton` command: dispatches to a subcommand and answers the exit code. */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  const [name, ...rest] = argv
  if (!name) {
    // No command is a usage error: its help goes where errors go, as `gh` and `nats` do.
    io.stderr(await usage())
    return 64
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    io.stdout(await usage())
    return 0
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout((await import('../version.js')).VERSION)
    return 0
  }
  try {
    const command = commands[name]
    if (command?.printsJson) {
      // These print JSON already; `--json` makes it the compact wire form, as everywhere else.
      const json = rest.includes('--json')
      const out: Io = json ? { ...io, json, stdout: (s) => io.stdout(compactJson(s)) } : io
      return await command.run(
        rest.filter((a) => a !== '--json'),
        out,
      )
    }
    if (command) return await command.run(rest, io)
    if (name === 'compute' && rest[0] === 'run') {
      // `compute run program.json --wait` extends the generated command; its flags alone run it.
      const ran = await (await import('./compute-command.js')).computeRunCommand(rest.slice(1), io)
      if (ran !== undefined) return ran
    }
    const [{ loadCommandIndex }, { runGroup, treeOf }] = await Promise.all([
      import('./command-index.js'),
      import('./run-command.js'),
    ])
    const index = await loadCommandIndex()
    const tree = treeOf(index.commands)
    const code = await runGroup(tree.groups, argv, io, false, tree.admin, index)
    if (code !== undefined) return code
    const { didYouMean } = await import('./io.js')
    const known = [...Object.keys(commands), ...tree.groups.keys(), 'admin', 'version']
    io.stderr(
      `baton: unknown command ${JSON.stringify(name)}${didYouMean(name, known)}\n\n${await usage()}`,
    )
    return 64
  } catch (error) {
    const { rephraseParseError } = await import('./run-command.js')
    const { reportError } = await import('./io.js')
    return reportError(rephraseParseError(name, error, []), io, rest.includes('--json'))
  }
}
