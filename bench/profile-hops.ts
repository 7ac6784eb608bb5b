// A CPU profile of the hub checking 16-hop chains with every signature on the event loop
// (`hub.ctx.hops.check(..., { offload: false })`): N chains are signed before the profile starts,
// so only the hub's checks are sampled. Fresh chains by default (every element parsed for the
// first time); BENCH_PROFILE_SEEN=1 checks one chain N times instead. Prints self time by
// function and by file, per chain, and the inclusive time of the signature verifies.
// BENCH_PROFILE=0 runs no profiler and prints the never-seen CPU ratio against raw verifies.
//
//   node --import tsx bench/profile-hops.ts
//   BENCH_PROFILE_SEEN=1 BENCH_CHAINS=400 node --import tsx bench/profile-hops.ts
import { createPublicKey, verify } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { loadavg } from 'node:os'
import { setImmediate } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import { createIdentity, hopSigner, SignedClient } from '@baton/client'
import { type Handoff, parseJws } from '@baton/context'
import { signChain } from './chains.js'
import { startBenchHub } from './hub.js'

const CHAINS = Number(process.env.BENCH_CHAINS ?? 300)
const SEEN = process.env.BENCH_PROFILE_SEEN === '1'
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 30)
const HOPS = 16

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

/** Profiles the hub's checks of 16-hop chains and prints the summaries. */
async function profileHops(): Promise<void> {
  const { hub, stop } = await startBenchHub('profile-hops')
  try {
    const discoveryUrl = `${hub.url}/.well-known/agent-net`
    const agents = Array.from({ length: HOPS + 1 }, () => createIdentity(discoveryUrl))
    for (const id of agents) await (await SignedClient.connect(discoveryUrl, id)).me()
    const signers = await Promise.all(agents.map((a) => hopSigner(a)))
    const hops = signers
      .slice(0, HOPS)
      .map((signer, i) => ({ signer, aud: agents[i + 1]!.principal }))
    const chainOf = (dialog: string): Handoff => signChain(hops, () => ({ dialog, ttlS: 300 }))
    const keys = agents.map((a) => createPublicKey(a.privateKey))
    const sender = agents[HOPS - 1]!.principal
    const to = agents[HOPS]!.principal
    const check = async (h: Handoff) => {
      const r = await hub.ctx.hops.check(sender, to, h, { offload: false })
      if (!r.ok) throw new Error(`the chain does not verify: ${r.reason}`)
    }
    for (let i = 0; i < 50; i++) await check(chainOf(`warm-${i}`))
    const one = chainOf('seen')
    const chains = Array.from({ length: CHAINS }, (_, i) => (SEEN ? one : chainOf(`cold-${i}`)))
    if (process.env.BENCH_PROFILE === '0') {
      // No profiler: the CPU per chain beside 16 raw verifies of the same signatures, rounds of
      // fresh chains alternating which side goes first, the median of the rounds' ratios.
      const ratios: number[] = []
      for (let round = 0; round < 7; round++) {
        const batch = Array.from({ length: 100 }, (_, i) => chainOf(`r-${round}-${i}`))
        const raws = batch.map((h) =>
          [...h.chain!, h.offer].map((e, i) => {
            const jws = parseJws(e as string)
            return { data: jws.signingInput, sig: jws.signature, key: keys[i]! }
          }),
        )
        const rawSide = () => {
          const c = process.cpuUsage()
          for (const r of raws) for (const x of r) if (!verify(null, x.data, x.key, x.sig)) throw 0
          const u = process.cpuUsage(c)
          return u.user + u.system
        }
        const hubSide = async () => {
          const c = process.cpuUsage()
          for (const h of batch) {
            await setImmediate()
            await check(h)
          }
          const u = process.cpuUsage(c)
          return u.user + u.system
        }
        const [r, h] = round % 2 === 0 ? [rawSide(), await hubSide()] : [0, 0]
        const [h2, r2] = round % 2 === 1 ? [await hubSide(), rawSide()] : [h, r]
        ratios.push(h2 / r2)
      }
      ratios.sort((a, b) => a - b)
      console.log(`never-seen cpu ratio ${ratios[3]!.toFixed(3)} load ${loadavg()[0]!.toFixed(2)}`)
      return
    }
    const session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 50 })
    await session.post('Profiler.start')
    const cpu = process.cpuUsage()
    for (const h of chains) {
      await setImmediate()
      await check(h)
    }
    const used = process.cpuUsage(cpu)
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile }
    session.disconnect()
    if (process.env.BENCH_PROFILE_OUT)
      writeFileSync(process.env.BENCH_PROFILE_OUT, JSON.stringify(profile))

    const self = new Map<number, number>()
    for (let i = 0; i < profile.samples.length; i++) {
      const node = profile.samples[i]!
      self.set(node, (self.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0))
    }
    const parent = new Map<number, ProfileNode>()
    for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node)
    const fileOf = (n: ProfileNode) =>
      n.callFrame.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*\/packages\//, '') ||
      '(native)'
    const byFn = new Map<string, number>()
    const byFile = new Map<string, number>()
    let busy = 0
    let verifies = 0
    for (const node of profile.nodes) {
      const us = self.get(node.id) ?? 0
      const f = node.callFrame
      if (us === 0 || f.functionName === '(idle)' || f.functionName === '(program)') continue
      busy += us
      const fn = `${f.functionName || '(anon)'} ${fileOf(node)}:${f.lineNumber + 1}`
      byFn.set(fn, (byFn.get(fn) ?? 0) + us)
      byFile.set(fileOf(node), (byFile.get(fileOf(node)) ?? 0) + us)
      for (let n: ProfileNode | undefined = node; n; n = parent.get(n.id)) {
        if (n.callFrame.functionName === 'verifyBytes') {
          verifies += us
          break
        }
      }
    }
    const per = (us: number) => (us / CHAINS).toFixed(1).padStart(8)
    console.log(
      `${SEEN ? 'seen' : 'never-seen'} 16-hop chains, signatures on the loop: cpu ${per(used.user + used.system)} us/chain; sampled busy ${per(busy)}, in verifyBytes ${per(verifies)}, the rest ${per(busy - verifies)}`,
    )
    const print = (title: string, m: Map<string, number>) => {
      console.log(`\n${title} (us per chain of self time)`)
      for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
        console.log(`${per(v)}  ${((v / busy) * 100).toFixed(1).padStart(5)}%  ${k}`)
      }
    }
    print('by function', byFn)
    print('by file', byFile)
  } finally {
    await stop()
  }
}

// A tool run on its own, not a scenario: nothing runs on import.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await profileHops()
