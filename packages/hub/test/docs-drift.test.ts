// Docs that name a list the code also holds are checked against the code, so neither can drift.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from './support.js'

const read = (file: string) => readFileSync(path.join(repoRoot, file), 'utf8')

test('docs/dashboard.md has a row for every page of the dashboard, and no other', () => {
  const html = read('packages/hub/src/web/assets/app.html')
  const pages = [...html.matchAll(/data-nav="([a-z0-9-]+)"/g)].map((m) => m[1]!)
  assert.ok(pages.length >= 9, `the dashboard's tabs: ${pages.join(', ')}`)
  const doc = read('docs/dashboard.md')
  const table = doc.slice(doc.indexOf('| page'), doc.indexOf('\n\n', doc.indexOf('| page')))
  const documented = [...table.matchAll(/^\|[^|]+\| `#\/([a-z0-9-]+)`/gm)].map((m) => m[1]!)
  assert.deepEqual(documented, pages)
})

test('docs name token-handoff ids as the hub makes them (ho_…)', () => {
  for (const file of ['README.md', 'docs/cli.md', 'docs/notify.md', 'docs/mcp.md']) {
    assert.doesNotMatch(read(file), /\bh_…/, file)
  }
})
