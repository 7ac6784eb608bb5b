import { readFileSync, writeFileSync } from 'node:fs'

/** The names of the generated commands, by group: all the top-level help needs. */
export interface CommandIndex {
  groups: [string, string[]][]
  admin: [string, string[]][]
}

const FILE = new URL('./commands.json', import.meta.url)

/** The index of a command tree, as the build writes it and the help reads it. */
export function indexOf(tree: {
  groups: Map<string, { words: readonly [string, string] }[]>
  admin: Map<string, { words: readonly [string, string] }[]>
}): CommandIndex {
  const list = (m: typeof tree.groups): [string, string[]][] =>
    [...m].map(([name, commands]) => [name, commands.map((c) => c.words[1])])
  return { groups: list(tree.groups), admin: list(tree.admin) }
}

/**
 * The command index: read from the file the build writes beside this module, so `baton --help`
 * does not load the operation registry (and every schema in it); from sources, where there is
 * no such file, it is made from the registry itself.
 */
export async function loadCommandIndex(): Promise<CommandIndex> {
  try {
    return JSON.parse(readFileSync(FILE, 'utf8')) as CommandIndex
  } catch {
    return indexOf((await import('./generated.js')).commandTree())
  }
}

/** Writes the index of the registry's commands beside this module (run by the build). */
export async function writeCommandIndex(): Promise<void> {
  const index = indexOf((await import('./generated.js')).commandTree())
  writeFileSync(FILE, `${JSON.stringify(index)}\n`)
}
