// Signed requests (seed 000, RFC 9421): signed `GET /v1/me` requests per second beside unsigned
// `GET /healthz` requests and beside the raw node:crypto Ed25519 verify rate, in the same run.
// The goal: what a signature adds to a request costs no more than the Ed25519 verify itself
// plus 20% (ratio of the second row under 1.2). The signed path also records the nonce durably
// (group-committed), which is part of what it costs.
//
//   node --import tsx bench/signed-requests.ts
import { generateKeyPairSync, sign, verify } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createIdentity, type HttpMessage, signRequest } from '@baton/client'
import {
  didKeyResolver,
  hubPolicy,
  verifySignedRequest,
} from '../packages/hub/src/identity/verify.js'
import { countStatements } from '../packages/hub/src/store/transaction.js'
import { startBenchHub } from './hub.js'
import { type LoadRequest, median, type Result, startLoadClient } from './lib.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1500)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)

/** Raw Ed25519 verifies per second of one message of the size of a signature base. */
function rawVerifyRate(): number {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const data = Buffer.alloc(260, 7)
  const sig = sign(null, data, privateKey)
  const n = 4000
  const started = performance.now()
  for (let i = 0; i < n; i++) verify(null, data, publicKey, sig)
  return (n / (performance.now() - started)) * 1000
}

/** Whole hub verifier (parse fields, rebuild the base, verify) per second, with no HTTP or SQL. */
function verifierRate(): number {
  const id = createIdentity('bench')
  const url = 'http://127.0.0.1:1/v1/me'
  const now = Date.now()
  const msgs: HttpMessage[] = []
  for (let i = 0; i < 200; i++) {
    const req = signRequest({ method: 'GET', url, privateKey: id.privateKey, keyid: id.principal })
    msgs.push({ method: 'GET', targetUri: url, headers: req.headers })
  }
  const policy = hubPolicy(now, 60_000, didKeyResolver())
  const empty = new Uint8Array(0)
  const n = 4000
  const started = performance.now()
  for (let i = 0; i < n; i++) verifySignedRequest(msgs[i % msgs.length]!, empty, policy)
  return (n / (performance.now() - started)) * 1000
}

/**
 * CPU microseconds used so far by this process's main thread and by all its other threads (the
 * thread pool running the Ed25519 verifies, the SQLite writer, V8's GC helpers), from
 * /proc/self/task; undefined where there is no /proc (then the split is not printed).
 */
export function threadCpuUs(): { main: number; others: number } | undefined {
  try {
    let main = 0
    let others = 0
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // utime and stime, in clock ticks of 10 ms (USER_HZ 100).
      const us = (Number(fields[11]) + Number(fields[12])) * 10_000
      if (Number(tid) === process.pid) main += us
      else others += us
    }
    return { main, others }
  } catch {
    return undefined
  }
}

