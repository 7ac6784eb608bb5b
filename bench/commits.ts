import { pathToFileURL } from 'node:url'
import { createIdentity, type Identity, signRequest } from '@baton/client'
import { countStatements } from '../packages/hub/src/store/transaction.js'
import { startBenchHub } from './hub.js'
import type { Result } from './lib.js'

const N = Number(process.env.BENCH_COUNT_REQUESTS ?? 40)

async function signedFetch(url: string, id: Identity, method: string, p: string, body?: unknown) {
  const bytes = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const req = signRequest({
    method,
    url: url + p,
    body: bytes,
    privateKey: id.privateKey,
    keyid: id.principal,
  })
  const res = await fetch(req.url, {
    method,
    headers: req.headers,
    ...(bytes ? { body: bytes } : {}),
  })
  await res.arrayBuffer()
  return res.status
}

async function countStore(store: 'sqlite' | 'postgres', url?: string): Promise<Result[]> {
  const { hub, stop } = await startBenchHub(
    'commits',
    url ? { DATABASE_URL: url, BATON_HUB_KEY_SECRET: 'the hub key secret of benchmark hubs' } : {},
  )
  const counts = countStatements(hub.ctx.database)
  const id = createIdentity('bench')
  /** Sends `n` requests one after another; answers statements and commits per request. */
  const per = async (what: string, send: (i: number) => Promise<number>, expect: number) => {
    await hub.ctx.batcher.flush()
    const before = { ...counts }
    for (let i = 0; i < N; i++) {
      const status = await send(i)
      if (status !== expect) throw new Error(`${what}: answered ${status}, not ${expect}`)
    }
    await hub.ctx.batcher.flush()
    const statements = (counts.statements - before.statements) / N
    const commits = (counts.commits - before.commits) / N
    process.stderr.write(`${store} ${what}: ${statements} statements, ${commits} commits\n`)
    return {
      name: `commits per ${what} (${store}; baseline: the goal)`,
      baseline: 1,
      value: commits,
      ratio: commits,
      unit: 'commits/req',
      detail: { statements_per_request: statements },
    } satisfies Result
  }
  try {
    if ((await signedFetch(hub.url, id, 'GET', '/v1/me')) !== 200) throw new Error('no /v1/me')
    const me = await per('signed GET /v1/me', () => signedFetch(hub.url, id, 'GET', '/v1/me'), 200)
    const handoffs: { id: string; token: string }[] = []
    for (let i = 0; i < N; i++) {
      const res = await fetch(`${hub.url}/services/v1/handoff`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { i } }),
      })
      const body = (await res.json()) as { handoff_id: string; owner_token: string }
      handoffs.push({ id: body.handoff_id, token: body.owner_token })
    }
    const move = await per(
      'handoff move',
      async (i) => {
        const h = handoffs[i]!
        const res = await fetch(`${hub.url}/services/v1/handoff/${h.id}/accepted`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${h.token}` },
          body: JSON.stringify({ from: 'offered' }),
        })
        await res.arrayBuffer()
        return res.status
      },
      200,
    )
    const send = await per(
      'signed message send',
      (i) =>
        signedFetch(hub.url, id, 'POST', '/v1/messages', {
          recipient: id.principal,
          body: { i },
          idempotencyKey: `k${i}`,
        }),
      201,
    )
    return [me, move, send]
  } finally {
    await stop()
  }
}

/** Runs the scenario and answers its result rows. */
export async function run(): Promise<Result[]> {
  const rows = await countStore('sqlite')
  const url = process.env.DATABASE_URL
  if (url) rows.push(...(await countStore('postgres', url)))
  return rows
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printResults } = await import('./lib.js')
  printResults(await run())
}
