// Conformance vectors as data files: RFC 8037 Appendix A, the planner-to-coder example, and the
// negative vectors (every reason code).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import {
  CHECK_REASONS,
  createSigner,
  type Handoff,
  handoffDigest,
  MemoryReplayStore,
  parseJws,
  type RefMaterial,
  type RefPolicy,
  signJws,
  signOffer,
  signStatus,
  thumbprint,
  thumbprintSync,
  toPrivateKey,
  toPublicKey,
  verifyHandoff,
  verifyJws,
  verifyStatus,
} from '../src/index.js'

const dir = path.resolve(import.meta.dirname, '../../../conformance/handoff-context')
const load = (name: string) => JSON.parse(readFileSync(path.join(dir, name), 'utf8'))

describe('RFC 8037 Appendix A', () => {
  const v = load('rfc8037.json')

  test('A.4: signing reproduces the JWS exactly', () => {
    const jws = signJws(
      v.protectedHeader,
      Buffer.from(v.payload),
      'EdDSA',
      toPrivateKey(v.privateJwk),
    )
    assert.equal(jws, v.jws)
  })

  test('A.5: the JWS verifies with the public key', () => {
    assert.equal(verifyJws(parseJws(v.jws), toPublicKey(v.publicJwk)), true)
  })

  test('A.3: the JWK thumbprint, used as the default kid', async () => {
    assert.equal(await thumbprint(v.publicJwk), v.thumbprint)
    assert.equal(thumbprintSync(v.publicJwk), v.thumbprint)
    const signer = await createSigner({ iss: 'rfc', key: v.privateJwk })
    assert.equal(signer.kid, v.thumbprint)
  })

  test('any changed signature byte fails', () => {
    const parsed = parseJws(v.jws)
    for (let i = 0; i < parsed.signature.length; i++) {
      const sig = Buffer.from(parsed.signature)
      sig[i]! ^= 0x01
      assert.equal(verifyJws({ ...parsed, signature: sig }, toPublicKey(v.publicJwk)), false)
    }
  })
})