/** Runs the scenario and answers its result rows. */
export async function run(): Promise<Result[]> {
  const { hub, stop } = await startBenchHub('sig')
  const load = await startLoadClient('child')
  const id = createIdentity('bench')
  const signedBatch = (): LoadRequest[] =>
    Array.from({ length: REQUESTS }, () => {
      const req = signRequest({
        method: 'GET',
        url: `${hub.url}/v1/me`,
        privateKey: id.privateKey,
        keyid: id.principal,
      })
      return { method: 'GET', path: '/v1/me', headers: req.headers }
    })
  const unsignedBatch: LoadRequest[] = Array.from({ length: REQUESTS }, () => ({
    method: 'GET',
    path: '/healthz',
  }))

  const raw: number[] = []
  const verifier: number[] = []
  const unsigned: number[] = []
  const signed: number[] = []
  const signedP50: number[] = []
  const unsignedP50: number[] = []
  // The hub's own cost per request, from the hub process (CPU of every thread, and the event
  // loop's busy time): less disturbed by other work on a shared machine than a rate is.
  const cpuUs = { signed: [] as number[], unsigned: [] as number[] }
  const loopUs = { signed: [] as number[], unsigned: [] as number[] }
  // Of that CPU, the main thread's (the event loop's own work, without the time it waited for a
  // core) and the other threads'; per-thread counters tick in 10 ms, so these are coarse.
  const mainUs = { signed: [] as number[], unsigned: [] as number[] }
  const threadsUs = { signed: [] as number[], unsigned: [] as number[] }
  // What the signed path asks of the store under this load: messages to the SQLite writer thread
  // (each wakes it) and commits, per request.
  const counts = countStatements(hub.ctx.database)
  const messages = hub.ctx.database.writerMessages
  // In this thread, the WAL fdatasyncs instead (each covers every commit made while it waited).
  const syncs = hub.ctx.database.walSyncs
  const perRequest = { messages: [] as number[], commits: [] as number[], syncs: [] as number[] }
  const measured = async (kind: 'signed' | 'unsigned', requests: LoadRequest[]) => {
    const threads = threadCpuUs()
    const sent = messages?.() ?? 0
    const synced = syncs?.() ?? 0
    const commits = counts.commits
    const elu = performance.eventLoopUtilization()
    const cpu = process.cpuUsage()
    const result = await load.run({ origin: hub.url, requests, concurrency: CONCURRENCY })
    const used = process.cpuUsage(cpu)
    cpuUs[kind].push((used.user + used.system) / requests.length)
    loopUs[kind].push((performance.eventLoopUtilization(elu).active * 1000) / requests.length)
    if (kind === 'signed') {
      if (messages) perRequest.messages.push(((messages() ?? 0) - sent) / requests.length)
      if (syncs) perRequest.syncs.push((syncs() - synced) / requests.length)
      perRequest.commits.push((counts.commits - commits) / requests.length)
    }
    const after = threadCpuUs()
    if (threads && after) {
      mainUs[kind].push((after.main - threads.main) / requests.length)
      threadsUs[kind].push((after.others - threads.others) / requests.length)
    }
    return result
  }
  // The machine may be shared: the 1-minute load average after each round, printed beside.
  const loads: number[] = []
  try {
    // One warm-up round of each, not counted.
    await load.run({
      origin: hub.url,
      requests: unsignedBatch.slice(0, 300),
      concurrency: CONCURRENCY,
    })
    await load.run({
      origin: hub.url,
      requests: signedBatch().slice(0, 300),
      concurrency: CONCURRENCY,
    })
    for (let round = 0; round < ROUNDS; round++) {
      raw.push(rawVerifyRate())
      verifier.push(verifierRate())
      const u = await measured('unsigned', unsignedBatch)
      const s = await measured('signed', signedBatch())
      if ((s.statuses['200'] ?? 0) !== REQUESTS || (u.statuses['200'] ?? 0) !== REQUESTS) {
        throw new Error(
          `unexpected statuses: signed ${JSON.stringify(s.statuses)}, unsigned ${JSON.stringify(u.statuses)}`,
        )
      }
      unsigned.push(u.perSecond)
      signed.push(s.perSecond)
      unsignedP50.push(u.p50)
      loads.push(loadavg()[0]!)
      signedP50.push(s.p50)
      process.stderr.write(
        `round ${round + 1}: raw verify ${raw.at(-1)!.toFixed(0)}/s, verifier ${verifier.at(-1)!.toFixed(0)}/s, unsigned ${u.perSecond.toFixed(0)}/s, signed ${s.perSecond.toFixed(0)}/s\n`,
      )
    }
  } finally {
    await load.close()
    await stop()
  }

  const rawRate = median(raw)
  const verifyUs = 1e6 / rawRate
  const unsignedRate = median(unsigned)
  const signedRate = median(signed)
  // Server time a signature adds per request, from the two request rates of the same run.
  const addedUs = 1e6 / signedRate - 1e6 / unsignedRate
  return [
    {
      name: 'signed GET /v1/me vs unsigned GET /healthz',
      baseline: unsignedRate,
      value: signedRate,
      ratio: signedRate / unsignedRate,
      unit: 'req/s',
      detail: {
        p50_unsigned_ms: median(unsignedP50),
        p50_signed_ms: median(signedP50),
        loadavg_1m: median(loads),
        hub_cpu_us_unsigned: median(cpuUs.unsigned),
        hub_cpu_us_signed: median(cpuUs.signed),
        hub_loop_us_unsigned: median(loopUs.unsigned),
        hub_loop_us_signed: median(loopUs.signed),
        commits_per_signed_request: Number(median(perRequest.commits).toFixed(3)),
        ...(perRequest.messages.length > 0
          ? { writer_messages_per_signed_request: Number(median(perRequest.messages).toFixed(3)) }
          : {}),
        ...(perRequest.syncs.length > 0
          ? { wal_syncs_per_signed_request: Number(median(perRequest.syncs).toFixed(3)) }
          : {}),
        ...(mainUs.signed.length > 0
          ? {
              hub_main_thread_cpu_us_unsigned: median(mainUs.unsigned),
              hub_main_thread_cpu_us_signed: median(mainUs.signed),
              hub_other_threads_cpu_us_unsigned: median(threadsUs.unsigned),
              hub_other_threads_cpu_us_signed: median(threadsUs.signed),
            }
          : {}),
      },
    },
    {
      name: 'time a signature adds per request vs one raw Ed25519 verify (goal <= 1.5)',
      baseline: verifyUs,
      value: addedUs,
      ratio: addedUs / verifyUs,
      unit: 'us/req',
    },
    {
      name: 'hub verifier (parse, base, verify) vs raw Ed25519 verify',
      baseline: rawRate,
      value: median(verifier),
      ratio: median(verifier) / rawRate,
      unit: 'ops/s',
    },
  ]
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printResults } = await import('./lib.js')
  printResults(await run())
}
