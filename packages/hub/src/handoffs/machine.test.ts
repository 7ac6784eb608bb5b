import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import fc from 'fast-check'
import { allowedNext, defaultMachine, isFinal, parseMachine } from './machine.js'

const code = (fn: () => unknown) => {
  try {
    fn()
  } catch (e) {
    assert.ok(e instanceof BatonError)
    return { code: e.code, field: e.context.field }
  }
  assert.fail('expected an error')
}

describe('handoff machine', () => {
  test('default machine: each state moves to any later one, the last three final', () => {
    const m = defaultMachine()
    assert.deepEqual(m.states, ['offered', 'accepted', 'working', 'done', 'failed', 'returned'])
    assert.deepEqual(m.final, ['done', 'failed', 'returned'])
    assert.deepEqual(allowedNext(m, 'offered'), [
      'accepted',
      'working',
      'done',
      'failed',
      'returned',
    ])
    assert.deepEqual(allowedNext(m, 'working'), ['done', 'failed', 'returned'])
    assert.deepEqual(allowedNext(m, 'done'), [])
    assert.equal(isFinal(m, 'returned'), true)
    assert.equal(isFinal(m, 'accepted'), false)
  })

  test("the seed's custom machine: declared transitions, the rest any later state", () => {
    const m = parseMachine(
      {
        states: ['draft', 'review', 'published', 'rejected'],
        final: ['published', 'rejected'],
        transitions: { draft: ['review'] },
      },
      12,
    )
    assert.deepEqual(allowedNext(m, 'draft'), ['review'])
    assert.deepEqual(allowedNext(m, 'review'), ['published', 'rejected'])
    assert.deepEqual(allowedNext(m, 'published'), [])
  })

  test('omitted final makes the last state final', () => {
    const m = parseMachine({ states: ['a', 'b', 'c'] }, 12)
    assert.deepEqual(m.final, ['c'])
  })

  test('invalid machines are invalid_machine naming the field', () => {
    const bad: [object, string][] = [
      [{ states: ['a', 'b', 'a'] }, 'states'],
      [{ states: ['a'] }, 'states'],
      [{ states: Array.from({ length: 13 }, (_, i) => `s${i}`) }, 'states'],
      [{ states: ['a', 'b'], final: ['x'] }, 'final'],
      [{ states: ['a', 'b'], final: ['a'] }, 'final'],
      [{ states: ['a', 'b'], final: ['b', 'b'] }, 'final'],
      [{ states: ['a', 'b'], final: [] }, 'final'],
      [{ states: ['a', 'b', 'c'], transitions: { x: ['c'] } }, 'transitions'],
      [{ states: ['a', 'b', 'c'], transitions: { a: ['x'] } }, 'transitions.a'],
      [{ states: ['a', 'b', 'c'], transitions: { b: ['a'] } }, 'transitions.b'],
      [{ states: ['a', 'b', 'c'], transitions: { b: ['b'] } }, 'transitions.b'],
      [{ states: ['a', 'b', 'c'], transitions: { c: [] } }, 'transitions'],
      [{ states: ['a', 'b', 'c'], final: ['b'] }, 'transitions'],
      [{ states: ['a', 'b', 'c'], transitions: { a: ['b', 'b'] } }, 'transitions.a'],
      [{ final: ['done'] }, 'states'],
      [{ transitions: { offered: ['done'] } }, 'states'],
    ]
    for (const [input, field] of bad) {
      assert.deepEqual(
        code(() => parseMachine(input, 12)),
        { code: 'invalid_machine', field },
        JSON.stringify(input),
      )
    }
  })

  test('property: every accepted machine moves only forward and every non-final state can move', () => {
    const name = fc.constantFrom(
      'a',
      'b',
      'c',
      'd',
      'e',
      'f',
      'g',
      'h',
      'i',
      'j',
      'k',
      'l',
      'm',
      'n',
    )
    fc.assert(
      fc.property(
        fc.uniqueArray(name, { minLength: 1, maxLength: 14 }),
        fc.array(name, { maxLength: 4 }),
        fc.dictionary(name, fc.array(name, { maxLength: 4 }), { maxKeys: 4 }),
        (states, final, transitions) => {
          let m: ReturnType<typeof parseMachine>
          try {
            m = parseMachine({ states, final, transitions }, 12)
          } catch (e) {
            assert.ok(e instanceof BatonError && e.code === 'invalid_machine')
            return
          }
          assert.ok(m.states.length >= 2 && m.states.length <= 12)
          assert.ok(!m.final.includes(m.states[0]!))
          for (const s of m.states) {
            const next = allowedNext(m, s)
            if (isFinal(m, s)) assert.equal(next.length, 0)
            else assert.ok(next.length > 0)
            for (const t of next) assert.ok(m.states.indexOf(t) > m.states.indexOf(s))
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
