import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { sourcesOf } from './sources.js'

// DESIGN: a feature calls another feature's service, never its store; the dashboard reads
// through operator operations, no SQL; nothing imports the server assembly back (no circles).
const src = path.resolve(import.meta.dirname, '../src')

/** Folders of shared parts, not features: any feature may import them. */
const SHARED = new Set(['store', 'ops', 'events', 'http', 'telemetry', 'net', 'jobs', 'cli', 'mcp'])

interface Edge {
  target: string
  /**
   * `import type` (erased when built) or `import()` (run on demand, after the importer has
   * loaded): neither can meet a module half-evaluated, so neither makes a circle at run time.
   * Type-only circles remain, the store's pair among them (database.ts and transaction.ts name
   * each other's types), and the server assembly's `AppContext` and `Api` types.
   */
  deferred: boolean
  /** An `import type` or `export type` edge. */
  type: boolean
}

/** The relative imports of a source file, static and dynamic, resolved to the files they name. */
function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8')
  const found = [
    ...[...text.matchAll(/^(import|export)(\s+type)?\s[^']*?\sfrom\s+'([^']+)'/gm)].map((m) => ({
      spec: m[3]!,
      deferred: m[2] !== undefined,
      type: m[2] !== undefined,
    })),
    ...[...text.matchAll(/^import\s+'([^']+)'/gm)].map((m) => ({
      spec: m[1]!,
      deferred: false,
      type: false,
    })),
    ...[...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => ({
      spec: m[1]!,
      deferred: true,
      type: false,
    })),
  ]
  return found
    .filter((f) => f.spec.startsWith('.'))
    .map((f) => ({
      target: path.resolve(path.dirname(file), f.spec).replace(/\.js$/, '.ts'),
      deferred: f.deferred,
      type: f.type,
    }))
    .filter((e) => existsSync(e.target))
}

const rel = (file: string) => path.relative(src, file).split(path.sep).join('/')
/** The top folder of a file under src/ (`handoffs`), or '' for a file at the top. */
const folderOf = (file: string) => {
  const parts = rel(file).split('/')
  return parts.length > 1 ? parts[0]! : ''
}
/** A feature's store: its `store.ts` or another `*-store.ts` of its folder (the outbox's). */
const isFeatureStore = (file: string) =>
  !SHARED.has(folderOf(file)) &&
  folderOf(file) !== '' &&
  /(^|-)store\.ts$/.test(path.basename(file))

const files = sourcesOf(src)
const graph = new Map(files.map((f) => [f, importsOf(f)]))

test('no feature imports the store of another feature; it calls that feature’s service', () => {
  const offenders: string[] = []
  for (const [file, edges] of graph) {
    const from = folderOf(file)
    // The composition root builds every service and may hand a store function to a job.
    if (from === '' || SHARED.has(from)) continue
    for (const e of edges) {
      if (isFeatureStore(e.target) && folderOf(e.target) !== from) {
        offenders.push(`${rel(file)} -> ${rel(e.target)}`)
      }
    }
  }
  assert.ok(files.length > 50)
  assert.deepEqual(offenders, [])
})

test('the dashboard (web/) reads through operations: no store, no schema, no query builder', () => {
  const offenders: string[] = []
  for (const [file, edges] of graph) {
    if (folderOf(file) !== 'web') continue
    for (const e of edges) {
      const name = path.basename(e.target)
      if (/(^|-)store\.ts$/.test(name) || rel(e.target) === 'store/schema.ts') {
        offenders.push(`${rel(file)} -> ${rel(e.target)}`)
      }
    }
    if (/from 'kysely'/.test(readFileSync(file, 'utf8'))) offenders.push(`${rel(file)} -> kysely`)
  }
  assert.deepEqual(offenders, [])
})

/** The circles of the import graph, each as `a -> b -> … -> a`; `types` counts type-only edges. */
function circlesOf(types: boolean): string[] {
  const circles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const visit = (file: string, chain: string[]) => {
    state.set(file, 'open')
    for (const e of graph.get(file) ?? []) {
      if (e.deferred && !(types && e.type)) continue
      const at = state.get(e.target)
      if (at === 'open') {
        const start = chain.indexOf(e.target)
        circles.push([...chain.slice(start), file, e.target].map(rel).join(' -> '))
      } else if (at === undefined) visit(e.target, [...chain, file])
    }
    state.set(file, 'done')
  }
  for (const file of files) if (!state.has(file)) visit(file, [])
  return circles
}

test('no import circle between modules at run time', () => {
  assert.deepEqual(circlesOf(false), [])
})

test('no import circle even through type-only imports, but the store pair', () => {
  // database.ts and transaction.ts name each other's types: a transaction runs on a database,
  // and a database opens transactions.
  const pair = 'store/database.ts -> store/transaction.ts -> store/database.ts'
  const reverse = 'store/transaction.ts -> store/database.ts -> store/transaction.ts'
  assert.deepEqual(
    circlesOf(true).filter((c) => c !== pair && c !== reverse),
    [],
  )
})
