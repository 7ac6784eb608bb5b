import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import * as root from './index.js'
import * as requests from './requests.js'

/** The modules a source imports for their values (type-only imports load nothing). */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^(?:import|export)\s(?!type\s)[^']*?\sfrom\s+'([^']+)'/gm)].map(
    (m) => m[1]!,
  )
}

test('the requests entry loads no schemas: only node, its own modules and protocol primitives', () => {
  const dir = import.meta.dirname
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const s of valueImports(path.join(dir, file))) {
      if (s.startsWith('./')) visit(s.slice(2).replace(/\.js$/, '.ts'))
      else assert.ok(s.startsWith('node:') || s === '@baton/protocol/primitives', `${file}: ${s}`)
    }
  }
  visit('requests.ts')
  assert.ok(seen.has('transport.ts') && seen.has('signing.ts') && seen.has('identity-file.ts'))
})

test('each export of the requests entry is the package root’s own', () => {
  const all: Record<string, unknown> = { ...root }
  for (const [name, value] of Object.entries(requests)) assert.equal(all[name], value, name)
})
