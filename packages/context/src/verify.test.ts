import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { agents, buildChain, clockAt, T0, trustOf } from '../test/fixtures.js'
import { signOffer, toHandoff } from './offer.js'
import { readElement } from './open.js'
import { createDigestRef } from './refs.js'
import { MemoryReplayStore } from './replay-store.js'
import { assertHandoff, verifyHandoff } from './verify.js'

const A = 'spiffe://a.example/agent/assistant'
const P = 'spiffe://a.example/agent/planner'
const C = 'spiffe://b.example/agent/coder'
const list = await agents([A, P, C])
const [assistant, planner] = list as [(typeof list)[0], (typeof list)[0]]
const trust = trustOf(list)
const base = { trust, audience: C, now: clockAt(T0 + 1) }

describe('verifyHandoff: the seven checks in order', () => {
  test('a valid handoff verifies with its digest, chain and origin', async () => {
    const h = buildChain([assistant, planner], C)
    const r = await verifyHandoff(h, { ...base, replay: new MemoryReplayStore() })
    assert.equal(r.ok, true)
    if (!r.ok) return
    assert.equal(r.chain.length, 1)
    assert.equal(r.partial, false)
    assert.equal(r.origin, A)
    assert.equal(r.replayChecked, true)
  })

  test('the first failure wins: a bad signature before a wrong audience', async () => {
    const h = buildChain([assistant, planner], C)
    const offer = `${(h.offer as string).slice(0, -3)}AAA`
    const r = await verifyHandoff({ offer }, { ...base, audience: 'someone-else' })
    assert.equal(r.ok, false)
    if (!r.ok) assert.equal(r.reason, 'bad-signature')
  })

  test('the first failure wins: a wrong audience before staleness', async () => {
    const h = buildChain([assistant, planner], C)
    const r = await verifyHandoff(h, { ...base, audience: P, now: clockAt(T0 + 10_000) })
    if (!r.ok) assert.equal(r.reason, 'wrong-audience')
    else assert.fail()
  })

  test('the first failure wins: staleness is not remembered as replay', async () => {
    const h = buildChain([assistant, planner], C)
    const replay = new MemoryReplayStore()
    const stale = await verifyHandoff(h, { ...base, replay, now: clockAt(T0 + 10_000) })
    assert.equal(!stale.ok && stale.reason, 'stale')
    assert.equal((await verifyHandoff(h, { ...base, replay })).ok, true)
  })

  test('the first failure wins: replay before a dialog or chain failure', async () => {
    const h = buildChain([assistant, planner], C)
    const replay = new MemoryReplayStore()
    const first = await verifyHandoff(h, { ...base, replay, dialog: 'nope' })
    assert.equal(!first.ok && first.reason, 'policy')
    const second = await verifyHandoff(h, { ...base, replay, dialog: 'nope' })
    assert.equal(!second.ok && second.reason, 'replay')
    assert.equal(!second.ok && second.retransmission, true)
  })

  test('skew and maximum lifetime are configurable', async () => {
    const h = toHandoff(
      signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0, ttlS: 100 }),
    )
    assert.equal((await verifyHandoff(h, { ...base, now: clockAt(T0 + 100 + 59) })).ok, true)
    const late = await verifyHandoff(h, { ...base, now: clockAt(T0 + 100 + 59), skewMs: 10_000 })
    assert.equal(!late.ok && late.reason, 'stale')
    // seed 003: the maximum lifetime is part of the freshness check, whose reason is stale
    const short = await verifyHandoff(h, { ...base, maxLifetimeMs: 60_000 })
    assert.equal(!short.ok && short.reason, 'stale')
    assert.equal(!short.ok && short.check, 'freshness')
    const future = await verifyHandoff(h, { ...base, now: clockAt(T0 - 59) })
    assert.equal(future.ok, true)
  })

  test('the 300-second maximum lifetime is inclusive and over it is stale', async () => {
    const at = (ttlS: number) =>
      toHandoff(signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0, ttlS }))
    assert.equal((await verifyHandoff(at(300), base)).ok, true)
    const over = await verifyHandoff(at(301), { ...base, replay: new MemoryReplayStore() })
    assert.equal(!over.ok && over.reason, 'stale')
    assert.equal(!over.ok && over.check, 'freshness')
  })

  test('dialog: a string, a list or a predicate', async () => {
    const h = buildChain([assistant, planner], C)
    assert.equal((await verifyHandoff(h, { ...base, dialog: 'ctx-7c1e' })).ok, true)
    assert.equal((await verifyHandoff(h, { ...base, dialog: ['a', 'ctx-7c1e'] })).ok, true)
    assert.equal(
      (await verifyHandoff(h, { ...base, dialog: (d) => d.startsWith('ctx-') })).ok,
      true,
    )
    const r = await verifyHandoff(h, { ...base, dialog: ['a'] })
    assert.equal(!r.ok && r.check, 'dialog')
  })

  test('a partial chain is reported, and refused only by policy', async () => {
    const h = buildChain([assistant, planner], C)
    const r = await verifyHandoff({ offer: h.offer }, base)
    assert.equal(r.ok && r.partial, true)
    const strict = await verifyHandoff({ offer: h.offer }, { ...base, requireFullChain: true })
    assert.equal(!strict.ok && strict.reason, 'policy')
    const origins = await verifyHandoff(h, { ...base, trustedOrigins: [A] })
    assert.equal(origins.ok, true)
  })

  test('a chain carried with an offer that has no prev is broken', async () => {
    const h = buildChain([assistant, planner], C)
    const lone = signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0 })
    const r = await verifyHandoff({ offer: lone.element, chain: h.chain }, base)
    assert.equal(!r.ok && r.reason, 'broken-chain')
  })

  test('refs are reported; mismatch rejects', async () => {
    const ref = createDigestRef('brief')
    const h = toHandoff(
      signOffer({ signer: planner.signer, aud: C, dialog: 'd', iat: T0, refs: [ref] }),
    )
    const r = await verifyHandoff(h, base)
    assert.equal(r.ok && r.refs[0]?.outcome, 'not-checked')
    const m = await verifyHandoff(h, { ...base, refs: { load: () => ({ content: 'other' }) } })
    assert.equal(!m.ok && m.reason, 'ref-mismatch')
  })

  test('the policy hook runs last', async () => {
    const h = buildChain([assistant, planner], C)
    const r = await verifyHandoff(h, { ...base, policy: (v) => v.claims.task === 'task-42' })
    assert.equal(!r.ok && r.check, 'policy')
    assert.equal((await verifyHandoff(h, { ...base, policy: () => true })).ok, true)
  })

  test('assertHandoff throws a ContextError with the reason', async () => {
    const h = buildChain([assistant, planner], C)
    await assert.rejects(assertHandoff(h, { ...base, audience: P }), { reason: 'wrong-audience' })
    assert.equal((await assertHandoff(h, base)).digest.length, 43)
  })

  test('malformed carried values are bad-signature', async () => {
    for (const v of [
      null,
      42,
      'x',
      [],
      {},
      { offer: 1 },
      { offer: 'a.b.c', chain: 'x' },
      { offer: 'a.b.c', chain: [1] },
    ]) {
      const r = await verifyHandoff(v, base)
      assert.equal(!r.ok && r.reason, 'bad-signature')
    }
  })

  test('an ES256 offer verifies; its equivocation is detected by octets', async () => {
    const { generateKeyPair, createSigner } = await import('./keys.js')
    const kp = generateKeyPair('ES256')
    const signer = await createSigner({ iss: 'spiffe://e.example/agent/es', key: kp.privateJwk })
    const tr = { ...trust, [signer.iss]: kp.publicJwk }
    const input = { signer, aud: C, dialog: 'd', iat: T0, hop: 'ES256hopES256hopES256h' }
    const one = signOffer(input)
    const two = signOffer(input)
    assert.notEqual(one.element, two.element)
    const replay = new MemoryReplayStore()
    assert.equal(
      (await verifyHandoff({ offer: one.element }, { ...base, trust: tr, replay })).ok,
      true,
    )
    const r = await verifyHandoff({ offer: two.element }, { ...base, trust: tr, replay })
    assert.equal(!r.ok && r.reason, 'equivocation')
    assert.equal(!r.ok && r.firstDigest, one.digest)
  })
})

