// Writes planner-coder.json and negative.json from deterministic keys, hops and times. Ed25519 and
// the deterministic CBOR encoding are deterministic, so running it again writes the same octets.
//
//   node --import tsx packages/context/test/generate-vectors.ts
//   npx biome format --write conformance/handoff-context
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  createDigestRef,
  createSaltedRef,
  grantDigest,
  type Handoff,
  handoffDigest,
  signJws,
  signOffer,
  signStatus,
  toHandoff,
} from '../src/index.js'
import { agents, buildChain, hopOf, T0 } from './fixtures.js'

// The vectors are shared with every implementation: they live in the repository's conformance/.
const dir = path.resolve(import.meta.dirname, '../../../conformance/handoff-context')

const ASSISTANT = 'spiffe://a.example/agent/assistant'
const PLANNER = 'spiffe://a.example/agent/planner'
const CODER = 'spiffe://b.example/agent/coder'
const TESTER = 'spiffe://b.example/agent/tester'
const STRANGER = 'spiffe://c.example/agent/stranger'

const [assistant, planner, coder, tester, stranger] = await agents([
  ASSISTANT,
  PLANNER,
  CODER,
  TESTER,
  STRANGER,
])
const all = [assistant!, planner!, coder!, tester!]
const trust = Object.fromEntries(all.map((a) => [a.id, a.publicJwk]))

// ---- planner -> coder, like the seed's worked example ----
const brief = 'Write a patch that makes the flaky retry test deterministic.'
const salt = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex')
const prompt = 'yes'
const salted = createSaltedRef(prompt, { salt, members: { media: 'text/plain' } })
const credential = 'eyJhbGciOiJFZERTQSJ9.eyJzY29wZSI6InJlcG86d3JpdGUifQ.c2lnbmF0dXJl'

const assistantInput = {
  signer: assistant!.signer,
  aud: PLANNER,
  dialog: 'ctx-7c1e',
  task: 'task-41',
  obo: 'pairwise:user-5f2a',
  hop: 'Yp0c2Hq8n4kZ7LwVt3sR1g',
  iat: T0 - 30,
  ttlS: 300,
}
const assistantOffer = signOffer(assistantInput)
const plannerInput = {
  signer: planner!.signer,
  aud: CODER,
  dialog: 'ctx-7c1e',
  task: 'task-42',
  obo: 'pairwise:user-5f2a',
  grant: grantDigest(credential),
  hop: 'q3Zl0v8bVfQmJm2c4bq1Ww',
  iat: T0,
  ttlS: 120,
  prev: assistantOffer.digest,
  refs: [createDigestRef(brief, { uri: 'urn:example:brief' }), salted.ref],
}
const plannerOffer = signOffer(plannerInput)
const handoff = toHandoff(plannerOffer, { after: toHandoff(assistantOffer), chain: true })
const accepted = signStatus({
  signer: coder!.signer,
  offer: plannerOffer.element,
  state: 'accepted',
  iat: T0 + 2,
})
const plannerCose = signOffer({ ...plannerInput, format: 'cose' })

const strip = (i: Record<string, unknown>) => {
  const { signer, ...rest } = i as { signer: { iss: string; kid: string } }
  return { ...rest, iss: signer.iss, kid: signer.kid }
}

const positive = {
  description:
    'Assistant hands a task to a planner; the planner hands part of it to a coder, carrying a ' +
    'chain of one element; the coder accepts. Keys are test keys derived from labels.',
  agents: Object.fromEntries(
    [assistant!, planner!, coder!].map((a) => [
      a.id,
      {
        kid: a.signer.kid,
        privateJwk: a.signer.key.export({ format: 'jwk' }),
        publicJwk: a.publicJwk,
      },
    ]),
  ),
  credential,
  material: {
    [plannerInput.refs[0]!.digest]: { content: brief },
    [salted.ref.digest]: { content: prompt, salt: salt.toString('base64url') },
  },
  offers: [
    {
      name: 'assistant to planner (the chain element)',
      input: strip(assistantInput),
      jws: assistantOffer.element,
      octets: (assistantOffer.element as string).length,
      digest: assistantOffer.digest,
    },
    {
      name: 'planner to coder (the current offer)',
      input: strip(plannerInput),
      jws: plannerOffer.element,
      octets: (plannerOffer.element as string).length,
      digest: plannerOffer.digest,
      coseHex: Buffer.from(plannerCose.element as Uint8Array).toString('hex'),
      coseDigest: plannerCose.digest,
    },
  ],
  handoff,
  verifyAt: { audience: CODER, now: T0 + 1, dialog: 'ctx-7c1e' },
  status: {
    name: 'coder accepts',
    input: { iss: CODER, state: 'accepted', iat: T0 + 2 },
    jws: accepted.element,
    offer: plannerOffer.digest,
    digest: accepted.digest,
  },
}

