// What a signed request costs the hub itself, beside what a signature must cost: for signed
// `GET /v1/me`, a signed resource `PATCH` and a signed message send, the hub's CPU per request
// (every thread of the hub's process, from the kernel's accounting) minus an unsigned
// `GET /healthz`'s, divided by one raw Ed25519 verify measured in the same round. The hub runs in
// this process and the load comes from a child process, so the CPU read is the hub's alone
// (throughput would mix in the load client, which shares the machine's cores). Each round runs
// the four kinds interleaved, at a moderate load (BENCH_CONCURRENCY, default 4) and then at
// saturation (BENCH_SATURATION, default 32), where the hub moves its verifies to the thread pool.
// Goals (issue 27): /v1/me ≤ 1.5 verifies, PATCH ≤ 2.5, a message send ≤ 3.
//
//   node --import tsx bench/signed-cpu.ts
import { generateKeyPairSync, sign, verify } from 'node:crypto'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createIdentity, type Identity } from '@baton/client'
import { startBenchHub } from './hub.js'
import {
  type LoadRequest,
  median,
  printResults,
  type Result,
  signedLoadRequest,
  startLoadClient,
} from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1200)
const MODERATE = Number(process.env.BENCH_CONCURRENCY ?? 4)
const SATURATION = Number(process.env.BENCH_SATURATION ?? 32)

/** One raw Ed25519 verify of a signature base's size, in µs (median of a short run). */
function rawVerifyUs(): number {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const data = Buffer.alloc(300, 7)
  const sig = sign(null, data, privateKey)
  const n = 3000
  const started = performance.now()
  for (let i = 0; i < n; i++) verify(null, data, publicKey, sig)
  return ((performance.now() - started) * 1000) / n
}

type Kind = 'healthz' | 'me' | 'patch' | 'send'
const GOALS: Record<Exclude<Kind, 'healthz'>, number> = { me: 1.5, patch: 2.5, send: 3 }

/** Runs the scenario and answers its result rows. */
export async function run(): Promise<Result[]> {
  const { hub, stop } = await startBenchHub('signed-cpu', {
    BATON_QUOTA_MESSAGES_PER_DAY: String(1e9),
    BATON_QUOTA_STORED_BYTES: String(1e12),
  })
  const load = await startLoadClient('child')
  const origin = hub.url
  const agent = createIdentity('bench')
  const peer = createIdentity('bench-peer')
  const ask = async (id: Identity, method: string, p: string, body?: unknown) => {
    const r = await load.run({
      origin,
      requests: [signedLoadRequest(origin, id, method, p, body)],
      concurrency: 1,
    })
    if (!r.statuses['200'] && !r.statuses['201'])
      throw new Error(`${method} ${p}: ${JSON.stringify(r.statuses)}`)
  }
  // Both keys enrol (open admission) before the timed rounds.
  await ask(agent, 'GET', '/v1/me')
  await ask(peer, 'GET', '/v1/me')

  let serial = 0
  /** A resource at version 1 for each PATCH of a batch, made untimed. */
  const resources = async (n: number): Promise<string[]> => {
    const ids: string[] = []
    for (let i = 0; i < n; i++) {
      const created = await hub.ctx.resources.create(agent.principal, {
        namespace: 'bench',
        kind: 'doc/v1',
        data: { n: i },
      })
      ids.push(created.id)
    }
    return ids
  }
  const batch = async (kind: Kind, n: number): Promise<LoadRequest[]> => {
    if (kind === 'healthz')
      return Array.from({ length: n }, () => ({ method: 'GET', path: '/healthz' }))
    if (kind === 'me') {
      return Array.from({ length: n }, () => signedLoadRequest(origin, agent, 'GET', '/v1/me'))
    }
    if (kind === 'patch') {
      const ids = await resources(n)
      return ids.map((id) =>
        signedLoadRequest(origin, agent, 'PATCH', `/v1/resources/${id}`, {
          expectedVersion: 1,
          data: { n: 1, note: 'patched' },
        }),
      )
    }
    return Array.from({ length: n }, () =>
      signedLoadRequest(origin, agent, 'POST', '/v1/messages', {
        recipient: peer.principal,
        body: { task: 'translate', n: serial },
        idempotencyKey: `bench-send-${serial++}`,
      }),
    )
  }

  const kinds: Kind[] = ['healthz', 'me', 'patch', 'send']
  const cpu = (c: number) =>
    Object.fromEntries(kinds.map((k) => [`${k}@${c}`, [] as number[]])) as Record<string, number[]>
  const perRequestUs = { ...cpu(MODERATE), ...cpu(SATURATION) }
  const verifies: number[] = []
  const loads: number[] = []
  try {
    // Warm-up, not counted.
    for (const kind of kinds) {
      await load.run({ origin, requests: await batch(kind, 200), concurrency: SATURATION })
    }
    for (let round = 0; round < ROUNDS; round++) {
      verifies.push(rawVerifyUs())
      for (const concurrency of [MODERATE, SATURATION]) {
        for (const kind of kinds) {
          const requests = await batch(kind, REQUESTS)
          const before = process.cpuUsage()
          const result = await load.run({ origin, requests, concurrency })
          const used = process.cpuUsage(before)
          const ok = (result.statuses['200'] ?? 0) + (result.statuses['201'] ?? 0)
          if (ok !== REQUESTS) throw new Error(`${kind}: ${JSON.stringify(result.statuses)}`)
          perRequestUs[`${kind}@${concurrency}`]!.push((used.user + used.system) / REQUESTS)
        }
      }
      loads.push(loadavg()[0]!)
      process.stderr.write(
        `round ${round + 1}: verify ${verifies.at(-1)!.toFixed(1)} us; ${Object.entries(
          perRequestUs,
        )
          .map(([k, v]) => `${k} ${v.at(-1)!.toFixed(0)}`)
          .join(', ')} us/req (load ${loads.at(-1)!.toFixed(2)})\n`,
      )
    }
  } finally {
    await load.close()
    await stop()
  }

  const verifyUs = median(verifies)
  const rows: Result[] = []
  for (const concurrency of [MODERATE, SATURATION]) {
    const healthz = median(perRequestUs[`healthz@${concurrency}`]!)
    for (const kind of ['me', 'patch', 'send'] as const) {
      const added = median(perRequestUs[`${kind}@${concurrency}`]!) - healthz
      rows.push({
        name: `hub CPU a signed ${kind} adds over /healthz ÷ one verify, ${concurrency} in flight (goal <= ${GOALS[kind]})`,
        baseline: verifyUs,
        value: added,
        ratio: added / verifyUs,
        unit: 'us/req',
        detail: {
          hub_cpu_us_healthz: healthz,
          [`hub_cpu_us_${kind}`]: median(perRequestUs[`${kind}@${concurrency}`]!),
          loadavg_1m: median(loads),
        },
      })
    }
  }
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printResults(await run())
}
