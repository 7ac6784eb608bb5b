// Every route a doc names (`GET /v1/hops/{digest}` in a table or a sentence) is one the hub
// serves, and a doc that lists a feature's routes lists every operation of that feature, so the
// route tables cannot drift from the operation registry.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fillRouteTables, routeMarkers } from '../src/cli/route-tables.js'
import { OPERATIONS } from '../src/ops/registry.js'
import { docFiles } from './doc-blocks.js'
import { repoRoot, startTestHub, type TestHub, testStores } from './support.js'

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A route a doc names, where it names it. */
interface DocRoute {
  file: string
  line: number
  method: Method
  /** The path as the hub declares it: `{id}` is `:id`, no query. */
  path: string
}

const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8')

function docRoutes(file: string, text = read(file)): DocRoute[] {
  const routes: DocRoute[] = []
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g)) {
      const p = m[2]!.replace(/\?.*$/, '').replace(/\{(\w+)\}/g, ':$1')
      routes.push({ file, line: i + 1, method: m[1] as Method, path: p })
    }
  })
  return routes
}

/** A path's shape, parameter names aside: `/v1/hops/:digest` and `/v1/hops/{id}` agree. */
const shape = (p: string) => p.replace(/:\w+/g, ':')
const declared = new Set(OPERATIONS.map((op) => `${op.method} ${shape(op.path)}`))

// A table's rows as a formatter may align them: cells trimmed.
const rows = (text: string) =>
  text.split('\n').map((l) =>
    l.startsWith('|')
      ? l
          .split('|')
          .map((c) => c.trim())
          .join('|')
      : l,
  )

test('every route table a doc marks is the one the contracts write (npm run docs)', () => {
  let tables = 0
  for (const file of docFiles()) {
    const text = read(file)
    tables += routeMarkers(text).length
    assert.deepEqual(rows(text), rows(fillRouteTables(text)), `${file}: run npm run docs`)
  }
  assert.ok(tables >= 15, `${tables} marked tables`)
})

test('the reference of every operation lists each operation the hub serves once', () => {
  const tables = read('docs/api.md')
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .join('\n')
  const listed = docRoutes('docs/api.md', tables).map((r) => `${r.method} ${shape(r.path)}`)
  const served = OPERATIONS.map((op) => `${op.method} ${shape(op.path)}`)
  assert.deepEqual([...listed].sort(), [...served].sort())
})

// The routes outside the registry (the JSON-RPC binding, /mcp, the dashboard) are asked of a
// running hub's router; the set of routes is the same on every store.
for (const store of testStores.slice(0, 1)) {
  describe('every route the docs name is served', () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: 'a docs route check admin token 0001' })
    })
    after(() => hub.close())

    test('by an operation of the registry or the hub router', () => {
      const unknown = docFiles()
        .flatMap((f) => docRoutes(f))
        .filter(
          (r) =>
            !declared.has(`${r.method} ${shape(r.path)}`) &&
            !hub.app.hasRoute({ method: r.method, url: r.path }),
        )
        .map((r) => `${r.file}:${r.line}: ${r.method} ${r.path}`)
      assert.deepEqual(unknown, [], 'routes the docs name that the hub does not serve')
    })

    test('a route that is not served is caught', () => {
      const [r] = docRoutes('x.md', 'see `GET /v1/hopz/{digest}` and `DELETE /dashboard/events`')
      assert.ok(r && !declared.has(`${r.method} ${shape(r.path)}`))
      assert.equal(hub.app.hasRoute({ method: 'DELETE', url: '/dashboard/events' }), false)
    })
  })
}
