// Cross-language proof: independent Python code (test/python/verify.py, on Debian's python3-jwcrypto
// and python3-cryptography) verifies the offers, chains and statuses this library signs, in JWS and
// COSE, and this library verifies what Python signed with keys it made and did:key identifiers.
// `npm test` installs the Python package when it may; when it is absent this file fails, it never
// skips.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import {
  createDigestRef,
  createSigner,
  generateKeyPair,
  type Handoff,
  HandoffAgent,
  handoffDigest,
  MemoryReplayStore,
  type SignedElement,
  signOffer,
  signStatus,
  thumbprintSync,
  toHandoff,
  verifyHandoff,
  verifyStatus,
} from '../src/index.js'

const PYTHON = process.env.BATON_PYTHON ?? '/usr/bin/python3'
const SCRIPT = path.join(import.meta.dirname, 'python', 'verify.py')
const T = 1_793_000_000
const DIALOG = 'ctx-7c1e'

type Json = Record<string, unknown>

/** Runs verify.py in one mode: isolated (-I), a bare environment, no network (the script closes it). */
function python(mode: 'probe' | 'verify' | 'sign', request: unknown): Json {
  const r = spawnSync(PYTHON, ['-I', SCRIPT, mode], {
    input: JSON.stringify(request),
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin', LC_ALL: 'C.UTF-8' },
    timeout: 120_000,
  })
  if (r.error !== undefined) {
    throw new Error(
      `cannot run ${PYTHON} (${(r.error as NodeJS.ErrnoException).code}): install Debian's python3 and python3-jwcrypto, or set BATON_PYTHON`,
    )
  }
  if (r.status !== 0) {
    const last = r.stderr.trim().split('\n').at(-1) ?? ''
    throw new Error(`verify.py ${mode} exited ${r.status}: ${last}`)
  }
  return JSON.parse(r.stdout) as Json
}

// ---- did:key (multibase z, base58btc, multicodec ed25519-pub 0xed 0x01), written out here ----

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

function didKeyOf(publicJwk: { x?: string }): string {
  let n = BigInt(
    `0x${Buffer.concat([Buffer.of(0xed, 0x01), Buffer.from(publicJwk.x!, 'base64url')]).toString('hex')}`,
  )
  let out = ''
  while (n > 0n) {
    out = B58[Number(n % 58n)]! + out
    n /= 58n
  }
  return `did:key:z${out}`
}

/** The public JWK a did:key names (the receiver's trust comes from the identifier itself). */
function jwkOfDidKey(did: string): { kty: 'OKP'; crv: 'Ed25519'; x: string } {
  assert.ok(did.startsWith('did:key:z'))
  let n = 0n
  for (const ch of did.slice('did:key:z'.length)) n = n * 58n + BigInt(B58.indexOf(ch))
  const bytes = Buffer.from(n.toString(16).padStart(68, '0'), 'hex')
  assert.deepEqual([...bytes.subarray(0, 2)], [0xed, 0x01])
  return { kty: 'OKP', crv: 'Ed25519', x: bytes.subarray(2).toString('base64url') }
}

/** A COSE element as the script takes it. */
const cose = (el: SignedElement) => ({ cose: Buffer.from(el as Uint8Array).toString('hex') })
const wire = (el: SignedElement) => (typeof el === 'string' ? el : cose(el))
const wireHandoff = (h: Handoff) => ({
  offer: wire(h.offer),
  ...(h.chain === undefined ? {} : { chain: h.chain.map(wire) }),
})

async function agent(name: string) {
  const kp = generateKeyPair()
  const id = didKeyOf(kp.publicJwk)
  return {
    name,
    id,
    publicJwk: kp.publicJwk,
    signer: await createSigner({ iss: id, key: kp.privateJwk }),
  }
}

let unavailable: string | undefined
let probe: Json = {}
try {
  probe = python('probe', {})
} catch (e) {
  unavailable = (e as Error).message
}

