import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { z } from 'zod'
import {
  booleanFlag,
  MAX_WHOLE_NUMBER,
  parseWholeNumber,
  wholeNumber,
  wholeRangePattern,
} from './codecs.js'

test('the range pattern matches exactly the decimal texts of the range', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 200_000 }),
      (a, b, n) => {
        const [min, max] = a <= b ? [a, b] : [b, a]
        const re = new RegExp(wholeRangePattern(min, max))
        assert.equal(re.test(String(n)), n >= min && n <= max, `${n} in ${min}..${max}`)
      },
    ),
    { numRuns: 3000 },
  )
  const re = new RegExp(wholeRangePattern(0, MAX_WHOLE_NUMBER))
  for (const ok of ['0', '7', '10', MAX_WHOLE_NUMBER.toString()]) assert.ok(re.test(ok), ok)
  for (const bad of ['', '00', '01', '-1', '1e3', '1.0', ' 1', '0x1', '1000000000000000']) {
    assert.equal(re.test(bad), false, bad)
  }
})

test('a whole number is published as exactly what it accepts', () => {
  const limit = wholeNumber({ min: 1, max: 500 })
  assert.equal(limit.parse('500'), 500)
  assert.equal(limit.parse(1), 1)
  for (const bad of ['0', '501', '', '01', '1.5', 'abc', 0, 501, 1.5, '1e2']) {
    assert.equal(limit.safeParse(bad).success, false, String(bad))
  }
  const schema = z.toJSONSchema(limit, { io: 'input' }) as { anyOf: Record<string, unknown>[] }
  assert.deepEqual(schema.anyOf[0], { type: 'integer', minimum: 1, maximum: 500 })
  assert.equal(schema.anyOf[1]?.type, 'string')
  assert.equal(typeof schema.anyOf[1]?.pattern, 'string')
})

test('a flag is true or false, as text or JSON', () => {
  const flag = booleanFlag()
  assert.equal(flag.parse('true'), true)
  assert.equal(flag.parse(false), false)
  for (const bad of ['1', 'yes', '', 'TRUE']) assert.equal(flag.safeParse(bad).success, false, bad)
})

test('a whole number read from text is the one the published codec takes, in every range', () => {
  const text = fc.oneof(
    fc.nat({ max: MAX_WHOLE_NUMBER }).map(String),
    fc.string({ unit: fc.constantFrom('0', '1', '9', '-', '+', '.', 'e', ' ', 'x') }),
    fc.constantFrom('', '00', '007', '1e3', '0x10', ' 1', '1 ', '-0', '9999999999999999'),
  )
  const range = fc.tuple(fc.nat({ max: 2000 }), fc.nat({ max: 2000 })).map(([a, b]) => ({
    min: Math.min(a, b),
    max: Math.max(a, b),
  }))
  fc.assert(
    fc.property(text, fc.option(range, { nil: undefined }), (s, r) => {
      const parsed = wholeNumber(r).safeParse(s)
      assert.equal(parseWholeNumber(s, r), parsed.success ? parsed.data : undefined, s)
    }),
    { numRuns: 2000 },
  )
  assert.equal(parseWholeNumber(null), undefined)
})
