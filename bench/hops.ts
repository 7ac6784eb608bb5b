// The hub as a delegation witness (seed 003). Two figures, each beside its baseline in the same
// run: offers delivered per second over signed HTTP (the seven checks, the replay write, the
// delivery with its hub-signed receipt) beside signed GET /v1/me per second; and a 16-hop chain
// verified by the hub (its trust configuration read from the admitted principals, then the
// library's checks) beside 16 raw node:crypto Ed25519 verifies of the same signatures. The goal
// for the second is the library's own: ratio under 1.15. The chain is checked again and again, as
// the hub meets a chain's earlier offers at every later hop, so their parse is reused (never their
// admission, key or signature); the detail `neverSeenRatio` is the same figure over chains the hub
// has never parsed. Each chain is timed beside its raw verifies, one pair at a time, alternating
// which goes first; a round compares the medians per chain, and the ratio is the median of the
// rounds' ratios. SQLite, open admission.
//
// The hub checks a chain's signatures on libuv's thread pool, all at once, so what a caller waits
// is no longer what the hub spends. Two more figures say what it spends, over a batch of chains
// checked one after another beside the raw loop over the same signatures, batches alternating
// (A, B, A, B): the process's CPU (process.cpuUsage, every thread, the pool's included) and the
// event loop's busy time (performance.eventLoopUtilization), each per chain, and the p99 of how
// late a 1 ms timer fires meanwhile (monitorEventLoopDelay): what any other request waits. The load average is
// printed with them: on a shared machine the pool's threads compete with other work. The `onLoop`
// figures are the same checks with the signatures verified on the event loop, one after another
// (`check(..., { offload: false })`), measured in the same rounds, to show the trade.
//
//   node --import tsx bench/hops.ts
//   BENCH_OFFERS=1000 BENCH_ROUNDS=3 node --import tsx bench/hops.ts
import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import { loadavg } from 'node:os'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { setImmediate } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { createIdentity, hopSigner, SignedClient } from '@baton/client'
import { type Handoff, parseJws, signOffer } from '@baton/context'
import { signChain } from './chains.js'
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
const COLD_BATCH = intEnv('BENCH_CHAIN_COLD_BATCH', 20)
const CPU_ROUNDS = intEnv('BENCH_CHAIN_CPU_ROUNDS', 7)
const CPU_BATCH = intEnv('BENCH_CHAIN_CPU_BATCH', 100)
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
    const hops = signers.map((signer, i) => ({
      signer,
      aud: (agents[i + 1] ?? last).principal,
    }))
    const chainOf = (dialog: string): Handoff => signChain(hops, () => ({ dialog, ttlS: 300 }))
    const sender = agents[AGENTS - 1]!.principal
    const rawOf = (h: Handoff) =>
      [...h.chain!, h.offer].map((e, i) => {
        const jws = parseJws(e as string)
        return {
          data: jws.signingInput,
          sig: Buffer.from(jws.signature),
          key: createPublicKey(agents[i]!.privateKey) as KeyObject,
        }
      })
    const raw = (raws: ReturnType<typeof rawOf>) => {
      for (const r of raws) if (!verify(null, r.data, r.key, r.sig)) throw new Error('raw')
    }
    const witnessed = async (h: Handoff, offload = true) => {
      const r = await hub.ctx.hops.check(sender, last.principal, h, { offload })
      if (!r.ok) throw new Error(`the bench chain does not verify: ${r.reason}`)
    }
    /**
     * Each side's median microseconds per chain over these chains, timed one pair at a time,
     * alternating which goes first: the median keeps a chain that a busy machine preempted from
     * weighing on one side only.
     */
    const pairs = async (
      chains: readonly Handoff[],
      raws: ReturnType<typeof rawOf>[],
      offload = true,
    ) => {
      const rawUs: number[] = []
      const hubUs: number[] = []
      for (let b = 0; b < chains.length; b++) {
        const a = process.hrtime.bigint()
        if (b % 2 === 0) raw(raws[b]!)
        else await witnessed(chains[b]!, offload)
        const m = process.hrtime.bigint()
        if (b % 2 === 0) await witnessed(chains[b]!, offload)
        else raw(raws[b]!)
        const z = process.hrtime.bigint()
        rawUs.push(Number(b % 2 === 0 ? m - a : z - m) / 1000)
        hubUs.push(Number(b % 2 === 0 ? z - m : m - a) / 1000)
      }
      return { raw: median(rawUs), hub: median(hubUs) }
    }
    // The same chain again and again, as the hub meets a chain's earlier offers at every later
    // hop; and chains never seen before (signed outside the timing), whose every element the hub
    // parses for the first time. Both beside 16 raw verifies of the very signatures checked.
    const chain = chainOf('bench-chain')
    const same = Array.from({ length: CHAIN_BATCH }, () => chain)
    const chainRaw = rawOf(chain)
    const sameRaw = same.map(() => chainRaw)
    await pairs(same, sameRaw)
    const rawMs: number[] = []
    const hubMs: number[] = []
    const ratios: number[] = []
    const coldRatios: number[] = []
    const inlineRatios: number[] = []
    const inlineColdRatios: number[] = []
    const freshChains = (label: string) => {
      const chains = Array.from({ length: COLD_BATCH }, (_, i) => chainOf(`${label}-${i}`))
      return { chains, raws: chains.map(rawOf) }
    }
    for (let round = 0; round < CHAIN_ROUNDS; round++) {
      // the same checks with the signatures on the event loop, one after another, to compare;
      // which of the two goes first alternates by round
      for (const offload of round % 2 === 0 ? [true, false] : [false, true]) {
        const warm = await pairs(same, sameRaw, offload)
        const fresh = freshChains(`cold-${round}-${offload}`)
        const cold = await pairs(fresh.chains, fresh.raws, offload)
        if (offload) {
          rawMs.push(warm.raw / 1000)
          hubMs.push(warm.hub / 1000)
          ratios.push(warm.hub / warm.raw)
          coldRatios.push(cold.hub / cold.raw)
        } else {
          inlineRatios.push(warm.hub / warm.raw)
          inlineColdRatios.push(cold.hub / cold.raw)
        }
      }
    }

    /**
     * The process's CPU and the event loop's busy time over these chains checked one after another
     * (or their raw verifies looped), and the 99th percentile of how late a 1 ms timer fired
     * meanwhile: what any other request on the loop waited.
     */
    const spend = async (work: () => Promise<void> | void) => {
      const delay = monitorEventLoopDelay({ resolution: 1 })
      delay.enable()
      const elu = performance.eventLoopUtilization()
      const cpu = process.cpuUsage()
      await work()
      const used = process.cpuUsage(cpu)
      const loop = performance.eventLoopUtilization(elu).active
      delay.disable()
      return { cpu: used.user + used.system, loop, delayMs: delay.percentile(99) / 1e6 }
    }
    type Batch = { chains: readonly Handoff[]; raws: ReturnType<typeof rawOf>[] }
    // Each chain is checked from a macrotask of its own, as each request is: otherwise a batch of
    // on-loop checks is one chain of promise jobs and no timer could fire until it ends.
    const hubSide = (b: Batch, offload: boolean) =>
      spend(async () => {
        for (const h of b.chains) {
          await setImmediate()
          await witnessed(h, offload)
        }
      })
    const rawSide = (b: Batch) =>
      spend(() => {
        for (const r of b.raws) raw(r)
      })
    /** Raw then hub over one batch, hub then raw over the other; per chain, both orders summed. */
    const spendPair = async (one: Batch, two: Batch, offload = true) => {
      const r1 = await rawSide(one)
      const h1 = await hubSide(one, offload)
      const h2 = await hubSide(two, offload)
      const r2 = await rawSide(two)
      const n = one.chains.length + two.chains.length
      return {
        rawCpu: (r1.cpu + r2.cpu) / n,
        hubCpu: (h1.cpu + h2.cpu) / n,
        rawLoopUs: ((r1.loop + r2.loop) * 1000) / n,
        hubLoopUs: ((h1.loop + h2.loop) * 1000) / n,
        hubDelayMs: Math.max(h1.delayMs, h2.delayMs),
      }
    }
    const freshBatch = (label: string): Batch => {
      const chains = Array.from({ length: CPU_BATCH }, (_, i) => chainOf(`${label}-${i}`))
      return { chains, raws: chains.map(rawOf) }
    }
    const sameBatch: Batch = {
      chains: Array.from({ length: CPU_BATCH }, () => chain),
      raws: Array.from({ length: CPU_BATCH }, () => chainRaw),
    }
    const cpuSame: number[] = []
    const cpuCold: number[] = []
    const loopSame: number[] = []
    const loopCold: number[] = []
    const rawCpuUs: number[] = []
    const hubCpuUs: number[] = []
    const hubLoopUs: number[] = []
    const cpuInline: number[] = []
    const cpuInlineCold: number[] = []
    const delaySame: number[] = []
    const delayInline: number[] = []
    for (let round = 0; round < CPU_ROUNDS; round++) {
      const inline = await spendPair(sameBatch, sameBatch, false)
      cpuInline.push(inline.hubCpu / inline.rawCpu)
      delayInline.push(inline.hubDelayMs)
      const inlineCold = await spendPair(
        freshBatch(`cpu-${round}-c`),
        freshBatch(`cpu-${round}-d`),
        false,
      )
      cpuInlineCold.push(inlineCold.hubCpu / inlineCold.rawCpu)
      const warm = await spendPair(sameBatch, sameBatch)
      cpuSame.push(warm.hubCpu / warm.rawCpu)
      delaySame.push(warm.hubDelayMs)
      loopSame.push(warm.hubLoopUs / warm.rawLoopUs)
      rawCpuUs.push(warm.rawCpu)
      hubCpuUs.push(warm.hubCpu)
      hubLoopUs.push(warm.hubLoopUs)
      const cold = await spendPair(freshBatch(`cpu-${round}-a`), freshBatch(`cpu-${round}-b`))
      cpuCold.push(cold.hubCpu / cold.rawCpu)
      loopCold.push(cold.hubLoopUs / cold.rawLoopUs)
    }
    const load = loadavg()
    log(`load average ${load.map((l) => l.toFixed(2)).join(' ')}`)

    const meRate = median(meRates)
    const offerRate = median(offerRates)
    const rawChain = median(rawMs)
    const hubChain = median(hubMs)
    const chainRatio = median(ratios)
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
        ratio: chainRatio,
        unit: 'ms per chain (lower is better; goal ratio < 1.15)',
        detail: {
          rounds: CHAIN_ROUNDS,
          neverSeenRatio: Number(median(coldRatios).toFixed(3)),
          onLoopRatio: Number(median(inlineRatios).toFixed(3)),
          onLoopNeverSeenRatio: Number(median(inlineColdRatios).toFixed(3)),
          loadavg1: load[0]!,
        },
      },
      {
        name: 'hops: CPU the hub spends on a 16-hop chain vs 16 raw Ed25519 verifies',
        baseline: median(rawCpuUs) / 1000,
        value: median(hubCpuUs) / 1000,
        ratio: median(cpuSame),
        unit: 'CPU ms per chain, every thread (lower is better)',
        detail: {
          rounds: CPU_ROUNDS,
          neverSeenCpuRatio: Number(median(cpuCold).toFixed(3)),
          loopMsPerChain: Number((median(hubLoopUs) / 1000).toFixed(3)),
          loopRatio: Number(median(loopSame).toFixed(3)),
          neverSeenLoopRatio: Number(median(loopCold).toFixed(3)),
          onLoopCpuRatio: Number(median(cpuInline).toFixed(3)),
          onLoopNeverSeenCpuRatio: Number(median(cpuInlineCold).toFixed(3)),
          loopDelayP99Ms: Number(median(delaySame).toFixed(2)),
          onLoopDelayP99Ms: Number(median(delayInline).toFixed(2)),
          loadavg1: load[0]!,
          loadavg5: load[1]!,
        },
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
