import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'

// STYLE: protocol runs wherever an agent does, so its shipped code reaches for no Node API; the
// key-dependent and hashing steps are the caller's (platform.ts).
test('the shipped protocol sources use no node:* module and no Node global', () => {
  const dir = import.meta.dirname
  const sources = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  assert.ok(sources.length > 5)
  for (const file of sources) {
    const text = readFileSync(path.join(dir, file), 'utf8')
    assert.doesNotMatch(text, /from '(node:)?(crypto|fs|path|os|buffer|util)'|from 'node:/, file)
    assert.doesNotMatch(text, /\bBuffer\.|\bprocess\.[a-z]|\brequire\(/, file)
  }
})
