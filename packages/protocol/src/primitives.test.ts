import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import * as root from './index.js'
import * as primitives from './primitives.js'

/** The modules a source imports for their values (type-only imports load nothing). */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^(?:import|export)\s(?!type\s)[^']*?\sfrom\s+'([^']+)'/gm)].map(
    (m) => m[1]!,
  )
}

test('the primitives entry loads no schema library, through any module it imports', () => {
  const dir = import.meta.dirname
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const s of valueImports(path.join(dir, file))) {
      assert.ok(s.startsWith('./'), `${file} imports ${s}`)
      visit(s.slice(2).replace(/\.js$/, '.ts'))
    }
  }
  visit('primitives.ts')
  assert.ok(seen.has('http-signatures.ts') && seen.has('errors.ts'))
})

test('each primitive is the package root’s own, so one BatonError serves both entries', () => {
  const all: Record<string, unknown> = { ...root }
  for (const [name, value] of Object.entries(primitives)) assert.equal(all[name], value, name)
})
