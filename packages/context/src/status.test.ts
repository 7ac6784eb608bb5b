import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { agents, clockAt, T0, trustOf } from '../test/fixtures.js'
import { signOffer } from './offer.js'
import { createDigestRef } from './refs.js'
import { isNonterminalRejection, signStatus, verifyStatus } from './status.js'

const P = 'spiffe://a.example/agent/planner'
const C = 'spiffe://b.example/agent/coder'
const list = await agents([P, C])
const [planner, coder] = list as [(typeof list)[0], (typeof list)[0]]
const trust = trustOf(list)
const offer = signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0 })

describe('statuses', () => {
  test('every state except canceled goes from delegate to delegator', () => {
    for (const state of ['accepted', 'rejected', 'completed', 'failed'] as const) {
      const s = signStatus({ signer: coder.signer, offer: offer.element, state, iat: T0 })
      assert.equal(s.claims.iss, C)
      assert.equal(s.claims.aud, P)
      assert.equal(s.claims.offer, offer.digest)
      assert.equal(s.claims.hop, offer.claims.hop)
      const v = verifyStatus(s.element, {
        trust,
        audience: P,
        offer: offer.element,
        now: clockAt(T0),
      })
      assert.equal(v.ok, true)
    }
    assert.throws(
      () => signStatus({ signer: planner.signer, offer: offer.element, state: 'accepted' }),
      {
        reason: 'invalid-input',
      },
    )
  })

  test('canceled goes from delegator to delegate', () => {
    const s = signStatus({
      signer: planner.signer,
      offer: offer.element,
      state: 'canceled',
      iat: T0,
    })
    assert.equal(s.claims.iss, P)
    assert.equal(s.claims.aud, C)
    const v = verifyStatus(
      { status: s.element },
      { trust, audience: C, offer: offer.element, now: clockAt(T0) },
    )
    assert.equal(v.ok, true)
    assert.throws(
      () => signStatus({ signer: coder.signer, offer: offer.element, state: 'canceled' }),
      {
        reason: 'invalid-input',
      },
    )
  })

  test('reason and detail only on rejected and failed; refs only on completed and failed', () => {
    const f = signStatus({
      signer: coder.signer,
      offer: offer.element,
      state: 'failed',
      reason: 'policy',
      detail: 'x',
    })
    assert.equal(f.claims.reason, 'policy')
    assert.throws(
      () =>
        signStatus({
          signer: coder.signer,
          offer: offer.element,
          state: 'accepted',
          reason: 'policy',
        }),
      { reason: 'invalid-input' },
    )
    assert.throws(
      () =>
        signStatus({
          signer: coder.signer,
          offer: offer.element,
          state: 'accepted',
          refs: [createDigestRef('x')],
        }),
      { reason: 'invalid-input' },
    )
    assert.throws(
      () =>
        signStatus({
          signer: coder.signer,
          offer: offer.element,
          state: 'rejected',
          reason: 'not a code' as never,
        }),
      { reason: 'invalid-input' },
    )
    const uri = signStatus({
      signer: coder.signer,
      offer: offer.element,
      state: 'failed',
      reason: 'urn:example:oom',
    })
    assert.equal(uri.claims.reason, 'urn:example:oom')
  })

  test('verification: audience, future iat, offer binding, signature', () => {
    const s = signStatus({ signer: coder.signer, offer: offer.element, state: 'accepted', iat: T0 })
    const wrong = verifyStatus(s.element, { trust, audience: C, now: clockAt(T0) })
    assert.equal(!wrong.ok && wrong.reason, 'wrong-audience')
    const future = verifyStatus(s.element, { trust, audience: P, now: clockAt(T0 - 61) })
    assert.equal(!future.ok && future.reason, 'stale')
    // a late status still counts: no exp on statuses
    assert.equal(
      verifyStatus(s.element, { trust, audience: P, now: clockAt(T0 + 86_400) }).ok,
      true,
    )
    const other = signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0 })
    const unbound = verifyStatus(s.element, {
      trust,
      audience: P,
      offer: other.element,
      now: clockAt(T0),
    })
    assert.equal(!unbound.ok && unbound.reason, 'policy')
    // a signature character that always changes (the old last two could already be "AA")
    const jws = s.element as string
    const tampered = `${jws.slice(0, -10)}${jws.at(-10) === 'A' ? 'B' : 'A'}${jws.slice(-9)}`
    const bad = verifyStatus(tampered, { trust, audience: P, now: clockAt(T0) })
    assert.equal(!bad.ok && bad.reason, 'bad-signature')
    const untrusted = verifyStatus(s.element, {
      trust: { [P]: planner.publicJwk },
      audience: P,
      now: clockAt(T0),
    })
    assert.equal(!untrusted.ok && untrusted.reason, 'untrusted-key')
    const asOffer = verifyStatus(offer.element, { trust, audience: C, now: clockAt(T0) })
    assert.equal(!asOffer.ok && asOffer.reason, 'bad-signature')
  })

  test('stale and replay rejections are nonterminal', () => {
    for (const [reason, nonterminal] of [
      ['stale', true],
      ['replay', true],
      ['policy', false],
    ] as const) {
      const s = signStatus({
        signer: coder.signer,
        offer: offer.element,
        state: 'rejected',
        reason,
      })
      assert.equal(isNonterminalRejection(s.claims), nonterminal)
    }
  })

  test('COSE statuses verify too', () => {
    const s = signStatus({
      signer: coder.signer,
      offer: offer.element,
      state: 'completed',
      iat: T0,
      format: 'cose',
    })
    assert.ok(s.element instanceof Uint8Array)
    assert.equal(
      verifyStatus(s.element, { trust, audience: P, offer: offer.element, now: clockAt(T0) }).ok,
      true,
    )
  })
})