// ---- negative vectors: one case per reason code at least ----
type Case = {
  name: string
  reason: string
  check: string
  index?: number
  handoff: unknown
  audience?: string
  now?: number
  before?: Handoff[]
  options?: Record<string, unknown>
}

const base = buildChain([assistant!, planner!], CODER)
const tamperSig = (jws: string) => {
  const i = jws.lastIndexOf('.') + 5
  return jws.slice(0, i) + (jws[i] === 'A' ? 'B' : 'A') + jws.slice(i + 1)
}
const offerJws = base.offer as string
const [h64, p64] = offerJws.split('.') as [string, string, string]
const payload = JSON.parse(Buffer.from(p64, 'base64url').toString('utf8'))
const resign = (header: Record<string, unknown>, body: Record<string, unknown>, who = planner!) =>
  signJws(header as { alg: string }, Buffer.from(JSON.stringify(body)), 'EdDSA', who.signer.key)
const hdr = JSON.parse(Buffer.from(h64, 'base64url').toString('utf8'))
const single = (extra: Record<string, unknown> = {}, who = planner!) =>
  signOffer({
    signer: who.signer,
    aud: CODER,
    dialog: 'ctx-7c1e',
    iat: T0,
    hop: hopOf(`single:${JSON.stringify(extra)}`),
    ...extra,
  }).element as string

const long = buildChain([assistant!, planner!, coder!, tester!], STRANGER)
const seventeen = await agents(
  Array.from({ length: 17 }, (_, i) => `spiffe://d.example/agent/${i}`),
)
const deep = buildChain(seventeen, 'spiffe://d.example/agent/receiver')
const deepTrust = Object.fromEntries(seventeen.map((a) => [a.id, a.publicJwk]))

