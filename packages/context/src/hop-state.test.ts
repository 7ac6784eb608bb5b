import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { agents, T0, trustOf } from '../test/fixtures.js'
import { applyStatus, HandoffAgent, nextHopState, retransmitDelayMs } from './hop-state.js'
import { signOffer, toHandoff } from './offer.js'
import { createDigestRef } from './refs.js'
import { MemoryReplayStore } from './replay-store.js'
import { signStatus } from './status.js'

const PLANNER = 'spiffe://a.example/agent/planner'
const CODER = 'spiffe://b.example/agent/coder'
const TESTER = 'spiffe://b.example/agent/tester'

async function setup(start = T0) {
  const list = await agents([PLANNER, CODER, TESTER])
  const trust = trustOf(list)
  let t = start * 1000
  const clock = { now: () => t, set: (s: number) => (t = s * 1000) }
  const [p, c, te] = list as [(typeof list)[0], (typeof list)[0], (typeof list)[0]]
  const planner = new HandoffAgent({ signer: p.signer, trust, now: clock.now })
  const coder = new HandoffAgent({ signer: c.signer, trust, now: clock.now })
  const tester = new HandoffAgent({ signer: te.signer, trust, now: clock.now })
  return { planner, coder, tester, clock, signers: { p, c, te }, trust }
}