describe('verifyHandoff: octets seen before', () => {
  test('the same octets are checked again against the trust of the moment', async () => {
    const h = buildChain([assistant, planner], C)
    assert.equal((await verifyHandoff(h, base)).ok, true)
    // the assistant's key is withdrawn: the chain element it signed is no longer trusted
    const withoutAssistant = trustOf(list.filter((a) => a.id !== A))
    const again = await verifyHandoff(h, { ...base, trust: withoutAssistant })
    assert.equal(!again.ok && again.reason, 'untrusted-key')
    assert.equal(!again.ok && again.index, 0)
    const current = await verifyHandoff({ offer: h.offer }, { ...base, trust: trustOf([]) })
    assert.equal(!current.ok && current.reason, 'untrusted-key')
  })

  test('the members answered cannot be changed under the next verification', async () => {
    const h = buildChain([assistant, planner], C)
    const first = await verifyHandoff(h, base)
    assert.ok(first.ok)
    assert.throws(() => {
      ;(first.claims as { aud: string }).aud = P
    }, TypeError)
    assert.throws(() => {
      ;(first.chain[0]!.claims as { iss: string }).iss = C
    }, TypeError)
    const second = await verifyHandoff(h, base)
    assert.ok(second.ok)
    assert.equal(second.claims.aud, C)
    assert.equal(second.chain[0]!.claims.iss, A)
  })
})

