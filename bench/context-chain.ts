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
  TrustStore,
  verifyHandoff,
} from '@baton/context'
import { signChain } from './chains.js'

const HOPS = 16
const ROUNDS = 15
const BATCH = 150
const T0 = 1_793_000_000

interface Fixture {
  handoff: Handoff
  trust: TrustStore
  audience: string
  raw: { data: Buffer; sig: Buffer; key: KeyObject }[]
  /** Signs another chain over the same hops, its octets never seen before (`dialog` differs). */
  another(dialog: string): { handoff: Handoff; raw: Fixture['raw'] }
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
  const publicKeys = signers.map((signer) =>
    createPublicKey({ key: keys[signer.iss]!, format: 'jwk' }),
  )
  const hops = signers.map((signer, i) => ({
    signer,
    aud: i === HOPS - 1 ? audience : signers[i + 1]!.iss,
  }))
  const another = (dialog: string) => {
    const signed = signChain(hops, (i) => ({ dialog, task: 'task-42', iat: T0 + i }))
    // as a receiver meets it off the wire: strings of its own, not the signer's objects
    const h = JSON.parse(JSON.stringify(signed)) as Handoff
    const raw = [...(h.chain ?? []), h.offer].map((e, i) => {
      const p = parseJws(e as string)
      return { data: p.signingInput, sig: p.signature, key: publicKeys[i]! }
    })
    return { handoff: h, raw }
  }
  const { handoff, raw } = another('ctx-7c1e')
  return { handoff, trust: new TrustStore(keys), audience, raw, another }
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
  const rawChain = (raw: Fixture['raw']): void => {
    for (const r of raw) if (!verify(null, r.data, r.key, r.sig)) throw new Error('raw verify')
  }
  const libChain = async (handoff: Handoff): Promise<void> => {
    const r = await verifyHandoff(handoff, options)
    if (!r.ok) throw new Error(`library verify: ${r.reason}`)
  }
  for (let i = 0; i < 100; i++) {
    rawChain(f.raw)
    await libChain(f.handoff)
    const fresh = f.another(`warm-${i}`)
    await libChain(fresh.handoff)
  }
  /**
   * Rounds of pairs interleaved one chain at a time, alternating which side goes first, so the
   * load of a shared machine falls on both sides alike; `chains` gives each round's chains.
   */
  const measure = async (chains: (round: number) => ReturnType<Fixture['another']>[]) => {
    const raws: number[] = []
    const libs: number[] = []
    const ratios: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const batch = chains(round)
      let raw = 0
      let lib = 0
      for (let i = 0; i < BATCH; i++) {
        const { handoff, raw: sigs } = batch[i]!
        if (i % 2 === 0) {
          const a = process.hrtime.bigint()
          rawChain(sigs)
          const b = process.hrtime.bigint()
          await libChain(handoff)
          const c = process.hrtime.bigint()
          raw += Number(b - a)
          lib += Number(c - b)
        } else {
          const a = process.hrtime.bigint()
          await libChain(handoff)
          const b = process.hrtime.bigint()
          rawChain(sigs)
          const c = process.hrtime.bigint()
          lib += Number(b - a)
          raw += Number(c - b)
        }
      }
      raws.push(raw / BATCH / 1000)
      libs.push(lib / BATCH / 1000)
      ratios.push(lib / raw)
    }
    return { baseline: median(raws), value: median(libs), ratio: median(ratios) }
  }
  const seen = await measure(() => Array.from({ length: BATCH }, () => f))
  // every chain signed before its round, so only the checks are timed
  const never = await measure((round) =>
    Array.from({ length: BATCH }, (_, i) => f.another(`never-${round}-${i}`)),
  )
  return [
    {
      name: `context: verify a ${HOPS}-hop chain vs ${HOPS} raw Ed25519 verifies`,
      unit: 'us/chain',
      ...seen,
    },
    {
      name: `context: verify a never-seen ${HOPS}-hop chain, fresh octets off the wire, vs ${HOPS} raw Ed25519 verifies`,
      unit: 'us/chain',
      ...never,
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
