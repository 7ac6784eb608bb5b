import { pathToFileURL } from 'node:url'
import { createIdentity, SignedClient } from '@baton/client'
import type { SentMessageView } from '@baton/protocol'
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
const log = (msg: string) => process.stderr.write(`[messages] ${msg}\n`)

/** Knobs of the scenario, from BENCH_* variables. */
const MESSAGES = intEnv('BENCH_MESSAGES', 1500)
const CONCURRENCY = intEnv('BENCH_CONCURRENCY', 32)
const ROUNDS = intEnv('BENCH_ROUNDS', 3)
const AGENTS = 8

/** Medians of three rounds of: signed /v1/me (the floor), then N sends, then their N acks. */
export async function run(): Promise<Result[]> {
  const { hub, stop } = await startBenchHub('messages', {
    BATON_QUOTA_MESSAGES_PER_DAY: '100000000',
    BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
  })
  const client = await startLoadClient(env.BENCH_CLIENT === 'inline' ? 'inline' : 'child')
  log(`${MESSAGES} messages x ${ROUNDS} rounds, concurrency ${CONCURRENCY}, load ${client.where}`)
  try {
    const origin = hub.url
    const discoveryUrl = `${origin}/.well-known/agent-net`
    const agents = Array.from({ length: AGENTS }, () => createIdentity(discoveryUrl))
    // Enrol every agent (open admission approves at once).
    for (const id of agents) await (await SignedClient.connect(discoveryUrl, id)).me()

    const meRates: number[] = []
    const msgRates: number[] = []
    const sendRates: number[] = []
    const ackRates: number[] = []
    const sendP50: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const me = Array.from({ length: MESSAGES }, (_, i) =>
        signedLoadRequest(origin, agents[i % AGENTS]!, 'GET', '/v1/me'),
      )
      const meLoad = await client.run({ origin, requests: me, concurrency: CONCURRENCY })
      assertAllAnswered('GET /v1/me', meLoad, 200)

      const pairs = Array.from({ length: MESSAGES }, (_, i) => ({
        from: agents[i % AGENTS]!,
        to: agents[(i * 3 + 1) % AGENTS]!,
      }))
      const sends = pairs.map(({ from, to }, i) =>
        signedLoadRequest(origin, from, 'POST', '/v1/messages', {
          recipient: to.principal,
          body: { round, i, task: 'bench' },
          idempotencyKey: `bench:${round}:${i}`,
        }),
      )
      const sendLoad = await client.run({
        origin,
        requests: sends,
        concurrency: CONCURRENCY,
        keepBodies: true,
      })
      assertAllAnswered('POST /v1/messages', sendLoad, 201)
      const acks = sendLoad.bodies!.map((text, i) => {
        const sent = JSON.parse(text) as SentMessageView
        return signedLoadRequest(origin, pairs[i]!.to, 'POST', `/v1/messages/${sent.id}/ack`)
      })
      const ackLoad = await client.run({ origin, requests: acks, concurrency: CONCURRENCY })
      assertAllAnswered('POST /v1/messages/{id}/ack', ackLoad, 200)

      const msgPerSecond = (MESSAGES / (sendLoad.elapsedMs + ackLoad.elapsedMs)) * 1000
      meRates.push(meLoad.perSecond)
      msgRates.push(msgPerSecond)
      sendRates.push(sendLoad.perSecond)
      ackRates.push(ackLoad.perSecond)
      sendP50.push(sendLoad.p50)
      log(
        `round ${round + 1}: me ${meLoad.perSecond.toFixed(0)}/s, send ${sendLoad.perSecond.toFixed(0)}/s, ` +
          `ack ${ackLoad.perSecond.toFixed(0)}/s, messages ${msgPerSecond.toFixed(0)}/s`,
      )
    }
    const baseline = median(meRates)
    const value = median(msgRates)
    return [
      {
        name: 'messages sent+acked (sqlite, signed)',
        baseline,
        value,
        ratio: value / baseline,
        unit: 'messages/s vs GET /v1/me/s',
        detail: {
          sendPerSecond: median(sendRates),
          ackPerSecond: median(ackRates),
          sendP50Ms: median(sendP50),
          concurrency: CONCURRENCY,
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
