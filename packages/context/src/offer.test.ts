import assert from 'node:assert/strict'
import { test } from 'node:test'
import { agents, clockAt, T0, trustOf } from '../test/fixtures.js'
import { isContextError } from './errors.js'
import { signOffer, toHandoff } from './offer.js'
import { verifyHandoff } from './verify.js'

const P = 'spiffe://a.example/agent/planner'
const C = 'spiffe://b.example/agent/coder'
const list = await agents([P, C])
const planner = list[0]!
const trust = trustOf(list)

test('extension members are signed beside the draft members, and receivers ignore them', async () => {
  const budget = { unit: 'usd', amountMicros: 600_000 }
  const signed = signOffer({
    signer: planner.signer,
    aud: C,
    dialog: 'ctx-7c1e',
    now: clockAt(T0),
    extensions: { budget },
  })
  assert.deepEqual((signed.claims as unknown as Record<string, unknown>).budget, budget)
  for (const format of ['jws', 'cose'] as const) {
    const offer = signOffer({
      signer: planner.signer,
      aud: C,
      dialog: 'ctx-7c1e',
      now: clockAt(T0),
      extensions: { budget },
      format,
    })
    const r = await verifyHandoff(toHandoff(offer), { trust, audience: C, now: clockAt(T0 + 1) })
    assert.equal(r.ok, true, format)
    if (r.ok) assert.deepEqual((r.claims as unknown as Record<string, unknown>).budget, budget)
  }
})

test('an extension member may not name a draft member', () => {
  for (const name of ['aud', 'exp', 'prev', 'refs', 'v']) {
    assert.throws(
      () =>
        signOffer({
          signer: planner.signer,
          aud: C,
          dialog: 'ctx-7c1e',
          now: clockAt(T0),
          extensions: { [name]: 'x' },
        }),
      (e: unknown) => isContextError(e) && e.reason === 'invalid-input',
      name,
    )
  }
})