if (unavailable !== undefined) {
  test('Python with python3-jwcrypto runs the cross-language checks', () => {
    assert.fail(unavailable)
  })
} else {
  describe('cross-language: Python verifies what the library signs', async () => {
    const [assistant, planner, coder, tester] = await Promise.all(
      ['assistant', 'planner', 'coder', 'tester'].map(agent),
    )
    const all = [assistant!, planner!, coder!, tester!]
    const trust = Object.fromEntries(all.map((a) => [a.id, a.publicJwk]))
    const brief = 'Write a patch that makes the flaky retry test deterministic.'

    const first = signOffer({
      signer: assistant!.signer,
      aud: planner!.id,
      dialog: DIALOG,
      task: 'task-41',
      obo: 'pairwise:user-5f2a',
      iat: T - 30,
      ttlS: 300,
    })
    const second = signOffer({
      signer: planner!.signer,
      aud: coder!.id,
      dialog: DIALOG,
      task: 'task-42',
      iat: T,
      prev: first.element,
      refs: [createDigestRef(brief)],
    })
    const handoff = toHandoff(second, { after: toHandoff(first), chain: true })
    const secondCose = signOffer({
      signer: planner!.signer,
      aud: coder!.id,
      dialog: DIALOG,
      iat: T,
      prev: first.element,
      format: 'cose',
    })
    const coseHandoff = toHandoff(secondCose, { after: toHandoff(first), chain: true })
    const third = signOffer({
      signer: coder!.signer,
      aud: tester!.id,
      dialog: DIALOG,
      iat: T + 1,
      prev: second.element,
    })
    const long = toHandoff(third, { after: handoff, chain: true })
    // fresh hops for the refusals after check 4, so the replay store does not answer first
    const again = (aud: string, iat: number) =>
      signOffer({ signer: planner!.signer, aud, dialog: DIALOG, iat, prev: first.element })
    const skipping = signOffer({
      signer: coder!.signer,
      aud: tester!.id,
      dialog: DIALOG,
      iat: T + 1,
      prev: second.element,
    })
    const tooLong = signOffer({
      signer: planner!.signer,
      aud: coder!.id,
      dialog: DIALOG,
      iat: T,
      ttlS: 301,
    })
    const tampered = handoff.offer as string
    const flipped = `${tampered.slice(0, -6)}${tampered.at(-6) === 'A' ? 'B' : 'A'}${tampered.slice(-5)}`

    const statuses = {
      accepted: signStatus({
        signer: coder!.signer,
        offer: second.element,
        state: 'accepted',
        iat: T + 2,
      }),
      completed: signStatus({
        signer: coder!.signer,
        offer: second.element,
        state: 'completed',
        iat: T + 3,
        refs: [createDigestRef('the patch')],
      }),
      failed: signStatus({
        signer: coder!.signer,
        offer: second.element,
        state: 'failed',
        reason: 'policy',
        iat: T + 3,
      }),
      canceled: signStatus({
        signer: planner!.signer,
        offer: second.element,
        state: 'canceled',
        iat: T + 4,
      }),
      rejectedCose: signStatus({
        signer: coder!.signer,
        offer: secondCose.element,
        state: 'rejected',
        reason: 'policy',
        iat: T + 2,
        format: 'cose',
      }),
    }

    const now = T + 5
    const material = { [createDigestRef(brief).digest]: brief }
    // each handoff item is also verified by the library, with one replay store shared in order
    const handoffItems: {
      name: string
      handoff: Handoff
      audience: string
      maxLifetimeS?: number
    }[] = [
      { name: 'the chain', handoff, audience: coder!.id },
      { name: 'the same octets again', handoff, audience: coder!.id },
      { name: 'the COSE form', handoff: coseHandoff, audience: coder!.id },
      { name: 'three hops', handoff: long, audience: tester!.id },
      {
        name: 'a middle hop dropped',
        handoff: { offer: skipping.element, chain: [first.element] },
        audience: tester!.id,
      },
      { name: 'copied to another agent', handoff: toHandoff(third), audience: coder!.id },
      { name: 'a lifetime of 301 s', handoff: toHandoff(tooLong), audience: coder!.id },
      {
        name: 'a changed signature',
        handoff: { offer: flipped, chain: handoff.chain! },
        audience: coder!.id,
      },
      {
        name: 'a chain element that is not signed',
        handoff: {
          offer: again(coder!.id, T).element,
          chain: [(first.element as string).split('.').slice(0, 2).join('.')],
        },
        audience: coder!.id,
      },
    ]
    const answers = python('verify', {
      trust,
      items: [
        ...handoffItems.map((i) => ({
          kind: 'handoff',
          handoff: wireHandoff(i.handoff),
          audience: i.audience,
          now,
          material,
        })),
        {
          kind: 'status',
          status: statuses.accepted.element,
          offer: second.element,
          audience: planner!.id,
          now,
        },
        {
          kind: 'status',
          status: statuses.completed.element,
          offer: second.element,
          audience: planner!.id,
          now,
        },
        {
          kind: 'status',
          status: statuses.failed.element,
          offer: second.element,
          audience: planner!.id,
          now,
        },
        {
          kind: 'status',
          status: statuses.canceled.element,
          offer: second.element,
          audience: coder!.id,
          now,
        },
        {
          kind: 'status',
          status: cose(statuses.rejectedCose.element),
          offer: cose(secondCose.element),
          audience: planner!.id,
          now,
        },
        // bound to another offer: refused
        {
          kind: 'status',
          status: statuses.accepted.element,
          offer: first.element,
          audience: planner!.id,
          now,
        },
      ],
    }).answers as Json[]

    test('Python agrees on the digest, chain, origin and refs of a valid handoff', () => {
      const a = answers[0]!
      assert.equal(a.ok, true, JSON.stringify(a))
      assert.equal(a.digest, second.digest)
      assert.equal(a.digest, handoffDigest(handoff.offer))
      assert.deepEqual(a.chain, [first.digest])
      assert.equal(a.partial, false)
      assert.equal(a.origin, assistant!.id)
      assert.deepEqual(a.refs, ['verified'])
    })

    test('Python verifies the COSE_Sign1 form and its digest over the tagged bytes', () => {
      const a = answers[2]!
      assert.equal(a.ok, true, JSON.stringify(a))
      assert.equal(a.digest, secondCose.digest)
      assert.deepEqual(a.chain, [first.digest])
    })

    test('Python and the library give the same verdict and reason code, case by case', async () => {
      const replay = new MemoryReplayStore()
      for (const [i, item] of handoffItems.entries()) {
        const mine = await verifyHandoff(item.handoff, {
          trust,
          audience: item.audience,
          now: () => now * 1000,
          replay,
          refs: {
            require: 'all',
            load: (ref) =>
              material[ref.digest] === undefined ? undefined : { content: material[ref.digest]! },
          },
        })
        const theirs = answers[i]!
        assert.equal(theirs.ok, mine.ok, `${item.name}: ${JSON.stringify(theirs)}`)
        if (!mine.ok) {
          assert.deepEqual(
            [theirs.reason, theirs.check, theirs.index],
            [mine.reason, mine.check, mine.index],
            item.name,
          )
        } else {
          assert.equal(theirs.digest, mine.digest, item.name)
          assert.deepEqual(
            theirs.chain,
            mine.chain.map((l) => l.digest),
            item.name,
          )
          assert.equal(theirs.origin, mine.origin, item.name)
        }
      }
      assert.deepEqual(
        answers.slice(0, handoffItems.length).map((a) => a.reason ?? 'ok'),
        [
          'ok',
          'replay',
          'ok',
          'ok',
          'broken-chain',
          'wrong-audience',
          'stale',
          'bad-signature',
          'bad-signature',
        ],
      )
    })

    test('Python verifies every status, bound to the offer by digest and parties', () => {
      const s = answers.slice(handoffItems.length)
      const expected = [
        [statuses.accepted, 'accepted'],
        [statuses.completed, 'completed'],
        [statuses.failed, 'failed'],
        [statuses.canceled, 'canceled'],
        [statuses.rejectedCose, 'rejected'],
      ] as const
      for (const [i, [status, state]] of expected.entries()) {
        assert.equal(s[i]!.ok, true, JSON.stringify(s[i]))
        assert.equal(s[i]!.state, state)
        assert.equal(s[i]!.digest, status.digest)
        assert.equal(s[i]!.offer, status.claims.offer)
      }
      assert.equal(s[3]!.iss, planner!.id)
      assert.equal(s[3]!.aud, coder!.id)
      assert.deepEqual([s[5]!.ok, s[5]!.reason], [false, 'policy'])
    })
  })

  describe('cross-language: the library verifies what Python signed', () => {
    const p = python('sign', { now: T, dialog: DIALOG }) as {
      agents: Record<
        'assistant' | 'planner' | 'coder',
        { id: string; publicJwk: { x: string }; kid: string }
      >
      brief: string
      handoff: { offer: string; chain: string[] }
      coseHandoff: { offer: { cose: string }; chain: string[] }
      twin: string
      digests: { first: string; second: string }
      statuses: {
        accepted: string
        completed: string
        canceled: string
        rejectedCose: { cose: string }
      }
    }
    const { assistant, planner, coder } = p.agents
    // the receiver's trust comes from the did:key identifiers themselves
    const trust = Object.fromEntries(Object.values(p.agents).map((a) => [a.id, jwkOfDidKey(a.id)]))
    const coseOffer = Buffer.from(p.coseHandoff.offer.cose, 'hex')
    const options = (replay = new MemoryReplayStore()) => ({
      trust,
      audience: coder.id,
      now: () => (T + 1) * 1000,
      replay,
      dialog: DIALOG,
      requireFullChain: true,
      refs: { require: 'all' as const, load: () => ({ content: p.brief }) },
    })

    test('did:key names the JWK Python made, and the kid is its RFC 7638 thumbprint', () => {
      for (const a of Object.values(p.agents)) {
        assert.deepEqual(jwkOfDidKey(a.id), { kty: 'OKP', crv: 'Ed25519', x: a.publicJwk.x })
        assert.equal(didKeyOf(a.publicJwk), a.id)
        assert.equal(thumbprintSync(jwkOfDidKey(a.id)), a.kid)
      }
    })

    test('a Python chain passes all seven checks, refs verified', async () => {
      const r = await verifyHandoff(p.handoff, options())
      assert.equal(r.ok, true, JSON.stringify(r))
      if (!r.ok) return
      assert.equal(r.digest, p.digests.second)
      assert.deepEqual(
        r.chain.map((l) => l.digest),
        [p.digests.first],
      )
      assert.equal(r.origin, assistant.id)
      assert.equal(r.partial, false)
      assert.deepEqual(
        r.refs.map((x) => x.outcome),
        ['verified'],
      )
    })

    test('a Python COSE_Sign1 offer verifies, deterministic encoding included', async () => {
      const r = await verifyHandoff({ offer: coseOffer, chain: p.coseHandoff.chain }, options())
      assert.equal(r.ok, true, JSON.stringify(r))
      assert.equal(r.ok && r.digest, handoffDigest(coseOffer))
    })

    test('the same octets are a replay, a Python twin of the hop is equivocation', async () => {
      const replay = new MemoryReplayStore()
      assert.equal((await verifyHandoff(p.handoff, options(replay))).ok, true)
      const again = await verifyHandoff(p.handoff, options(replay))
      assert.deepEqual([again.ok, !again.ok && again.reason], [false, 'replay'])
      const twin = await verifyHandoff({ offer: p.twin, chain: p.handoff.chain }, options(replay))
      assert.deepEqual([twin.ok, !twin.ok && twin.reason], [false, 'equivocation'])
      assert.equal(!twin.ok && twin.firstDigest, p.digests.second)
    })

    test('Python statuses verify and drive the hop state', async () => {
      const at = { trust, now: () => (T + 5) * 1000 }
      for (const [status, state] of [
        [p.statuses.accepted, 'accepted'],
        [p.statuses.completed, 'completed'],
      ] as const) {
        const r = verifyStatus({ status }, { ...at, audience: planner.id, offer: p.handoff.offer })
        assert.equal(r.ok && r.claims.state, state, JSON.stringify(r))
      }
      const rejected = verifyStatus(
        { status: Buffer.from(p.statuses.rejectedCose.cose, 'hex') },
        { ...at, audience: planner.id, offer: coseOffer },
      )
      assert.deepEqual(rejected.ok && [rejected.claims.state, rejected.claims.reason], [
        'rejected',
        'policy',
      ])
      // the coder's agent only receives here (its signing key stays in Python): the Python
      // planner's cancel applies to the hop it received
      const receiver = new HandoffAgent({
        signer: await createSigner({ iss: coder.id, key: generateKeyPair().privateJwk }),
        trust,
        now: at.now,
      })
      assert.equal((await receiver.receive(p.handoff, { dialog: DIALOG })).kind, 'new')
      const c = await receiver.receiveStatus({ status: p.statuses.canceled })
      assert.deepEqual([c.ok, c.state], [true, 'canceled'])
      assert.equal(
        verifyStatus(
          { status: p.statuses.canceled },
          { ...at, audience: coder.id, offer: p.handoff.offer },
        ).ok,
        true,
      )
    })
  })

  test('Python agrees with the planner-to-coder vector, JWS and COSE', () => {
    const v = JSON.parse(
      readFileSync(
        path.resolve(
          import.meta.dirname,
          '../../../conformance/handoff-context/planner-coder.json',
        ),
        'utf8',
      ),
    )
    const trust = Object.fromEntries(
      Object.entries(v.agents).map(([id, a]) => [id, (a as { publicJwk: object }).publicJwk]),
    )
    const now = v.verifyAt.now
    const coseItem = {
      kind: 'handoff',
      handoff: { offer: { cose: v.offers[1].coseHex }, chain: [v.offers[0].jws] },
      audience: v.verifyAt.audience,
      now,
    }
    const [h, twin, s] = python('verify', {
      trust,
      items: [
        {
          kind: 'handoff',
          handoff: v.handoff,
          audience: v.verifyAt.audience,
          now,
          material: {
            [v.offers[1].input.refs[0].digest]:
              v.material[v.offers[1].input.refs[0].digest].content,
          },
        },
        // the COSE form of the same hop is other octets: equivocation after the JWS
        coseItem,
        {
          kind: 'status',
          status: v.status.jws,
          offer: v.offers[1].jws,
          audience: v.offers[1].input.iss,
          now: now + 2,
        },
      ],
    }).answers as Json[]
    assert.deepEqual([h!.ok, h!.digest, h!.chain], [true, v.offers[1].digest, [v.offers[0].digest]])
    assert.deepEqual(h!.refs, ['verified', 'not-checked'])
    assert.deepEqual([twin!.ok, twin!.reason], [false, 'equivocation'])
    const [c] = python('verify', { trust, items: [coseItem] }).answers as Json[]
    assert.deepEqual([c!.ok, c!.digest], [true, v.offers[1].coseDigest])
    assert.deepEqual([s!.ok, s!.digest, s!.state], [true, v.status.digest, 'accepted'])
  })

  test('the Python side runs with the network closed', () => {
    assert.equal(probe.network, 'closed')
  })
}
