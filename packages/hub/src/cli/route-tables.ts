import { z } from 'zod'
import { AUTH_KINDS } from '../ops/auth-kinds.js'
import type { CompositeTool } from '../ops/mcp.js'
import { defaultConfig, inputSchemas, type Operation } from '../ops/operation.js'
import { COMPOSITE_TOOLS, OPERATIONS } from '../ops/registry.js'
import { commandWords } from './generated.js'

/**
 * The route tables of the docs, made from the contracts: a doc marks a table with
 * `<!-- routes: tags=hops -->` (or `prefixes=/v1/transfers,/admin/v1/transfers`) and
 * `<!-- /routes -->`, and the table between is each matching operation's route, input, auth,
 * MCP tool, `baton` command and summary, in the registry's order. A test holds every marked
 * table to what this writes; `npm run docs` writes them.
 */

const AUTH_WORDS = {
  none: 'none',
  'handoff-token': 'handoff token',
  signature: 'signed',
  operator: 'operator',
} as const satisfies Record<keyof typeof AUTH_KINDS, string>

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** `{a, b?}` for an object's fields, each union member's joined by `or`. */
function fieldsOf(schema: z.ZodType | undefined): string {
  let s: unknown = schema
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = s.unwrap()
  if (s instanceof z.ZodUnion) return (s.options as z.ZodType[]).map(fieldsOf).join(' or ')
  if (!(s instanceof z.ZodObject)) return s ? 'JSON' : ''
  const names = Object.entries(s.shape as Record<string, z.ZodType>).map(([name, field]) =>
    field.safeParse(undefined).success ? `${name}?` : name,
  )
  return `{${names.join(', ')}}`
}

function inputOf(op: Operation): string {
  const { query, body } = inputSchemas(op, defaultConfig())
  const parts: string[] = []
  if (query)
    parts.push(
      `?${Object.keys(query.shape)
        .map((k) => `${k}=`)
        .join('&')}`,
    )
  if (body) parts.push(fieldsOf(body))
  return parts.map((p) => `\`${p}\``).join(' ')
}

function toolsOf(op: Operation, composites: readonly CompositeTool[]): string {
  const names = [
    ...(op.tool !== false && AUTH_KINDS[op.auth].mcp !== 'never' ? [op.tool.name] : []),
    ...composites.filter((c) => c.ops.includes(op)).map((c) => c.name),
  ]
  return names.length > 0 ? names.map((n) => `\`${n}\``).join(', ') : '—'
}

function commandOf(op: Operation): string {
  const words = [...(AUTH_KINDS[op.auth].cli.admin ? ['admin'] : []), ...commandWords(op)]
  return `\`baton ${words.join(' ')}\``
}

/** What a marker selects: the operations of some tags, or under some path prefixes. */
export interface RouteSelection {
  tags?: string[]
  prefixes?: string[]
}

/** The operations a marker selects, in the registry's order. */
export function selectOperations(
  selection: RouteSelection,
  ops: readonly Operation[] = OPERATIONS,
): Operation[] {
  return ops.filter(
    (op) =>
      selection.tags?.some((t) => op.tags.includes(t)) ||
      selection.prefixes?.some((p) => op.path === p || op.path.startsWith(`${p}/`)),
  )
}

/** The Markdown table of the selected operations, aligned as a formatter lays it out. */
export function routeTable(selection: RouteSelection): string {
  const rows = selectOperations(selection).map((op) => [
    `\`${op.method} ${op.path.replace(/:(\w+)/g, '{$1}')}\``,
    inputOf(op),
    AUTH_WORDS[op.auth],
    toolsOf(op, COMPOSITE_TOOLS),
    commandOf(op),
    cell(op.summary),
  ])
  const head = ['route', 'input', 'auth', 'MCP tool', 'command', 'what it does']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  return [
    line(head),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.map(line),
  ].join('\n')
}

const MARKER = /<!-- routes: ([^>]*?) -->\n[\s\S]*?<!-- \/routes -->/g

function selectionOf(spec: string): RouteSelection {
  const selection: RouteSelection = {}
  for (const [, key, value] of spec.matchAll(/(tags|prefixes)=(\S+)/g)) {
    // A tag of several words is written with `+` for its spaces (`tags=token+handoffs`).
    selection[key as keyof RouteSelection] = value!.split(',').map((v) => v.replaceAll('+', ' '))
  }
  return selection
}

/** A doc with every marked route table written afresh from the contracts. */
export function fillRouteTables(markdown: string): string {
  return markdown.replace(
    MARKER,
    (_, spec: string) =>
      `<!-- routes: ${spec} -->\n${routeTable(selectionOf(spec))}\n<!-- /routes -->`,
  )
}

/** The specs of a doc's markers, in order. */
export function routeMarkers(markdown: string): string[] {
  return [...markdown.matchAll(MARKER)].map((m) => m[1]!)
}
