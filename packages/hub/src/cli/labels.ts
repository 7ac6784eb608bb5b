import type { Invoke } from '../ops/mcp.js'
import type { RemoteOperation } from '../ops/remote.js'
import type { CommandEntry } from './command-index.js'

/**
 * The commands whose human output (without `--json`) shows each agent's label beside its
 * did:key: the listings and chain views, where planner, coder and reviewer must be told apart.
 */
const LABELED = new Set([
  'listMessages',
  'listGrants',
  'listHopInbox',
  'readHop',
  'readHopChain',
  'listTransfers',
  'a2aListTasks',
  'listPrincipals',
])

const DID_KEY = /^did:key:z[1-9A-HJ-NP-Za-km-z]{8,}$/

/** The short form of a did:key the dashboard shows on a narrow screen: `did:key:…` and its end. */
export function shortDid(did: string): string {
  return `did:key:…${did.slice(-4)}`
}

/**
 * An agent as a person reads it: its label beside its short did:key (or its whole identifier
 * when that is not a did:key), or the identifier alone when it has no label.
 */
export function shownAs(id: string, labels: Record<string, string>): string {
  const label = Object.hasOwn(labels, id) ? labels[id] : undefined
  if (label === undefined) return id
  return `${label} (${DID_KEY.test(id) ? shortDid(id) : id})`
}

/** Every did:key string in a JSON value. */
export function didKeysIn(value: unknown, out = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    if (DID_KEY.test(value)) out.add(value)
  } else if (Array.isArray(value)) {
    for (const v of value) didKeysIn(v, out)
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) didKeysIn(v, out)
  }
  return out
}

/** The value with every identifier that has a label shown beside it (`shownAs`). */
export function withLabels(value: unknown, labels: Record<string, string>): unknown {
  if (typeof value === 'string') return shownAs(value, labels)
  if (Array.isArray(value)) return value.map((v) => withLabels(v, labels))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withLabels(v, labels)]))
  }
  return value
}

/** The labels an operator's principal list carries itself, by did:key. */
function labelsInPrincipals(result: unknown): Record<string, string> {
  const labels: Record<string, string> = {}
  const list = (result as { principals?: { principal?: unknown; label?: unknown }[] })?.principals
  for (const p of list ?? []) {
    if (typeof p.principal === 'string' && typeof p.label === 'string')
      labels[p.principal] = p.label
  }
  return labels
}

/** The operation that reads labels, as its command is found in the index. */
const READ_LABELS = 'readLabels'

/**
 * A command's answer as a person reads it: for a listing or chain view, each did:key with its
 * label beside it, the labels read from the hub (`GET /v1/labels`, signed as the command is)
 * or, for the operator's principal list, from the list itself. A label names; the did:key
 * stays beside it, since two agents may share one. Without labels the answer is unchanged.
 */
export async function labeled(
  op: Pick<CommandEntry, 'name' | 'auth'>,
  result: unknown,
  commands: readonly CommandEntry[],
  invoke: (
    op: RemoteOperation,
    input: Parameters<Invoke>[1],
    caller: Parameters<Invoke>[2],
  ) => Promise<unknown>,
  caller: Parameters<Invoke>[2],
): Promise<unknown> {
  if (!LABELED.has(op.name)) return result
  let labels: Record<string, string>
  if (op.auth === 'operator') labels = labelsInPrincipals(result)
  else {
    const dids = [...didKeysIn(result)].slice(0, 100)
    const readLabels = commands.find((c) => c.name === READ_LABELS)
    if (dids.length === 0 || !readLabels) return result
    const answer = (await invoke(
      readLabels,
      { params: {}, query: { principals: dids.join(',') }, body: undefined },
      caller,
    ).catch(() => undefined)) as { labels?: Record<string, string> } | undefined
    labels = answer?.labels ?? {}
  }
  return Object.keys(labels).length === 0 ? result : withLabels(result, labels)
}
