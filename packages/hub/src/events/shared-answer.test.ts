import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { shareAnswer, sharedAnswerBytes } from './shared-answer.js'

describe('answers many replies share', () => {
  test('are frozen and encoded as JSON once, the first time they are sent', () => {
    const answer = shareAnswer({ state: 'accepted', version: 2, note: 'é' })
    assert.equal(Object.isFrozen(answer), true)
    const first = sharedAnswerBytes(answer)
    assert.equal(first?.toString('utf8'), JSON.stringify(answer))
    assert.equal(sharedAnswerBytes(answer), first, 'the same octets, not encoded again')
  })

  test('anything not marked shared is left to the usual serializer', () => {
    for (const value of [{ state: 'accepted' }, [1, 2], 'text', 3, null, undefined]) {
      assert.equal(sharedAnswerBytes(value), undefined)
    }
  })
})
