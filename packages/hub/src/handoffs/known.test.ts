import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { KnownHandoffs, predictMove } from './known.js'
import { allowedNext, defaultMachine, isFinal, parseMachine } from './machine.js'
import { hashToken } from './tokens.js'

const owner = 'hot_o_owner-token'
const receiver = 'hot_r_receiver-token'

function row(id: string, over: { notify_url?: string | null; machine?: string } = {}) {
  return {
    id,
    owner_token_hash: hashToken(owner),
    receiver_token_hash: hashToken(receiver),
    expires_at: 1000,
    machine: over.machine ?? JSON.stringify(defaultMachine()),
    notify_url: over.notify_url ?? null,
  }
}

describe('known handoffs', () => {
  test('a move is predicted only with a role, before expiry, over an allowed step, unsignalled', () => {
    const known = new KnownHandoffs()
    known.remember(row('a'))
    known.remember(row('b', { notify_url: 'https://example.com/hook' }))
    const a = known.get('a')
    assert.deepEqual(
      { ...predictMove(a, receiver, 'offered', 'accepted', 999), machine: undefined },
      { actor: 'receiver', ended: false, machine: undefined },
    )
    assert.equal(predictMove(a, owner, 'working', 'done', 0)?.actor, 'owner')
    assert.equal(predictMove(a, owner, 'working', 'done', 0)?.ended, true)
    assert.equal(predictMove(a, 'hot_o_another', 'offered', 'accepted', 0), undefined)
    assert.equal(predictMove(a, owner, 'offered', 'accepted', 1000), undefined, 'expired')
    assert.equal(predictMove(a, owner, 'accepted', 'offered', 0), undefined, 'backwards')
    assert.equal(predictMove(a, owner, 'done', 'returned', 0), undefined, 'from a final state')
    assert.equal(predictMove(a, owner, 'offered', 'nowhere', 0), undefined)
    assert.equal(predictMove(known.get('b'), owner, 'offered', 'accepted', 0), undefined)
    assert.equal(predictMove(known.get('c'), owner, 'offered', 'accepted', 0), undefined)
  })

  test('names of object properties are no states', () => {
    const known = new KnownHandoffs()
    known.remember(row('a'))
    for (const from of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      assert.equal(predictMove(known.get('a'), owner, from, 'accepted', 0), undefined)
    }
  })

  test('a prediction agrees with the machine on every step of any custom machine', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { minLength: 2 }),
        fc.nat(),
        fc.nat(),
        (states, i, j) => {
          const machine = parseMachine({ states }, 12)
          const known = new KnownHandoffs()
          known.remember(row('x', { machine: JSON.stringify(machine) }))
          const from = states[i % states.length]!
          const to = states[j % states.length]!
          const predicted = predictMove(known.get('x'), owner, from, to, 0)
          assert.equal(predicted !== undefined, allowedNext(machine, from).includes(to))
          if (predicted) assert.equal(predicted.ended, isFinal(machine, to))
        },
      ),
    )
  })

  test('holds at most its bound, forgetting the oldest first', () => {
    const known = new KnownHandoffs(3)
    for (const id of ['a', 'b', 'c', 'd']) known.remember(row(id))
    assert.equal(known.size, 3)
    assert.equal(known.get('a'), undefined)
    assert.ok(known.get('d'))
    known.forget('d')
    assert.equal(known.get('d'), undefined)
    assert.equal(known.size, 2)
  })
})
