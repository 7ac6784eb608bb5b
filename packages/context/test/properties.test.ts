// Property tests: tampering, chains of up to 16 hops, and dropped, reordered or duplicated hops.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  type Handoff,
  type ReasonCode,
  type SignedElement,
  signOffer,
  toHandoff,
  verifyHandoff,
} from '../src/index.js'
import { agents, hopOf, T0, trustOf } from './fixtures.js'

const pool = await agents(Array.from({ length: 17 }, (_, i) => `spiffe://p.example/agent/${i}`))
const RECEIVER = 'spiffe://p.example/agent/receiver'
const trust = trustOf(pool)
const CHAIN_CODES: readonly ReasonCode[] = ['broken-chain', 'cycle', 'too-deep']

/** A chain through the first n pool agents; gaps[i] seconds between issues, ttl per offer. */
function chainOf(
  n: number,
  gaps: readonly number[],
  ttl: number,
): { handoff: Handoff; lastIat: number } {
  let h: Handoff | undefined
  let iat = T0
  for (let i = 0; i < n; i++) {
    if (i > 0) iat += gaps[i - 1] ?? 0
    const offer = signOffer({
      signer: pool[i]!.signer,
      aud: i === n - 1 ? RECEIVER : pool[i + 1]!.id,
      dialog: 'ctx-prop',
      iat,
      ttlS: ttl,
      hop: hopOf(`prop:${n}:${i}:${iat}:${ttl}`),
      ...(h === undefined ? {} : { prev: h.offer }),
    })
    h = toHandoff(offer, h === undefined ? {} : { after: h, chain: true })
  }
  return { handoff: h!, lastIat: iat }
}

const verifyAt = (h: unknown, nowS: number, extra: object = {}) =>
  verifyHandoff(h, { trust, audience: RECEIVER, now: () => nowS * 1000, ...extra })

const elementsOf = (h: Handoff): SignedElement[] => [...(h.chain ?? []), h.offer]
const fromElements = (els: SignedElement[]): Handoff =>
  els.length === 1 ? { offer: els.at(-1)! } : { offer: els.at(-1)!, chain: els.slice(0, -1) }

describe('properties', () => {
  const fixed = chainOf(4, [1, 1, 1], 120)

  test('any single-byte change to any element fails with a signature or chain code', async () => {
    const els = elementsOf(fixed.handoff) as string[]
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: els.length - 1 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        async (which, at, byte) => {
          const e = els[which]!
          const pos = at % e.length
          fc.pre(e.charCodeAt(pos) !== byte)
          const changed = [...els]
          changed[which] = e.slice(0, pos) + String.fromCharCode(byte) + e.slice(pos + 1)
          const r = await verifyAt(fromElements(changed), fixed.lastIat)
          assert.equal(r.ok, false)
          if (r.ok) return
          // changing the bytes that name iss or kid leaves no trusted key: untrusted-key
          assert.ok(
            r.reason === 'bad-signature' ||
              r.reason === 'untrusted-key' ||
              CHAIN_CODES.includes(r.reason),
            r.reason,
          )
          assert.equal(r.check === 'signature' || r.check === 'chain', true)
        },
      ),
      { numRuns: 400 },
    )
  })

  test('signatures on the thread pool answer exactly as the sequential order', async () => {
    const { handoff, lastIat } = chainOf(8, [], 300)
    const els = elementsOf(handoff) as string[]
    const change = fc.record({
      which: fc.nat({ max: els.length - 1 }),
      at: fc.nat(),
      byte: fc.nat(255),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 4 }), async (changes) => {
        const changed = [...els]
        for (const { which, at, byte } of changes) {
          const e = changed[which]!
          const pos = at % e.length
          changed[which] = e.slice(0, pos) + String.fromCharCode(byte) + e.slice(pos + 1)
        }
        const h = fromElements(changed)
        const inline = await verifyAt(h, lastIat)
        assert.deepEqual(await verifyAt(h, lastIat, { offload: true }), inline)
      }),
      { numRuns: 200 },
    )
  })

  test('the unchanged handoff verifies', async () => {
    assert.equal((await verifyAt(fixed.handoff, fixed.lastIat)).ok, true)
  })

  test('any chain of up to 16 valid hops verifies', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.nat({ max: 1000 }), { minLength: 15, maxLength: 15 }),
        async (n, ttl, raw) => {
          const gaps = raw.map((g) => g % ttl)
          const { handoff, lastIat } = chainOf(n, gaps, ttl)
          const r = await verifyAt(handoff, lastIat, { requireFullChain: true })
          assert.equal(r.ok, true, JSON.stringify(!r.ok && r))
          if (r.ok) assert.equal(r.chain.length, n - 1)
        },
      ),
      { numRuns: 40 },
    )
  })

  test('dropping a hop: the oldest leaves a partial chain, any other breaks it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 3, max: 16 }), fc.nat(), async (n, k) => {
        const { handoff, lastIat } = chainOf(n, [], 300)
        const els = elementsOf(handoff)
        const drop = k % (n - 1)
        const dropped = fromElements(els.filter((_, i) => i !== drop))
        const r = await verifyAt(dropped, lastIat)
        if (drop === 0) {
          assert.equal(r.ok && r.partial, true)
          const strict = await verifyAt(dropped, lastIat, { requireFullChain: true })
          assert.equal(!strict.ok && strict.reason, 'policy')
        } else {
          assert.equal(!r.ok && r.reason, 'broken-chain')
        }
      }),
      { numRuns: 40 },
    )
  })

  test('reordering hops breaks the chain', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 3, max: 16 }), fc.nat(), fc.nat(), async (n, a, b) => {
        const { handoff, lastIat } = chainOf(n, [], 300)
        const els = elementsOf(handoff)
        const i = a % n
        const j = b % n
        fc.pre(i !== j)
        const swapped = [...els]
        swapped[i] = els[j]!
        swapped[j] = els[i]!
        const r = await verifyAt(fromElements(swapped), lastIat)
        assert.equal(r.ok, false)
        // moving the current offer into the chain puts another offer last, sent to someone else
        if (!r.ok) assert.ok(['broken-chain', 'wrong-audience'].includes(r.reason), r.reason)
        if (!r.ok && Math.max(i, j) < n - 1) assert.equal(r.reason, 'broken-chain')
      }),
      { numRuns: 40 },
    )
  })

  test('duplicating a hop is a cycle, or too deep past 16', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 16 }), fc.nat(), fc.nat(), async (n, a, b) => {
        const { handoff, lastIat } = chainOf(n, [], 300)
        const els = elementsOf(handoff)
        const which = a % n
        const at = b % n
        const dup = [...els.slice(0, at), els[which]!, ...els.slice(at)]
        const r = await verifyAt(fromElements(dup), lastIat)
        assert.equal(r.ok, false)
        if (!r.ok) assert.equal(r.reason, n + 1 > 16 ? 'too-deep' : 'cycle')
      }),
      { numRuns: 40 },
    )
  })
})