describe('delegate hop state', () => {
  test('a new offer is received undecided, then accepted once', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    const r = await coder.receive(handoff)
    assert.equal(r.kind, 'new')
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'received')
    const s = await coder.accept(offer.claims)
    assert.equal(s.claims.state, 'accepted')
    assert.equal(s.claims.offer, offer.digest)
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'accepted')
    await assert.rejects(coder.accept(offer.claims), { reason: 'lifecycle' })
    await assert.rejects(coder.reject(offer.claims, 'policy'), { reason: 'lifecycle' })
  })

  test('at most one of completed and failed; completed implies accepted', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    const done = await coder.complete(offer.claims)
    assert.equal(done.claims.state, 'completed')
    const hop = await coder.receivedHop(offer.claims)
    assert.equal(hop?.decision, 'accepted')
    assert.equal(hop?.outcome, 'completed')
    await assert.rejects(coder.fail(offer.claims), { reason: 'lifecycle' })
    await assert.rejects(coder.complete(offer.claims), { reason: 'lifecycle' })
    await assert.rejects(coder.accept(offer.claims), { reason: 'lifecycle' })
    assert.equal((await planner.receiveStatus(done.element)).state, 'completed')
    assert.equal(await planner.issuedState(offer.claims.hop), 'completed')
  })

  test('a rejected hop has no outcome', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    await coder.reject(offer.claims, 'policy', 'not today')
    await assert.rejects(coder.complete(offer.claims), { reason: 'lifecycle' })
    await assert.rejects(coder.fail(offer.claims), { reason: 'lifecycle' })
  })

  test('stale and replay rejections are not terminal and set no state', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    const s = await coder.reject(offer.claims, 'replay')
    assert.equal(s.claims.reason, 'replay')
    const hop = await coder.receivedHop(offer.claims)
    assert.equal(hop?.state, 'received')
    assert.equal(hop?.decision, undefined)
    const a = await coder.accept(offer.claims)
    assert.equal(a.claims.state, 'accepted')
    // at the delegator, the nonterminal rejection changes nothing and a later status counts
    const n = await planner.receiveStatus(s.element)
    assert.equal(n.nonterminal, true)
    assert.equal(await planner.issuedState(offer.claims.hop), 'offered')
    assert.equal((await planner.receiveStatus(a.element)).state, 'accepted')
  })

  test('a stale offer is rejected with a nonterminal status and nothing is remembered', async () => {
    const { planner, coder, clock } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1', ttlS: 60 })
    clock.set(T0 + 200)
    const r = await coder.receive(handoff)
    assert.equal(r.kind, 'rejected')
    if (r.kind !== 'rejected') return
    assert.equal(r.reason, 'stale')
    assert.equal(r.status?.claims.reason, 'stale')
    assert.equal(await coder.receivedHop(offer.claims), undefined)
  })

  test('an offer over the maximum lifetime gets a nonterminal stale rejection', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1', ttlS: 301 })
    const r = await coder.receive(handoff)
    assert.equal(r.kind, 'rejected')
    if (r.kind !== 'rejected') return
    // seed 003: the maximum lifetime belongs to the freshness check, whose reason is stale
    assert.equal(r.reason, 'stale')
    assert.equal(r.status?.claims.reason, 'stale')
    assert.equal(await coder.receivedHop(offer.claims), undefined)
    // a stale rejection never sets the hop's state at the delegator
    const n = await planner.receiveStatus(r.status!.element)
    assert.equal(n.nonterminal, true)
    assert.equal(await planner.issuedState(offer.claims.hop), 'offered')
  })

  test('a retransmitted offer is not processed again: undecided gets nothing', async () => {
    const { planner, coder } = await setup()
    const { handoff } = await planner.offer({ aud: CODER, dialog: 'd1' })
    assert.equal((await coder.receive(handoff)).kind, 'new')
    const again = await coder.receive(handoff)
    assert.equal(again.kind, 'retransmission')
    if (again.kind === 'retransmission') assert.equal(again.resend, undefined)
  })

  test('a retransmission after a status gets the last status as identical octets', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    const a = await coder.accept(offer.claims)
    const again = await coder.receive(await planner.retransmit(offer.claims.hop))
    assert.equal(again.kind, 'retransmission')
    if (again.kind === 'retransmission') assert.equal(again.resend, a.element)
    const done = await coder.complete(offer.claims)
    const third = await coder.receive(handoff)
    if (third.kind === 'retransmission') assert.equal(third.resend, done.element)
    else assert.fail('expected a retransmission')
  })

  test('a retransmission of taken work with nothing sent gets accepted, once', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    await coder.take(offer.claims)
    const r = await coder.receive(handoff)
    assert.equal(r.kind, 'retransmission')
    if (r.kind !== 'retransmission' || typeof r.resend !== 'string') return assert.fail()
    assert.equal((await planner.receiveStatus(r.resend)).state, 'accepted')
    const r2 = await coder.receive(handoff)
    if (r2.kind === 'retransmission') assert.equal(r2.resend, r.resend)
    await assert.rejects(coder.accept(offer.claims), { reason: 'lifecycle' })
  })

  test('equivocation before any decision: reject the first, answer nothing for the second', async () => {
    const { planner, coder, signers } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    const second = signOffer({
      signer: signers.p.signer,
      aud: CODER,
      dialog: 'd1',
      hop: offer.claims.hop,
      task: 'other',
      iat: T0,
    })
    const r = await coder.receive(toHandoff(second))
    assert.equal(r.kind, 'equivocation')
    if (r.kind !== 'equivocation') return
    assert.equal(r.firstDigest, offer.digest)
    assert.equal(r.stopWork, false)
    assert.equal(r.rejectFirst?.claims.reason, 'equivocation')
    assert.equal(r.rejectFirst?.claims.offer, offer.digest)
    const hop = await coder.receivedHop(offer.claims)
    assert.equal(hop?.state, 'rejected')
    assert.ok(hop?.flags.includes('equivocation'))
  })

  test('a retransmission that arrives after exp still gets the last status, not stale', async () => {
    const { planner, coder, clock } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1', ttlS: 60 })
    await coder.receive(handoff)
    const accepted = await coder.accept(offer.claims)
    clock.set(T0 + 60 + 61)
    // seed 003: a retransmission is not processed again; the last status goes back as sent
    const r = await coder.receive(handoff)
    assert.equal(r.kind, 'retransmission')
    if (r.kind === 'retransmission') assert.equal(r.resend, accepted.element)
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'accepted')
  })

  test('an equivocating offer that fails freshness is still never answered', async () => {
    const { planner, coder, signers } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    // same sender and hop, other octets, and a lifetime over the maximum
    const second = signOffer({
      signer: signers.p.signer,
      aud: CODER,
      dialog: 'd1',
      hop: offer.claims.hop,
      iat: T0,
      ttlS: 301,
    })
    const r = await coder.receive(toHandoff(second))
    assert.equal(r.kind, 'equivocation')
    if (r.kind !== 'equivocation') return
    assert.equal(r.firstDigest, offer.digest)
    assert.equal(r.rejectFirst?.claims.offer, offer.digest)
    assert.equal(r.rejectFirst?.claims.reason, 'equivocation')
    assert.equal((await coder.receivedHop(offer.claims))?.equivocation, second.digest)
  })

  test('equivocation after work was taken: stop the work and flag, no status for the second', async () => {
    const { planner, coder, signers } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    await coder.accept(offer.claims)
    const second = signOffer({
      signer: signers.p.signer,
      aud: CODER,
      dialog: 'd1',
      hop: offer.claims.hop,
      task: 'x',
      iat: T0,
    })
    const r = await coder.receive(toHandoff(second))
    assert.equal(r.kind, 'equivocation')
    if (r.kind !== 'equivocation') return
    assert.equal(r.stopWork, true)
    assert.equal(r.rejectFirst, undefined)
    assert.ok((await coder.receivedHop(offer.claims))?.flags.includes('equivocation'))
    // it then reports the outcome it knows
    assert.equal(
      (await coder.fail(offer.claims, { reason: 'equivocation' })).claims.state,
      'failed',
    )
  })

  test('an unknown outcome keeps the hop accepted and flags it', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    await coder.accept(offer.claims)
    await coder.markOutcomeUnknown(offer.claims)
    const hop = await coder.receivedHop(offer.claims)
    assert.equal(hop?.state, 'accepted')
    assert.ok(hop?.flags.includes('outcome-unknown'))
    assert.equal(hop?.outcome, undefined)
  })

  test('failed after partial effect must list what took effect', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    await assert.rejects(coder.fail(offer.claims, { partialEffect: true }), {
      reason: 'invalid-input',
    })
    const ref = createDigestRef('commit 1 of 2', { uri: 'urn:example:commit' })
    const f = await coder.fail(offer.claims, { partialEffect: true, refs: [ref], reason: 'policy' })
    assert.deepEqual(f.claims.refs, [ref])
  })

  test('a rejected offer is answered with its reason and remembered', async () => {
    const { planner, coder } = await setup()
    const strict = new HandoffAgent({
      signer: (coder as unknown as { signer: never }).signer,
      trust: (coder as unknown as { trust: never }).trust,
      now: () => T0 * 1000,
      verify: { dialog: 'expected-dialog' },
    })
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    const r = await strict.receive(handoff)
    assert.equal(r.kind, 'rejected')
    if (r.kind !== 'rejected') return
    assert.equal(r.reason, 'policy')
    assert.equal(r.status?.claims.state, 'rejected')
    const again = await strict.receive(handoff)
    if (again.kind === 'retransmission') assert.equal(again.resend, r.status?.element)
    else assert.fail('expected retransmission')
    assert.equal((await planner.receiveStatus(r.status!.element)).state, 'rejected')
    void offer
  })
})

