import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  parseDictionary,
  type SfDictionary,
  type SfInnerList,
  StructuredFieldError,
  serializeDictionary,
  serializeInnerList,
} from './structured-fields.js'

describe('structured fields (RFC 8941 subset)', () => {
  const key = fc.stringMatching(/^[a-z*][a-z0-9_.*-]{0,8}$/)
  const sfString = fc.stringMatching(/^[\x20-\x7e]{0,20}$/)
  const bare = fc.oneof(
    fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 }),
    sfString,
    fc.boolean(),
    fc.uint8Array({ maxLength: 40 }),
  )
  const params = fc.uniqueArray(fc.tuple(key, bare), { selector: ([k]) => k, maxLength: 4 })

  test('an inner list round-trips through serialize and parse', () => {
    fc.assert(
      fc.property(fc.array(sfString, { maxLength: 6 }), params, (items, ps) => {
        const list: SfInnerList = {
          items: items.map((value) => ({ value, params: [] })),
          params: ps,
        }
        const text = `sig1=${serializeInnerList(list)}`
        const parsed = parseDictionary(text)
        assert.equal(parsed.length, 1)
        assert.equal(`sig1=${serializeInnerList(parsed[0]![1] as SfInnerList)}`, text)
      }),
    )
  })

  test('malformed dictionaries are refused', () => {
    for (const bad of [
      'sig1=(',
      'sig1=("a"',
      'sig1=("a");created=1.5',
      'sig1=("a" "b)',
      'Sig1=("a")',
      'sig1=:abc:',
      'sig1=("a"),',
      'sig1=("a");keyid="x\\y"',
      'sig1=("a")  junk',
      'sig1=("a"\t"b")',
      'sig1=("é")',
      'sig1=(1234567890123456)',
    ]) {
      assert.throws(() => parseDictionary(bad), StructuredFieldError, bad)
    }
  })

  test('the parser never throws anything but StructuredFieldError', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        try {
          parseDictionary(s)
        } catch (e) {
          assert.ok(e instanceof StructuredFieldError)
        }
      }),
    )
  })

  test('a dictionary of items and inner lists serializes as RFC 8941 §4.1.2 writes it', () => {
    assert.equal(
      serializeDictionary([
        ['sig1', { value: new Uint8Array([1, 2]), params: [] }],
        ['flag', { value: true, params: [['a', 1]] }],
        ['list', { items: [{ value: 'x', params: [] }], params: [['keyid', 'k']] }],
        ['tok', { value: { token: 'abc' }, params: [] }],
      ]),
      'sig1=:AQI=:, flag;a=1, list=("x");keyid="k", tok=abc',
    )
    for (const bad of [
      [['Sig', { value: 1, params: [] }]],
      [['a', { value: 1.5, params: [] }]],
      [['a', { value: 'é', params: [] }]],
      [['a', { value: { token: '1x' }, params: [] }]],
      [['a', { value: 1, params: [['B', 1]] }]],
    ] as SfDictionary[]) {
      assert.throws(() => serializeDictionary(bad), StructuredFieldError)
    }
  })
})
