import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import fc from 'fast-check'
import { canonicalJson } from './canonical-json.js'

const vectors = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../test/vectors/rfc8785.json'), 'utf8'),
)
const double = (hex: string) => Buffer.from(hex, 'hex').readDoubleBE(0)

test('the RFC 8785 example documents canonicalize to their published text', () => {
  for (const doc of vectors.documents) {
    assert.equal(canonicalJson(JSON.parse(doc.input)), doc.canonical, doc.name)
  }
})

test('members sort by UTF-16 code units (RFC 8785 §3.2.3)', () => {
  const input = JSON.parse(vectors.sorting.input)
  const members = vectors.sorting.order.map(
    (k: string) => `${JSON.stringify(k)}:${JSON.stringify(input[k])}`,
  )
  assert.equal(canonicalJson(input), `{${members.join(',')}}`)
})

test('numbers serialize as RFC 8785 Appendix B lists them', () => {
  for (const { ieee, canonical } of vectors.numbers) {
    assert.equal(canonicalJson(double(ieee)), canonical, ieee)
  }
})

test('values JSON cannot hold are refused', () => {
  for (const { ieee, note } of vectors.invalidNumbers) {
    assert.throws(() => canonicalJson(double(ieee)), TypeError, note)
  }
  for (const bad of [undefined, 1n, () => 1, Symbol('s'), [undefined], { a: [Number.NaN] }]) {
    assert.throws(() => canonicalJson(bad), TypeError)
  }
})

test('canonical JSON is a fixed point and ignores member order', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = canonicalJson(value)
      assert.equal(canonicalJson(JSON.parse(text)), text)
      assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)))
    }),
  )
})
