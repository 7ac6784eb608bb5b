import { z } from 'zod'
import { AUTH_KINDS } from '../ops/auth-kinds.js'
import { type CliSpec, defaultConfig, inputSchemas, type Operation } from '../ops/operation.js'
import { OPERATIONS } from '../ops/registry.js'
import type { CliField, CommandEntry, Kind } from './command-index.js'
import { resolveWords } from './commands.js'
import { type CommandTree, flagName, treeOf } from './run-command.js'

// Finding, helping and running a command read the index the build writes (run-command.ts); this
// makes that index from the registry: each operation's command words, and its input schemas as
// typed flags.
export type { CliField, CommandEntry } from './command-index.js'
export {
  COMMON_FLAGS,
  type CommandTree,
  commandFlags,
  commandHelp,
  commonFlags,
  flagName,
  groupHelp,
  parseCommandArgs,
  parseTime,
  rephraseParseError,
  runGenerated,
  runGroup,
} from './run-command.js'

/** One generated command: its entry in the index, and the operation it was made from. */
export interface CliCommand extends CommandEntry {
  op: Operation
}

const PREFIXES = new Set(['v1', 'services', 'admin', '.well-known'])

function spec(op: Operation): CliSpec {
  if (!op.cli) return {}
  return Array.isArray(op.cli) ? { name: op.cli as readonly [string, string] } : (op.cli as CliSpec)
}

/**
 * An operation's command words: declared, or derived from its path — the first fixed segment
 * after the version prefix names the group, through the noun table (`resources` → `resource`);
 * the other fixed segments, or else the method, name the action (`GET /v1/resources/:id/history`
 * → `resource history`, `PATCH …/:id` → `update`).
 */
export function commandWords(op: Operation): readonly [string, string] {
  const declared = spec(op).name
  if (declared) return declared
  const fixed = op.path
    .split('/')
    .filter((s) => s && !s.startsWith(':') && !PREFIXES.has(s))
    .map(flagName)
  const [segment = op.name, ...rest] = fixed
  const [group] = resolveWords(segment)
  if (rest.length > 0) return [group, resolveWords(segment, rest.join('-'))[1]!]
  const endsInParam = /\/:[^/]+$/.test(op.path)
  const byMethod = {
    GET: endsInParam ? 'read' : 'list',
    POST: 'create',
    PUT: 'write',
    PATCH: 'update',
    DELETE: 'delete',
  } as const
  return [group, resolveWords(segment, byMethod[op.method])[1]!]
}

interface JsonSchema {
  type?: string | string[]
  format?: string
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  anyOf?: JsonSchema[]
}

function kindOf(s: JsonSchema): { kind: Kind; type: string; time?: boolean } {
  const names = s.enum?.every((v) => typeof v === 'string') ? s.enum : undefined
  if (names) {
    return { kind: 'string', type: names.join('|') }
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : []
  if (types.length === 1) {
    const t = types[0]!
    if (t === 'string' && s.format === 'date-time') {
      return { kind: 'string', type: 'time|duration', time: true }
    }
    if (t === 'string') return { kind: 'string', type: 'string' }
    const items = t === 'array' && s.items ? kindOf(s.items) : undefined
    if (items?.type.includes('|')) return { kind: 'json', type: `json [${items.type}]` }
    if (t === 'integer' || t === 'number') return { kind: 'number', type: t }
    if (t === 'boolean') return { kind: 'boolean', type: 'boolean' }
    return { kind: 'json', type: `json ${t}` }
  }
  const variants = s.anyOf?.map(kindOf)
  if (variants?.every((v) => v.kind === 'string')) return { kind: 'string', type: 'string' }
  return { kind: 'json', type: 'json' }
}

/** The objects an input may be: itself, or each branch of a union of objects. */
function objectsOf(schema: z.ZodType | undefined): z.ZodObject[] {
  let s: unknown = schema
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = s.unwrap()
  if (s instanceof z.ZodObject) return [s]
  if (s instanceof z.ZodUnion) return (s.options as z.ZodType[]).flatMap(objectsOf)
  return []
}

/**
 * A command's flags for one part of the input: every field of every shape the part may take
 * (a union's branches share one set of flags), required when every shape requires it, and a
 * field that is a different constant in each shape (a discriminator) takes any of them.
 */
function fieldsOf(schema: z.ZodType | undefined, part: CliField['part']): CliField[] {
  const shapes = objectsOf(schema).map(
    (obj) => z.toJSONSchema(obj, { io: 'input', unrepresentable: 'any' }) as JsonSchema,
  )
  const names = [...new Set(shapes.flatMap((j) => Object.keys(j.properties ?? {})))]
  return names.map((name) => {
    const each = shapes.flatMap((j) => (j.properties?.[name] ? [j.properties[name]] : []))
    const consts = each.map((e) => e.const)
    const s: JsonSchema =
      each.length > 1 && consts.every((c) => typeof c === 'string')
        ? { ...each[0], const: undefined, enum: [...new Set(consts)] }
        : each[0]!
    return {
      name,
      flag: flagName(name),
      part,
      ...kindOf(s),
      required: part === 'params' || shapes.every((j) => j.required?.includes(name)),
      ...(s.description ? { description: s.description } : {}),
    }
  })
}

/** Whether a body, when there is one, is an object (or a union of objects) of fields. */
function bodyKind(op: Operation): CommandEntry['body'] {
  if (!op.body) return 'none'
  return objectsOf(inputSchemas(op, defaultConfig()).body).length > 0 ? 'fields' : 'whole'
}

/** Operations whose bodies may be large (a configured or above-default limit) show the upload. */
function isUpload(op: Operation): boolean {
  return typeof op.bodyLimit === 'function' || (op.bodyLimit ?? 0) > 1024 * 1024
}

/** The command an operation becomes. */
export function toCommand(op: Operation): CliCommand {
  // The CLI publishes a hub's default limits; the hub it reaches checks its own.
  const schemas = inputSchemas(op, defaultConfig())
  const cli = spec(op)
  return {
    words: commandWords(op),
    admin: AUTH_KINDS[op.auth].cli.admin,
    positionals: fieldsOf(schemas.params, 'params'),
    fields: [...fieldsOf(schemas.query, 'query'), ...fieldsOf(schemas.body, 'body')],
    aliases: cli.aliases ?? {},
    name: op.name,
    summary: op.summary,
    method: op.method,
    path: op.path,
    auth: op.auth,
    defaults: cli.defaults ?? {},
    ...(cli.pages ? { pages: cli.pages } : {}),
    idempotencyKey: op.idempotencyKey === true,
    body: bodyKind(op),
    upload: isUpload(op),
    text: cli.text !== undefined,
    // seed 000: a client reads live discovery before it submits compute.
    freshDiscovery: op.errors.includes('compute_unavailable'),
    op,
  }
}

/** Every generated command, one per operation of the registry. */
export function generatedCommands(ops: readonly Operation[] = OPERATIONS): CliCommand[] {
  return ops.map(toCommand)
}

/** Groups the generated commands: agent-facing ones at the top, operator ones under `admin`. */
export function commandTree(commands: CliCommand[] = generatedCommands()): CommandTree<CliCommand> {
  return treeOf(commands)
}