describe('delegator hop state', () => {
  test('expiry is local and provisional; a later verified status replaces it', async () => {
    const { planner, coder, clock } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1', ttlS: 60 })
    await coder.receive(handoff)
    clock.set(T0 + 60 + 61)
    assert.equal(await planner.issuedState(offer.claims.hop), 'expired')
    const done = await coder.complete(offer.claims)
    assert.equal((await planner.receiveStatus(done.element)).state, 'completed')
    assert.equal(await planner.issuedState(offer.claims.hop), 'completed')
  })

  test('contradicting statuses are flagged, not applied', async () => {
    const { planner, signers } = await setup()
    const { offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    const acc = signStatus({
      signer: signers.c.signer,
      offer: offer.element,
      state: 'accepted',
      iat: T0,
    })
    const rej = signStatus({
      signer: signers.c.signer,
      offer: offer.element,
      state: 'rejected',
      reason: 'policy',
      iat: T0,
    })
    assert.equal((await planner.receiveStatus(acc.element)).state, 'accepted')
    const r = await planner.receiveStatus(rej.element)
    assert.equal(r.conflict, true)
    assert.equal(await planner.issuedState(offer.claims.hop), 'accepted')
    assert.equal((await planner.issuedHop(offer.claims.hop))?.conflicts.length, 1)
  })

  test('a status for an unknown offer or from the wrong party is refused', async () => {
    const { planner, signers } = await setup()
    const { offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    const other = signOffer({ signer: signers.p.signer, aud: CODER, dialog: 'd1', iat: T0 })
    const s = signStatus({
      signer: signers.c.signer,
      offer: other.element,
      state: 'accepted',
      iat: T0,
    })
    assert.equal((await planner.receiveStatus(s.element)).reason, 'policy')
    const bad = await planner.receiveStatus('not.a.jws')
    assert.equal(bad.reason, 'bad-signature')
    void offer
  })

  test('retransmission waits longer after each attempt', () => {
    const waits = [1, 2, 3, 4, 10].map(retransmitDelayMs)
    assert.deepEqual(waits, [1000, 2000, 4000, 8000, 60_000])
  })

  test('the state map: implied acceptance and at most one decision and outcome', () => {
    assert.equal(applyStatus('offered', 'completed'), 'completed')
    assert.equal(applyStatus('accepted', 'failed'), 'failed')
    assert.equal(applyStatus('accepted', 'rejected'), 'conflict')
    assert.equal(applyStatus('rejected', 'accepted'), 'conflict')
    assert.equal(applyStatus('completed', 'failed'), 'conflict')
    assert.equal(applyStatus('completed', 'accepted'), 'completed')
    // a cancel is never hidden by what follows it
    assert.equal(applyStatus('canceled', 'completed'), 'canceled')
    assert.equal(applyStatus('canceled', 'accepted'), 'canceled')
  })

  test('the one rule: a late outcome stays beside the cancel, and a status says if it changed', () => {
    const canceled = { state: 'canceled' } as const
    assert.deepEqual(nextHopState(canceled, { state: 'completed' }), {
      state: 'canceled',
      outcome: 'completed',
      changed: true,
      flag: 'outcome-after-cancel',
    })
    const late = { state: 'canceled', outcome: 'completed' } as const
    assert.deepEqual(nextHopState(late, { state: 'completed' }), { ...late, changed: false })
    assert.equal(nextHopState(late, { state: 'failed' }), 'conflict')
    assert.deepEqual(nextHopState(canceled, { state: 'accepted' }), { ...canceled, changed: false })
    assert.deepEqual(
      nextHopState({ state: 'completed', outcome: 'completed' }, { state: 'canceled' }),
      {
        state: 'completed',
        outcome: 'completed',
        changed: false,
        flag: 'canceled-after-end',
      },
    )
    assert.deepEqual(nextHopState({ state: 'accepted' }, { state: 'canceled' }), {
      state: 'canceled',
      changed: true,
    })
    assert.deepEqual(nextHopState({ state: 'offered' }, { state: 'completed' }), {
      state: 'completed',
      outcome: 'completed',
      changed: true,
    })
    assert.deepEqual(nextHopState({ state: 'accepted' }, { state: 'accepted' }), {
      state: 'accepted',
      changed: false,
    })
    // a stale or replay rejection is not terminal and changes nothing
    assert.deepEqual(nextHopState({ state: 'offered' }, { state: 'rejected', reason: 'stale' }), {
      state: 'offered',
      changed: false,
    })
    assert.equal(
      nextHopState({ state: 'accepted' }, { state: 'rejected', reason: 'policy' }),
      'conflict',
    )
  })

  test('a delegate outcome after the cancel: the delegator reads canceled, the outcome beside', async () => {
    const { planner, coder } = await setup()
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(handoff)
    const accepted = await coder.accept(offer.claims)
    assert.equal((await planner.receiveStatus(accepted.element)).changed, true)
    // The cancel and the completion cross: each side sees the race.
    const cancel = await planner.cancel(offer.claims.hop)
    const done = await coder.complete(offer.claims)
    const late = await planner.receiveStatus(done.element)
    assert.deepEqual(
      { state: late.state, outcome: late.outcome, changed: late.changed },
      { state: 'canceled', outcome: 'completed', changed: true },
    )
    assert.equal(await planner.issuedState(offer.claims.hop), 'canceled')
    const issued = await planner.issuedHop(offer.claims.hop)
    assert.equal(issued?.outcome, 'completed')
    assert.deepEqual(issued?.flags, ['outcome-after-cancel'])
    // The same status again changes nothing, and says so.
    const again = await planner.receiveStatus(done.element)
    assert.equal(again.changed, false)
    assert.equal(again.state, 'canceled')
    // The delegate reads its outcome, the cancel flagged as having come after it.
    const seen = await coder.receiveStatus(cancel.element)
    assert.equal(seen.state, 'completed')
    assert.equal(seen.changed, false)
    assert.deepEqual((await coder.receivedHop(offer.claims))?.flags, ['canceled-after-end'])
  })
})

describe('cancellation', () => {
  test('a verified canceled follows the chain downward', async () => {
    const { planner, coder, tester } = await setup()
    const up = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder.receive(up.handoff)
    await coder.accept(up.offer.claims)
    const down = await coder.offer({ aud: TESTER, dialog: 'd2', after: up.handoff, chain: true })
    assert.equal(down.offer.claims.prev, up.offer.digest)
    assert.equal((await tester.receive(down.handoff)).kind, 'new')
    await tester.accept(down.offer.claims)
    // an unrelated issued offer is not canceled
    const unrelated = await coder.offer({ aud: TESTER, dialog: 'd3' })

    const cancel = await planner.cancel(up.offer.claims.hop)
    assert.equal(cancel.claims.state, 'canceled')
    assert.equal(cancel.claims.iss, PLANNER)
    assert.equal(cancel.claims.aud, CODER)
    assert.equal(await planner.issuedState(up.offer.claims.hop), 'canceled')

    const r = await coder.receiveStatus({ status: cancel.element })
    assert.equal(r.ok, true)
    assert.equal(r.state, 'canceled')
    assert.equal(r.propagate?.length, 1)
    const child = r.propagate![0]!
    assert.equal(child.claims.offer, down.offer.digest)
    assert.equal(child.claims.iss, CODER)
    assert.equal(await coder.issuedState(down.offer.claims.hop), 'canceled')
    assert.equal(await coder.issuedState(unrelated.offer.claims.hop), 'offered')

    const t = await tester.receiveStatus(child.element)
    assert.equal(t.state, 'canceled')
    assert.equal(t.propagate?.length, 0)
  })
})

describe('persistence', () => {
  test('answered hops survive a restart with a shared store', async () => {
    const { planner, signers, trust } = await setup()
    const store = new MemoryReplayStore()
    const coder1 = new HandoffAgent({
      signer: signers.c.signer,
      trust,
      received: store,
      now: () => T0 * 1000,
    })
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'd1' })
    await coder1.receive(handoff)
    const a = await coder1.accept(offer.claims)
    const coder2 = new HandoffAgent({
      signer: signers.c.signer,
      trust,
      received: store,
      now: () => T0 * 1000,
    })
    const r = await coder2.receive(handoff)
    if (r.kind === 'retransmission') assert.equal(r.resend, a.element)
    else assert.fail('expected retransmission')
  })
})
