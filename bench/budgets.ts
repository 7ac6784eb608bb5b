// Budgets on delegations (issue 28) over signed HTTP: reserve + settle pairs per second against
// one budget (the hot row every pair moves) and spread over one budget per concurrent client,
// each beside signed `GET /v1/me` per second in the same round on the same hub, with the hub's
// CPU per pair and per `/v1/me` read from /proc. Per store, medians of `BENCH_ROUNDS` rounds, the
// load average printed beside.
//
// A round signs its requests before it is timed, then sends from the child load client: the
// `/v1/me` batch, then N reserves (each its own key) and, once their hold ids are known, N
// settles; pairs/s is N over the two phases' time together. Every answer must be 200, and the
// ledgers must hold exactly what was settled.
//
//   node --import tsx bench/budgets.ts
//   BENCH_STORES=sqlite BENCH_ROUNDS=5 node --import tsx bench/budgets.ts

import { loadavg } from 'node:os'
import { pathToFileURL } from 'node:url'
import { BudgetClient, createIdentity, HopClient, SignedClient } from '@baton/client'
import { perStore, type Store, startBenchHub } from './hub.js'
import {
  assertAllAnswered,
  type LoadRequest,
  median,
  printResults,
  type Result,
  signedLoadRequest,
  startLoadClient,
} from './lib.js'
import { threadCpuUs } from './signed-requests.js'

const env = process.env
const intEnv = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback)
const options = {
  stores: (env.BENCH_STORES ?? 'sqlite,postgres').split(',') as Store[],
  pairs: intEnv('BENCH_BUDGET_PAIRS', 600),
  concurrency: intEnv('BENCH_CONCURRENCY', 32),
  rounds: intEnv('BENCH_ROUNDS', 3),
}

/** This bench's hub on a store: PostgreSQL's on a database of its own on the server given. */
function hubFor(store: Store, postgres: string | undefined) {
  return startBenchHub(
    'budgets',
    {
      BATON_QUOTA_REQUESTS_PER_DAY: String(1e9),
      BATON_ENROL_PER_ADDRESS_PER_HOUR: '1000',
      // Every hold of a round is open at once before the settles: the caps out of the way.
      BATON_BUDGET_MAX_HOLDS: String(1e9),
      BATON_BUDGET_MAX_HOLDS_PER_PRINCIPAL: String(1e9),
      BATON_BUDGET_MAX_ENTRIES: String(1e9),
    },
    { postgres: store === 'postgres' ? postgres : undefined },
  )
}

/** CPU µs of every thread of this process (the hub's: the load client is a child) since `from`. */
const cpuSince = (from: ReturnType<typeof threadCpuUs>) => {
  const now = threadCpuUs()
  return from && now ? now.main + now.others - from.main - from.others : Number.NaN
}

