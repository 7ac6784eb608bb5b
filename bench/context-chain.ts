// Verifying a 16-hop signed handoff chain (seed 003) with @baton/context, beside 16 raw
// node:crypto Ed25519 verifies of the same signatures in the same run. The goal is the library's
// overhead beyond the signature checks: ratio under 1.15.
//
//   node --import tsx bench/context-chain.ts
import { createPublicKey, type JsonWebKey, type KeyObject, verify } from 'node:crypto'
import { pathToFileURL } from 'node:url'
import {
  createSigner,
  generateKeyPair,
  type Handoff,
  parseJws,
  type Signer,
  signOffer,
  TrustStore,
  toHandoff,
  verifyHandoff,
} from '@baton/context'

const HOPS = 16
const ROUNDS = 15
const BATCH = 150
const T0 = 1_793_000_000

interface Fixture {
  handoff: Handoff
  trust: TrustStore
  audience: string
  raw: { data: Buffer; sig: Buffer; key: KeyObject }[]
}

async function fixture(): Promise<Fixture> {
  const signers: Signer[] = []
  const keys: Record<string, JsonWebKey> = {}
  for (let i = 0; i < HOPS; i++) {
    const pair = generateKeyPair('EdDSA')
    const iss = `spiffe://bench.example/agent/${i}`
    signers.push(await createSigner({ iss, key: pair.privateJwk }))
    keys[iss] = pair.publicJwk
  }
  const audience = 'spiffe://bench.example/agent/receiver'
  let handoff: Handoff | undefined
  for (let i = 0; i < HOPS; i++) {
    const offer = signOffer({
      signer: signers[i]!,
      aud: i === HOPS - 1 ? audience : signers[i + 1]!.iss,
      dialog: 'ctx-7c1e',
      task: 'task-42',
      iat: T0 + i,
      ...(handoff === undefined ? {} : { prev: handoff.offer }),
    })
    handoff = toHandoff(offer, handoff === undefined ? {} : { after: handoff, chain: true })
  }
  const h = handoff!
  const elements = [...(h.chain ?? []), h.offer] as string[]
  const raw = elements.map((e, i) => {
    const p = parseJws(e)
    const key = createPublicKey({ key: keys[signers[i]!.iss]!, format: 'jwk' })
    return { data: p.signingInput, sig: p.signature, key }
  })
  return { handoff: h, trust: new TrustStore(keys), audience, raw }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Runs the benchmark and answers each scenario beside its baseline, as a bench runner expects. */
export async function run(): Promise<
  { name: string; baseline: number; value: number; ratio: number; unit: string }[]
> {
  const f = await fixture()
  const options = { trust: f.trust, audience: f.audience, now: () => (T0 + HOPS + 5) * 1000 }
  const rawChain = (): void => {
    for (const r of f.raw) if (!verify(null, r.data, r.key, r.sig)) throw new Error('raw verify')
  }
  const libChain = async (): Promise<void> => {
    const r = await verifyHandoff(f.handoff, options)
    if (!r.ok) throw new Error(`library verify: ${r.reason}`)
  }
  for (let i = 0; i < 100; i++) {
    rawChain()
    await libChain()
  }
  const raws: number[] = []
  const libs: number[] = []
  const ratios: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // pairs interleaved one chain at a time, alternating which side goes first, so the load of a
    // shared machine falls on both sides alike
    let raw = 0
    let lib = 0
    for (let i = 0; i < BATCH; i++) {
      if (i % 2 === 0) {
        const a = process.hrtime.bigint()
        rawChain()
        const b = process.hrtime.bigint()
        await libChain()
        const c = process.hrtime.bigint()
        raw += Number(b - a)
        lib += Number(c - b)
      } else {
        const a = process.hrtime.bigint()
        await libChain()
        const b = process.hrtime.bigint()
        rawChain()
        const c = process.hrtime.bigint()
        lib += Number(b - a)
        raw += Number(c - b)
      }
    }
    raws.push(raw / BATCH / 1000)
    libs.push(lib / BATCH / 1000)
    ratios.push(lib / raw)
  }
  return [
    {
      name: `context: verify a ${HOPS}-hop chain vs ${HOPS} raw Ed25519 verifies`,
      baseline: median(raws),
      value: median(libs),
      ratio: median(ratios),
      unit: 'us/chain',
    },
  ]
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const r of await run()) {
    console.log(
      `${r.name}\n  baseline ${r.baseline.toFixed(1)} ${r.unit}  library ${r.value.toFixed(1)} ${r.unit}  ratio ${r.ratio.toFixed(3)} (median of ${ROUNDS} rounds; goal < 1.15)`,
    )
  }
}