const cases: Case[] = [
  {
    name: 'signature byte changed',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { ...base, offer: tamperSig(offerJws) },
  },
  {
    name: 'payload member changed',
    reason: 'bad-signature',
    check: 'signature',
    handoff: {
      ...base,
      offer: `${h64}.${Buffer.from(JSON.stringify({ ...payload, task: 'task-43' })).toString('base64url')}.${offerJws.split('.')[2]}`,
    },
  },
  {
    name: 'alg none',
    reason: 'bad-signature',
    check: 'signature',
    handoff: {
      offer: `${Buffer.from(JSON.stringify({ alg: 'none', kid: planner!.signer.kid, typ: 'handoff-offer+jwt' })).toString('base64url')}.${p64}.`,
    },
  },
  {
    name: 'alg HS256',
    reason: 'bad-signature',
    check: 'signature',
    handoff: {
      offer: `${Buffer.from(JSON.stringify({ alg: 'HS256', kid: planner!.signer.kid, typ: 'handoff-offer+jwt' })).toString('base64url')}.${p64}.${offerJws.split('.')[2]}`,
    },
  },
  {
    name: 'unknown crit',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: resign({ ...hdr, crit: ['exp'] }, payload) },
  },
  {
    name: 'missing typ',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: resign({ alg: 'EdDSA', kid: hdr.kid }, payload) },
  },
  {
    name: 'header typ disagrees with payload typ',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: resign({ ...hdr, typ: 'handoff-status+jwt' }, payload) },
  },
  {
    name: 'payload typ is status',
    reason: 'malformed',
    check: 'signature',
    handoff: { offer: resign(hdr, { ...payload, typ: 'status' }) },
  },
  {
    name: 'unsigned: two parts',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: `${h64}.${p64}` },
  },
  {
    name: 'padding in base64url',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: `${offerJws}==` },
  },
  {
    name: 'hop too short',
    reason: 'malformed',
    check: 'signature',
    handoff: { offer: resign(hdr, { ...payload, hop: 'abc' }) },
  },
  {
    name: 'hop of five characters, well signed',
    reason: 'malformed',
    check: 'signature',
    handoff: { offer: resign(hdr, { ...payload, hop: 'abcde' }) },
  },
  {
    name: 'hop of five characters, signature changed',
    reason: 'bad-signature',
    check: 'signature',
    handoff: { offer: tamperSig(resign(hdr, { ...payload, hop: 'abcde' })) },
  },
  {
    name: 'version 2',
    reason: 'malformed',
    check: 'signature',
    handoff: { offer: resign(hdr, { ...payload, v: 2 }) },
  },
  { name: 'handoff is not an object', reason: 'bad-signature', check: 'signature', handoff: 'eyJ' },
  {
    name: 'issuer not in trust configuration',
    reason: 'untrusted-key',
    check: 'signature',
    handoff: { offer: single({}, stranger!) },
    options: {},
  },
  {
    name: 'unknown kid',
    reason: 'untrusted-key',
    check: 'signature',
    handoff: { offer: resign({ ...hdr, kid: 'other-key' }, payload) },
  },
  {
    name: 'embedded jwk header is ignored',
    reason: 'untrusted-key',
    check: 'signature',
    handoff: {
      offer: signJws(
        { alg: 'EdDSA', kid: 'attacker', typ: 'handoff-offer+jwt', jwk: stranger!.publicJwk },
        Buffer.from(JSON.stringify({ ...payload })),
        'EdDSA',
        stranger!.signer.key,
      ),
    },
  },
  {
    name: 'offer copied to another agent',
    reason: 'wrong-audience',
    check: 'audience',
    handoff: base,
    audience: TESTER,
  },
  {
    name: 'expired beyond skew',
    reason: 'stale',
    check: 'freshness',
    handoff: base,
    now: T0 + 1 + 120 + 60,
  },
  {
    name: 'issued in the future beyond skew',
    reason: 'stale',
    check: 'freshness',
    handoff: base,
    now: T0 - 62,
  },
  {
    name: 'exp not after iat',
    reason: 'stale',
    check: 'freshness',
    handoff: { offer: resign(hdr, { ...payload, exp: payload.iat }) },
  },
  {
    name: 'lifetime over 300 s',
    reason: 'stale',
    check: 'freshness',
    handoff: { offer: single({ ttlS: 301 }) },
  },
  {
    name: 'lifetime over the receiver configured maximum',
    reason: 'stale',
    check: 'freshness',
    handoff: base,
    options: { maxLifetimeMs: 60_000 },
  },
  {
    name: 'lifetime over 300 s and sent to another agent: audience comes first',
    reason: 'wrong-audience',
    check: 'audience',
    handoff: { offer: single({ ttlS: 301 }) },
    audience: TESTER,
  },
  {
    name: 'lifetime over 300 s and an unexpected dialog: freshness comes first',
    reason: 'stale',
    check: 'freshness',
    handoff: { offer: single({ ttlS: 400 }) },
    options: { dialog: 'ctx-other' },
  },
  {
    name: 'same offer seen before',
    reason: 'replay',
    check: 'replay',
    handoff: base,
    before: [base],
  },
  {
    name: 'same sender and hop, other octets',
    reason: 'equivocation',
    check: 'replay',
    handoff: { offer: single({ hop: hopOf('eq'), task: 'b' }) },
    before: [{ offer: single({ hop: hopOf('eq'), task: 'a' }) }],
  },
  {
    name: 'dialog not expected',
    reason: 'policy',
    check: 'dialog',
    handoff: base,
    options: { dialog: 'ctx-other' },
  },
  {
    name: 'middle hop dropped',
    reason: 'broken-chain',
    check: 'chain',
    index: 1,
    handoff: { offer: long.offer, chain: [long.chain![0], long.chain![2]] },
    audience: STRANGER,
  },
  {
    name: 'hops reordered',
    reason: 'broken-chain',
    check: 'chain',
    index: 1,
    handoff: { offer: long.offer, chain: [long.chain![1], long.chain![0], long.chain![2]] },
    audience: STRANGER,
  },
  {
    name: 'prev does not name the chain element',
    reason: 'broken-chain',
    check: 'chain',
    index: 1,
    handoff: { offer: single({ prev: handoffDigest('something else') }), chain: base.chain },
  },
  {
    name: 'continuity: earlier aud is not next iss',
    reason: 'broken-chain',
    check: 'chain',
    index: 1,
    handoff: (() => {
      const first = signOffer({
        signer: assistant!.signer,
        aud: TESTER,
        dialog: 'ctx-7c1e',
        iat: T0 - 1,
        hop: hopOf('cont'),
      })
      return toHandoff(
        signOffer({
          signer: planner!.signer,
          aud: CODER,
          dialog: 'ctx-7c1e',
          iat: T0,
          hop: hopOf('cont2'),
          prev: first.element,
        }),
        { after: toHandoff(first), chain: true },
      )
    })(),
  },
  {
    name: 'timing: earlier offer expired when next was issued',
    reason: 'broken-chain',
    check: 'chain',
    index: 1,
    handoff: (() => {
      const first = signOffer({
        signer: assistant!.signer,
        aud: PLANNER,
        dialog: 'ctx-7c1e',
        iat: T0 - 400,
        ttlS: 100,
        hop: hopOf('time'),
      })
      return toHandoff(
        signOffer({
          signer: planner!.signer,
          aud: CODER,
          dialog: 'ctx-7c1e',
          iat: T0,
          hop: hopOf('time2'),
          prev: first.element,
        }),
        { after: toHandoff(first), chain: true },
      )
    })(),
  },
  {
    name: 'chain element signature changed',
    reason: 'bad-signature',
    check: 'chain',
    index: 0,
    handoff: { offer: base.offer, chain: [tamperSig(base.chain![0] as string)] },
  },
  {
    name: 'chain element from an untrusted issuer',
    reason: 'untrusted-key',
    check: 'chain',
    index: 0,
    handoff: (() => {
      const first = signOffer({
        signer: stranger!.signer,
        aud: PLANNER,
        dialog: 'ctx-7c1e',
        iat: T0 - 1,
        hop: hopOf('untrusted-el'),
      })
      return toHandoff(
        signOffer({
          signer: planner!.signer,
          aud: CODER,
          dialog: 'ctx-7c1e',
          iat: T0,
          hop: hopOf('untrusted-el2'),
          prev: first.element,
        }),
        { after: toHandoff(first), chain: true },
      )
    })(),
  },
  {
    name: 'a sender appears twice',
    reason: 'cycle',
    check: 'chain',
    index: 2,
    handoff: buildChain([assistant!, planner!, assistant!, tester!], CODER, { task: 'cycle' }),
  },
  {
    name: 'receiver appears earlier in the chain',
    reason: 'cycle',
    check: 'chain',
    index: 0,
    handoff: buildChain([assistant!, coder!, planner!], CODER, { task: 'self' }),
  },
  {
    name: 'seventeen offers',
    reason: 'too-deep',
    check: 'chain',
    index: 16,
    handoff: deep,
    audience: 'spiffe://d.example/agent/receiver',
    options: { trust: deepTrust },
  },
  {
    name: 'partial chain when a full chain is required',
    reason: 'policy',
    check: 'chain',
    index: 0,
    handoff: { offer: base.offer },
    options: { requireFullChain: true },
  },
  {
    name: 'origin not trusted',
    reason: 'policy',
    check: 'chain',
    index: 0,
    handoff: base,
    options: { trustedOrigins: [TESTER] },
  },
  {
    name: 'required ref without material',
    reason: 'unverifiable-ref',
    check: 'refs',
    handoff: { offer: single({ refs: [createDigestRef('context')] }) },
    options: { refs: { require: 'all' } },
  },
  {
    name: 'ref content differs',
    reason: 'ref-mismatch',
    check: 'refs',
    handoff: { offer: single({ refs: [createDigestRef('context')] }) },
    options: {
      refs: {
        require: 'all',
        material: { [createDigestRef('context').digest]: { content: 'other context' } },
      },
    },
  },
  {
    name: 'salted ref with the wrong salt',
    reason: 'ref-mismatch',
    check: 'refs',
    handoff: { offer: single({ refs: [salted.ref] }) },
    options: {
      refs: {
        require: 'all',
        material: {
          [salted.ref.digest]: { content: prompt, salt: Buffer.alloc(16).toString('base64url') },
        },
      },
    },
  },
  {
    name: 'element over the size bound',
    reason: 'policy',
    check: 'signature',
    handoff: { offer: single({ task: 'x'.repeat(17_000) }) },
  },
]

const negative = {
  description:
    'Negative vectors: each handoff fails verification with the stated reason and check. ' +
    'Defaults: audience is the coder, now is T0 + 1, trust is the four agents, replay store fresh; ' +
    '`before` handoffs are verified first with the same replay store.',
  defaults: { audience: CODER, now: T0 + 1, trust },
  cases,
}

await writeFile(path.join(dir, 'planner-coder.json'), `${JSON.stringify(positive, null, 2)}\n`)
await writeFile(path.join(dir, 'negative.json'), `${JSON.stringify(negative, null, 2)}\n`)
console.log(`wrote ${cases.length} negative cases`)
