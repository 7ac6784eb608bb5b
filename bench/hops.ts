// The hub as a delegation witness (seed 003). Two figures, each beside its baseline in the same
// run: offers delivered per second over signed HTTP (the seven checks, the replay write, the
// delivery with its hub-signed receipt) beside signed GET /v1/me per second; and a 16-hop chain
// verified by the hub (its trust configuration read from the admitted principals, then the
// library's checks) beside 16 raw node:crypto Ed25519 verifies of the same signatures. The goal
// for the second is the library's own: ratio under 1.15. SQLite, open admission.
//
//   node --import tsx bench/hops.ts
//   BENCH_OFFERS=1000 BENCH_ROUNDS=3 node --import tsx bench/hops.ts
import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createIdentity, hopSigner, SignedClient } from '@baton/client'
import { type Handoff, parseJws, signOffer, toHandoff } from '@baton/context'
import { startBenchHub } from './hub.js'
import {
  assertAllAnswered,
  median,
  printResults,
  type Result,
  signedLoadRequest,
  startLoadClient,
} from './lib.js'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)
const log = (msg: string) => process.stderr.write(`[hops] ${msg}\n`)

const OFFERS = intEnv('BENCH_OFFERS', 1000)
const CONCURRENCY = intEnv('BENCH_CONCURRENCY', 32)
const ROUNDS = intEnv('BENCH_ROUNDS', 3)
const CHAIN_ROUNDS = intEnv('BENCH_CHAIN_ROUNDS', 15)
const CHAIN_BATCH = intEnv('BENCH_CHAIN_BATCH', 100)
const AGENTS = 16

/** Runs both figures and answers their result rows. */
export async function run(): Promise<Result[]> {
  const { hub, stop } = await startBenchHub('hops')
  const client = await startLoadClient(env.BENCH_CLIENT === 'inline' ? 'inline' : 'child')
  try {
    const origin = hub.url
    const discoveryUrl = `${origin}/.well-known/agent-net`
    const agents = Array.from({ length: AGENTS }, () => createIdentity(discoveryUrl))
    for (const id of agents) await (await SignedClient.connect(discoveryUrl, id)).me()
    const signers = await Promise.all(agents.map((a) => hopSigner(a)))

    log(`${OFFERS} offers x ${ROUNDS} rounds, concurrency ${CONCURRENCY}, load ${client.where}`)
    const meRates: number[] = []
    const offerRates: number[] = []
    const offerP50: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const me = Array.from({ length: OFFERS }, (_, i) =>
        signedLoadRequest(origin, agents[i % AGENTS]!, 'GET', '/v1/me'),
      )
      const meLoad = await client.run({ origin, requests: me, concurrency: CONCURRENCY })
      assertAllAnswered('GET /v1/me', meLoad, 200)
      const offers = Array.from({ length: OFFERS }, (_, i) => {
        const from = i % AGENTS
        const to = (i * 3 + 1) % AGENTS
        const offer = signOffer({
          signer: signers[from]!,
          aud: agents[to]!.principal,
          dialog: `bench-${round}`,
          task: `task-${i}`,
        })
        return signedLoadRequest(origin, agents[from]!, 'POST', '/v1/hops', {
          to: agents[to]!.principal,
          handoff: { offer: offer.element },
        })
      })
      const offerLoad = await client.run({ origin, requests: offers, concurrency: CONCURRENCY })
      assertAllAnswered('POST /v1/hops', offerLoad, 200)
      meRates.push(meLoad.perSecond)
      offerRates.push(offerLoad.perSecond)
      offerP50.push(offerLoad.p50)
      log(
        `round ${round + 1}: me ${meLoad.perSecond.toFixed(0)}/s, offers ${offerLoad.perSecond.toFixed(0)}/s`,
      )
    }

    // A 16-hop chain: 15 chain elements through the 16 agents, then the current offer from the
    // last of them to a seventeenth agent, admitted too.
    const last = createIdentity(discoveryUrl)
    await (await SignedClient.connect(discoveryUrl, last)).me()
    let upstream: Handoff | undefined
    for (let i = 0; i < AGENTS - 1; i++) {
      const offer = signOffer({
        signer: signers[i]!,
        aud: agents[i + 1]!.principal,
        dialog: 'bench-chain',
        ttlS: 300,
        ...(upstream ? { prev: upstream.offer } : {}),
      })
      upstream = toHandoff(offer, upstream ? { after: upstream, chain: true } : {})
    }
    const tail = signOffer({
      signer: signers[AGENTS - 1]!,
      aud: last.principal,
      dialog: 'bench-chain',
      ttlS: 300,
      prev: upstream!.offer,
    })
    const chain: Handoff = toHandoff(tail, { after: upstream!, chain: true })
    const sender = agents[AGENTS - 1]!.principal
    const first = await hub.ctx.hops.check(sender, last.principal, chain)
    if (!first.ok) throw new Error(`the bench chain does not verify: ${first.reason}`)
    const raws = [...chain.chain!, chain.offer].map((e, i) => {
      const jws = parseJws(e as string)
      const signer = agents[i]!
      return {
        data: jws.signingInput,
        sig: Buffer.from(jws.signature),
        key: createPublicKey(signer.privateKey) as KeyObject,
      }
    })
    const raw = () => {
      const started = performance.now()
      for (let b = 0; b < CHAIN_BATCH; b++) {
        for (const r of raws) if (!verify(null, r.data, r.key, r.sig)) throw new Error('raw')
      }
      return (performance.now() - started) / CHAIN_BATCH
    }
    const witnessed = async () => {
      const started = performance.now()
      for (let b = 0; b < CHAIN_BATCH; b++) {
        const r = await hub.ctx.hops.check(sender, last.principal, chain)
        if (!r.ok) throw new Error(r.reason)
      }
      return (performance.now() - started) / CHAIN_BATCH
    }
    raw()
    await witnessed()
    const rawMs: number[] = []
    const hubMs: number[] = []
    for (let round = 0; round < CHAIN_ROUNDS; round++) {
      if (round % 2 === 0) {
        rawMs.push(raw())
        hubMs.push(await witnessed())
      } else {
        hubMs.push(await witnessed())
        rawMs.push(raw())
      }
    }
    const meRate = median(meRates)
    const offerRate = median(offerRates)
    const rawChain = median(rawMs)
    const hubChain = median(hubMs)
    return [
      {
        name: 'hops: offers witnessed and delivered (sqlite, signed)',
        baseline: meRate,
        value: offerRate,
        ratio: offerRate / meRate,
        unit: 'offers/s vs GET /v1/me/s',
        detail: { offerP50Ms: median(offerP50), concurrency: CONCURRENCY },
      },
      {
        name: 'hops: 16-hop chain verified by the hub vs 16 raw Ed25519 verifies',
        baseline: rawChain,
        value: hubChain,
        ratio: hubChain / rawChain,
        unit: 'ms per chain (lower is better; goal ratio < 1.15)',
        detail: { rounds: CHAIN_ROUNDS, loadavg1: loadavg()[0]! },
      },
    ]
  } finally {
    await client.close()
    await stop()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printResults(await run())
}