describe('planner to coder example', () => {
  const v = load('planner-coder.json')

  test('offers re-sign to the same octets and digests', async () => {
    for (const o of v.offers) {
      const agent = v.agents[o.input.iss]
      const signer = await createSigner({ iss: o.input.iss, key: agent.privateJwk, kid: agent.kid })
      const { iss: _iss, kid: _kid, ...input } = o.input
      const offer = signOffer({ ...input, signer })
      assert.equal(offer.element, o.jws)
      assert.equal(offer.element.length, o.octets)
      assert.equal(offer.digest, o.digest)
      assert.equal(handoffDigest(o.jws), o.digest)
      assert.match(o.digest, /^[A-Za-z0-9_-]{43}$/)
      if (o.coseHex !== undefined) {
        const cose = signOffer({ ...input, signer, format: 'cose' })
        assert.equal(Buffer.from(cose.element as Uint8Array).toString('hex'), o.coseHex)
        assert.equal(cose.digest, o.coseDigest)
        assert.equal(handoffDigest(Buffer.from(o.coseHex, 'hex')), o.coseDigest)
      }
    }
  })

  test('the prev of the current offer is the chain element digest', () => {
    const current = JSON.parse(Buffer.from(v.offers[1].jws.split('.')[1], 'base64url').toString())
    assert.equal(current.prev, v.offers[0].digest)
    assert.equal(current.grant, handoffDigest(v.credential))
    assert.deepEqual(v.handoff, { offer: v.offers[1].jws, chain: [v.offers[0].jws] })
  })

  test('the coder verifies the handoff, refs included', async () => {
    const trust = Object.fromEntries(
      Object.entries(v.agents).map(([id, a]) => [id, (a as { publicJwk: object }).publicJwk]),
    )
    const r = await verifyHandoff(v.handoff, {
      trust: trust as never,
      audience: v.verifyAt.audience,
      now: () => v.verifyAt.now * 1000,
      dialog: v.verifyAt.dialog,
      replay: new MemoryReplayStore(),
      requireFullChain: true,
      refs: refPolicy({ require: 'all', material: v.material }),
    })
    assert.equal(r.ok, true, JSON.stringify(r))
    if (!r.ok) return
    assert.equal(r.digest, v.offers[1].digest)
    assert.equal(r.partial, false)
    assert.equal(r.origin, 'spiffe://a.example/agent/assistant')
    assert.deepEqual(
      r.chain.map((l) => l.digest),
      [v.offers[0].digest],
    )
    assert.deepEqual(
      r.refs.map((x) => x.outcome),
      ['verified', 'verified'],
    )
  })

  test('the COSE form verifies the same way', async () => {
    const trust = Object.fromEntries(
      Object.entries(v.agents).map(([id, a]) => [id, (a as { publicJwk: object }).publicJwk]),
    )
    const r = await verifyHandoff(
      { offer: Buffer.from(v.offers[1].coseHex, 'hex'), chain: [v.offers[0].jws] },
      { trust: trust as never, audience: v.verifyAt.audience, now: () => v.verifyAt.now * 1000 },
    )
    assert.equal(r.ok, true)
  })

  test('the status names the offer by digest and verifies at the planner', async () => {
    const coder = v.agents[v.status.input.iss]
    const signer = await createSigner({ iss: v.status.input.iss, key: coder.privateJwk })
    const s = signStatus({
      signer,
      offer: v.offers[1].jws,
      state: 'accepted',
      iat: v.status.input.iat,
    })
    assert.equal(s.element, v.status.jws)
    assert.equal(s.claims.offer, v.status.offer)
    assert.equal(s.digest, v.status.digest)
    const r = verifyStatus(
      { status: v.status.jws },
      {
        trust: { [v.status.input.iss]: coder.publicJwk },
        audience: 'spiffe://a.example/agent/planner',
        offer: v.offers[1].jws,
        now: () => (v.status.input.iat + 1) * 1000,
      },
    )
    assert.equal(r.ok, true)
  })
})

describe('negative vectors', () => {
  const v = load('negative.json')

  test('every reason code has at least one negative vector', () => {
    const covered = new Set(v.cases.map((c: { reason: string }) => c.reason))
    for (const reason of CHECK_REASONS) assert.ok(covered.has(reason), `no vector for ${reason}`)
  })

  for (const c of v.cases) {
    test(`${c.reason}: ${c.name}`, async () => {
      const replay = new MemoryReplayStore()
      const { refs, ...options } = c.options ?? {}
      const opts = {
        trust: v.defaults.trust,
        audience: c.audience ?? v.defaults.audience,
        now: () => (c.now ?? v.defaults.now) * 1000,
        replay,
        ...options,
        ...(refs === undefined ? {} : { refs: refPolicy(refs) }),
      }
      for (const b of (c.before ?? []) as Handoff[]) {
        assert.equal((await verifyHandoff(b, opts)).ok, true)
      }
      const r = await verifyHandoff(c.handoff, opts)
      assert.equal(r.ok, false)
      if (r.ok) return
      assert.equal(r.reason, c.reason)
      assert.equal(r.check, c.check)
      if (c.index !== undefined) assert.equal(r.index, c.index)
      // the same answer with the signatures checked on the thread pool, against a fresh store
      const pooled = { ...opts, replay: new MemoryReplayStore(), offload: true }
      for (const b of (c.before ?? []) as Handoff[]) await verifyHandoff(b, pooled)
      assert.deepEqual(await verifyHandoff(c.handoff, pooled), r)
    })
  }
})

function refPolicy(spec: {
  require: 'all' | 'none'
  material?: Record<string, { content: string; salt?: string }>
}): RefPolicy {
  return {
    require: spec.require,
    load: (ref): RefMaterial | undefined => {
      const m = spec.material?.[ref.digest]
      if (m === undefined) return undefined
      return m.salt === undefined
        ? { content: m.content }
        : { content: m.content, salt: Buffer.from(m.salt, 'base64url') }
    },
  }
}
