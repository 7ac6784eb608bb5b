import { readFileSync, writeFileSync } from 'node:fs'
import type { Auth, CliSpec, Operation } from '../ops/operation.js'

/** How a flag's text becomes a value: as it is, a number, a switch, or JSON (inline or `@file`). */
export type Kind = 'string' | 'number' | 'boolean' | 'json'

/** One input field of an operation as a command-line flag. */
export interface CliField {
  name: string
  flag: string
  part: 'params' | 'query' | 'body'
  kind: Kind
  /** The type as help shows it: `string`, `integer`, `a|b`, `json`. */
  type: string
  /** A date-time: an ISO 8601 time, or a duration from now (`90s`, `15m`, `2h`, `7d`). */
  time?: boolean
  required: boolean
  description?: string
}

/**
 * One generated command as data: what dispatch, help, completion and a run over HTTP need of its
 * operation, so none of them loads the operation registry (and the schema of every contract).
 */
export interface CommandEntry {
  words: readonly [string, string]
  /** Whether it sits under `baton admin`. */
  admin: boolean
  /** Path parameters, in path order: positional arguments (or flags). */
  positionals: CliField[]
  fields: CliField[]
  /** Extra flag → field, from the operation's `cli.aliases`; `@field` reads a JSON file. */
  aliases: Record<string, string>
  /** The operation it runs: its name, summary, route and auth. */
  name: string
  summary: string
  method: Operation['method']
  path: string
  auth: Auth
  /** A field's value when the command line gives none, as the flag's text. */
  defaults: Record<string, string>
  /** How the listing pages, for `--all`. */
  pages?: CliSpec['pages']
  idempotencyKey: boolean
  /** Whether it takes a body, and whether that body is an object (or union of them) of fields. */
  body: 'none' | 'fields' | 'whole'
  /** Whether its body may be large (a configured or above-default limit): the upload is shown. */
  upload: boolean
  /** Whether its human output is a text of its contract's (`cli.text`), not the answer. */
  text: boolean
  /**
   * Whether its answer depends on the hub's live runtime availability (it may answer
   * `compute_unavailable`): the discovery it signs for is then revalidated, never taken from
   * the cache however fresh.
   */
  freshDiscovery: boolean
}

/** The generated commands, by group: dispatch, help and completion read this, never the registry. */
export interface CommandIndex {
  groups: [string, string[]][]
  admin: [string, string[]][]
  commands: CommandEntry[]
}

const FILE = new URL('./commands.json', import.meta.url)

/** The index of a command tree, as the build writes it and every command reads it. */
export function indexOf(tree: {
  groups: Map<string, CommandEntry[]>
  admin: Map<string, CommandEntry[]>
}): CommandIndex {
  const list = (m: typeof tree.groups): [string, string[]][] =>
    [...m].map(([name, commands]) => [name, commands.map((c) => c.words[1])])
  const entry = ({ op: _op, ...data }: CommandEntry & { op?: unknown }): CommandEntry => data
  return {
    groups: list(tree.groups),
    admin: list(tree.admin),
    commands: [...tree.groups.values(), ...tree.admin.values()].flat().map(entry),
  }
}

/**
 * The command index: read from the file the build writes beside this module, so no command
 * loads the operation registry (and every schema in it) to be found, helped or run; from
 * sources, where there is no such file, it is made from the registry itself.
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