const ids = Array.from({ length: 8 }, (_, i) => `spiffe://t.example/agent/${i}`)
const path = await agents(ids)

describe('verifyHandoff: signatures on the thread pool answer as the sequential order', () => {
  const R = 'spiffe://t.example/agent/receiver'
  const all = { trust: trustOf(path), audience: R, now: clockAt(T0 + 10) }
  const h = buildChain(path, R)
  const chain = h.chain as string[]
  const badSig = (e: string) => `${e.slice(0, -3)}${e.endsWith('AAA') ? 'BBA' : 'AAA'}`
  const change = (at: Record<number, (e: string) => string>, offer = h.offer) => ({
    offer,
    chain: chain.map((e, i) => at[i]?.(e) ?? e),
  })

  /** Verifies in both modes, asserts they answer alike, and answers the one answer. */
  async function both(handoff: unknown, extra: object = {}) {
    const inline = await verifyHandoff(handoff, { ...all, ...extra })
    const pooled = await verifyHandoff(handoff, { ...all, ...extra, offload: true })
    assert.deepEqual(pooled, inline)
    return inline
  }

  test('a good chain verifies in both modes', async () => {
    const r = await both(h)
    assert.equal(r.ok && r.chain.length, 7)
  })

  test('two bad signatures: the earlier one is answered', async () => {
    const r = await both(change({ 2: badSig, 5: badSig }))
    assert.equal(!r.ok && r.reason, 'bad-signature')
    assert.equal(!r.ok && r.check, 'chain')
    assert.equal(!r.ok && r.index, 2)
  })

  test('a bad current offer and a bad chain element: the current one is answered', async () => {
    const r = await both(change({ 1: badSig }, badSig(h.offer as string)))
    assert.equal(!r.ok && r.reason, 'bad-signature')
    assert.equal(!r.ok && r.check, 'signature')
    assert.equal(!r.ok && r.index, undefined)
  })

  test('bad structure and a bad signature: whichever comes first in the chain', async () => {
    const oversized = (e: string) => e + 'A'.repeat(17_000)
    const structureFirst = await both(change({ 1: oversized, 4: badSig }))
    assert.equal(!structureFirst.ok && structureFirst.reason, 'policy')
    assert.equal(!structureFirst.ok && structureFirst.index, 1)
    const signatureFirst = await both(change({ 1: badSig, 4: () => 'not-a-jws' }))
    assert.equal(!signatureFirst.ok && signatureFirst.reason, 'bad-signature')
    assert.equal(!signatureFirst.ok && signatureFirst.index, 1)
    const malformedFirst = await both(change({ 1: () => 'a.b', 4: badSig }))
    assert.equal(!malformedFirst.ok && malformedFirst.reason, 'bad-signature')
    assert.equal(!malformedFirst.ok && malformedFirst.index, 1)
  })

  test('an untrusted key and a bad signature: whichever comes first in the chain', async () => {
    const without3 = { trust: trustOf(path.filter((_, i) => i !== 3)) }
    const untrustedFirst = await both(change({ 5: badSig }), without3)
    assert.equal(!untrustedFirst.ok && untrustedFirst.reason, 'untrusted-key')
    assert.equal(!untrustedFirst.ok && untrustedFirst.index, 3)
    const signatureFirst = await both(change({ 1: badSig }), without3)
    assert.equal(!signatureFirst.ok && signatureFirst.reason, 'bad-signature')
    assert.equal(!signatureFirst.ok && signatureFirst.index, 1)
  })

  test('a chain too deep is refused as too-deep whatever its signatures', async () => {
    const r = await both(change({ 0: badSig }), { maxChainLength: 4 })
    assert.equal(!r.ok && r.reason, 'too-deep')
    assert.equal(!r.ok && r.check, 'chain')
    const bad = await both(change({}, badSig(h.offer as string)), { maxChainLength: 4 })
    assert.equal(!bad.ok && bad.check, 'signature')
  })

  test('a refusal before the chain comes first: audience, freshness, replay, dialog', async () => {
    const broken = change({ 2: badSig })
    const aud = await both(broken, { audience: P })
    assert.equal(!aud.ok && aud.reason, 'wrong-audience')
    const stale = await both(broken, { now: clockAt(T0 + 10_000) })
    assert.equal(!stale.ok && stale.reason, 'stale')
    const dialog = await both(broken, { dialog: (d: string) => d === 'other' })
    assert.equal(!dialog.ok && dialog.check, 'dialog')
    const replay = new MemoryReplayStore()
    await verifyHandoff(broken, { ...all, replay, offload: true })
    const again = await verifyHandoff(broken, { ...all, replay, offload: true })
    assert.equal(!again.ok && again.reason, 'replay')
  })

  test('admission answered apart from keys fails check 1 in the chain order', async () => {
    const asked: (readonly string[])[] = []
    const except = (...out: number[]) => ({
      admitted: async (issuers: readonly string[]) => {
        asked.push(issuers)
        return new Set(issuers.filter((iss) => !out.some((i) => iss === ids[i])))
      },
    })
    assert.equal((await both(h, except())).ok, true)
    assert.deepEqual([...asked[0]!].sort(), [...ids].sort())
    const later = await both(change({ 0: badSig }), except(2))
    assert.equal(!later.ok && later.reason, 'bad-signature')
    assert.equal(!later.ok && later.index, 0)
    const first = await both(change({ 3: badSig }), except(0))
    assert.equal(!first.ok && first.reason, 'untrusted-key')
    assert.equal(!first.ok && first.index, 0)
    const current = await both(change({ 0: badSig }), except(7))
    assert.equal(!current.ok && current.reason, 'untrusted-key')
    assert.equal(!current.ok && current.check, 'signature')
  })

  test('a trust resolver is asked once, with every element that parsed', async () => {
    const asked: string[][] = []
    const trust = async (elements: readonly { kid: string }[]) => {
      asked.push(elements.map((e) => e.kid))
      return all.trust
    }
    assert.equal((await both(change({ 3: () => 'a.b' }), { trust })).ok, false)
    assert.equal(asked.length, 2)
    assert.equal(asked[0]!.length, 7)
    assert.equal((await both(h, { trust })).ok, true)
    assert.equal(asked[2]!.length, 8)
  })
})

