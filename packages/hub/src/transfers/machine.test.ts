import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { BatonError, TRANSFER_STATES } from '@baton/protocol'
import type { TransferRow } from '../store/schema.js'
import { TRANSITIONS, transition, WriteSet } from './machine.js'

const row = (state: string): TransferRow => ({
  id: 'tr_AAAAAAAAAAAAAAAAAAAAAA',
  owner: 'did:key:owner',
  state,
  version: 3,
  idempotency_key: null,
  checksum: 'sha-256:x',
  snapshot_bytes: 10,
  tier: null,
  budget_micros: null,
  rate_micros: null,
  spent_micros: 0,
  runtime: null,
  lease_instance: null,
  lease_ends_at: null,
  created_at: 1,
  updated_at: 1,
  expires_at: 100,
  grace_ends_at: null,
  end_reason: null,
})

describe('transfer transitions', () => {
  test('the table names only real states, and nothing leaves terminated', () => {
    for (const [name, t] of Object.entries(TRANSITIONS)) {
      for (const s of t.from) assert.ok(TRANSFER_STATES.includes(s), `${name} from ${s}`)
      assert.ok(!(t.from as readonly string[]).includes('terminated'), name)
      if (t.to !== null) assert.ok(TRANSFER_STATES.includes(t.to), `${name} to ${t.to}`)
    }
  })

  test('a transition from a state it does not leave is a conflict and changes nothing', () => {
    const w = new WriteSet(50)
    const r = row('staged')
    w.logs.set(r.id, [])
    const refusal = transition(w, r, 'active', { actor: 'a', data: {} })
    assert.ok(refusal instanceof BatonError)
    assert.equal(refusal.code, 'transfer_state_conflict')
    assert.deepEqual(r, row('staged'))
    assert.deepEqual([w.events.length, w.dirty.size, w.logs.get(r.id)!.length], [0, 0, 0])
  })

  test('a transition moves the row, bumps its version and writes its event once', () => {
    const w = new WriteSet(50)
    const r = row('provisioned')
    w.logs.set(r.id, [])
    const applied = transition(w, r, 'claimed', {
      actor: 'did:key:runtime',
      patch: { runtime: 'did:key:runtime' },
      data: { tier: null },
    })
    assert.ok(!(applied instanceof BatonError))
    assert.deepEqual(
      [r.state, r.version, r.updated_at, r.runtime],
      ['provisioned', 4, 50, 'did:key:runtime'],
    )
    assert.deepEqual(
      [applied.event.seq, applied.event.type, applied.event.from_state, applied.event.to_state],
      [4, 'claimed', 'provisioned', 'provisioned'],
    )
    assert.deepEqual(w.events, [applied.event])
    assert.deepEqual(w.logs.get(r.id), [applied.event])
    assert.ok(w.dirty.has(r.id))
  })
})