async function measure(store: Store, pgUrl: string | undefined): Promise<Result[]> {
  const { hub, stop } = await hubFor(store, pgUrl)
  const load = await startLoadClient('child')
  try {
    const discovery = `${hub.url}/.well-known/agent-net`
    const delegator = await SignedClient.connect(discovery, createIdentity(hub.url))
    const worker = createIdentity(hub.url)
    const delegate = await SignedClient.connect(discovery, worker)
    await delegator.me()
    await delegate.me()
    // The hops whose budgets the pairs reserve from and settle on. A budget lives as long as its
    // offer (300 s at most); a round is a few seconds.
    // A delegate per client for the spread shape, so neither a budget's row nor a principal's
    // count of open holds is one that every pair moves.
    const delegates = [{ identity: worker, client: delegate }]
    for (let c = 1; c < options.concurrency; c++) {
      const identity = createIdentity(hub.url)
      const client = await SignedClient.connect(discovery, identity)
      await client.me()
      delegates.push({ identity, client })
    }
    const offer = async (to = delegates[0]!) =>
      (
        await new HopClient(delegator).offer({
          to: to.client.principal,
          dialog: 'bench-budgets',
          ttlS: 300,
          budget: { unit: 'usd', amountMicros: 1e15 },
        })
      ).signed.digest
    const me = (): LoadRequest[] =>
      Array.from({ length: options.pairs }, () =>
        signedLoadRequest(hub.url, worker, 'GET', '/v1/me'),
      )
    let seq = 0
    /** The i-th pair goes to budget i modulo how many there are: one for all, or one per client. */
    const reserves = (digests: string[]): LoadRequest[] =>
      Array.from({ length: options.pairs }, (_, i) =>
        signedLoadRequest(
          hub.url,
          delegates[i % digests.length]!.identity,
          'POST',
          `/v1/budgets/${digests[i % digests.length]}/holds`,
          {
            idempotencyKey: `bench-${seq++}`,
            amountMicros: 1000,
          },
        ),
      )
    const settles = (digests: string[], holds: string[]): LoadRequest[] =>
      holds.map((hold, i) =>
        signedLoadRequest(
          hub.url,
          delegates[i % digests.length]!.identity,
          'POST',
          `/v1/budgets/${digests[i % digests.length]}/holds/${hold}/settle`,
          { amountMicros: 700 },
        ),
      )
    // Warm-up, not counted.
    const warm = await offer()
    await load.run({ origin: hub.url, requests: me().slice(0, 100), concurrency: 8 })
    await load.run({ origin: hub.url, requests: reserves([warm]).slice(0, 50), concurrency: 8 })

    const rounds = async (shape: { name: string; budgets: number }): Promise<Result> => {
      const base: number[] = []
      const pairs: number[] = []
      const cpuMe: number[] = []
      const cpuPair: number[] = []
      const p50: { reserve: number[]; settle: number[] } = { reserve: [], settle: [] }
      const loads: number[] = []
      for (let round = 0; round < options.rounds; round++) {
        const digests: string[] = []
        for (let b = 0; b < shape.budgets; b++) digests.push(await offer(delegates[b]))
        const meBatch = me()
        const beforeMe = threadCpuUs()
        const m = await load.run({
          origin: hub.url,
          requests: meBatch,
          concurrency: options.concurrency,
        })
        cpuMe.push(cpuSince(beforeMe) / options.pairs)
        assertAllAnswered('GET /v1/me', m, 200)
        base.push(m.perSecond)

        const reserveBatch = reserves(digests)
        const beforeReserves = threadCpuUs()
        const r = await load.run({
          origin: hub.url,
          requests: reserveBatch,
          concurrency: options.concurrency,
          keepBodies: true,
        })
        const reserveCpu = cpuSince(beforeReserves)
        assertAllAnswered('reserve', r, 200)
        const holds = r.bodies!.map((b) => (JSON.parse(b) as { holdId: string }).holdId)
        // Signing the settles is the bench's own work, not the hub's: it is left out of the CPU.
        const settleBatch = settles(digests, holds)
        const beforeSettles = threadCpuUs()
        const s = await load.run({
          origin: hub.url,
          requests: settleBatch,
          concurrency: options.concurrency,
        })
        const settleCpu = cpuSince(beforeSettles)
        assertAllAnswered('settle', s, 200)
        cpuPair.push((reserveCpu + settleCpu) / options.pairs)
        pairs.push((options.pairs / (r.elapsedMs + s.elapsedMs)) * 1000)
        p50.reserve.push(r.p50)
        p50.settle.push(s.p50)
        loads.push(loadavg()[0]!)
        // The ledgers must hold exactly what was settled, and nothing still held.
        let spent = 0
        for (const digest of digests) {
          const [ledger] = (await new BudgetClient(delegator).read(digest)).budgets
          if (ledger?.heldMicros !== 0)
            throw new Error(`after the round: ${JSON.stringify(ledger)}`)
          spent += ledger.spentMicros
        }
        if (spent !== options.pairs * 700) throw new Error(`${spent} spent after the round`)
        process.stderr.write(
          `  ${store}, ${shape.name}, round ${round + 1}: /v1/me ${m.perSecond.toFixed(0)}/s, pairs ${pairs.at(-1)!.toFixed(0)}/s, hub CPU ${cpuMe.at(-1)!.toFixed(0)} µs/me ${cpuPair.at(-1)!.toFixed(0)} µs/pair, load ${loads.at(-1)!.toFixed(1)}\n`,
        )
      }
      const b = median(base)
      const v = median(pairs)
      return {
        name: `budget reserve + settle pairs, ${shape.name} (${store})`,
        baseline: b,
        value: v,
        ratio: v / b,
        unit: 'per s (baseline: signed GET /v1/me per s)',
        detail: {
          concurrency: options.concurrency,
          pairs: options.pairs,
          hub_cpu_us_per_me: Math.round(median(cpuMe)),
          hub_cpu_us_per_pair: Math.round(median(cpuPair)),
          p50_reserve_ms: Number(median(p50.reserve).toFixed(1)),
          p50_settle_ms: Number(median(p50.settle).toFixed(1)),
          loadavg_1m: Number(median(loads).toFixed(2)),
        },
      }
    }
    return [
      await rounds({ name: 'one budget', budgets: 1 }),
      await rounds({
        name: `a budget per client (${options.concurrency})`,
        budgets: options.concurrency,
      }),
    ]
  } finally {
    await load.close()
    await stop()
  }
}

/** The scenario: each store, medians of `BENCH_ROUNDS` rounds. */
export function run(): Promise<Result[]> {
  return perStore(options.stores, measure)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