describe('the cache of parsed elements', () => {
  test('keeps a parse from the second sighting on, frozen, and never a verdict', async () => {
    const once = signOffer({ signer: planner.signer, aud: C, dialog: 'once', now: clockAt(T0) })
    const first = readElement(once.element)
    const second = readElement(once.element)
    const third = readElement(once.element)
    assert.equal(Object.isFrozen(first.parsed), false)
    assert.equal(Object.isFrozen(second.parsed.payload), true)
    assert.equal(third, second)
    assert.equal(second.digest, first.digest)
    const h = buildChain([assistant, planner], C)
    for (let i = 0; i < 3; i++) assert.equal((await verifyHandoff(h, base)).ok, true)
    // the same octets from an issuer the receiver no longer trusts, or no longer admits
    const untrusted = await verifyHandoff(h, { ...base, trust: trustOf([list[0]!]) })
    assert.equal(!untrusted.ok && untrusted.reason, 'untrusted-key')
    const unadmitted = await verifyHandoff(h, { ...base, admitted: () => new Set([A]) })
    assert.equal(!unadmitted.ok && unadmitted.reason, 'untrusted-key')
  })

  test('stays bounded: an element pushed out is parsed afresh', () => {
    const h = buildChain([assistant, planner], C)
    readElement(h.offer)
    const kept = readElement(h.offer)
    for (let i = 0; i < 1100; i++) {
      const o = signOffer({ signer: assistant.signer, aud: C, dialog: `d-${i}`, now: clockAt(T0) })
      readElement(o.element)
      readElement(o.element)
    }
    assert.notEqual(readElement(h.offer), kept)
  })
})
