import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  type Identity,
  SignedClient,
  signedFetch,
  signRequest,
} from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { countStatements } from '../src/store/transaction.js'
import { onPostgres, restartableHub, startTestHub, type TestHub, testStores } from './support.js'

/** One signed request, kept as bytes so a test can send exactly the same request again. */
function signed(hub: { url: string }, id: Identity, method: string, path: string, body?: unknown) {
  const bytes = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const req = signRequest({
    method,
    url: hub.url + path,
    body: bytes,
    privateKey: id.privateKey,
    keyid: id.principal,
  })
  return (to: { url: string } = hub) =>
    fetch(to.url + path, {
      method: req.method,
      headers: req.headers,
      ...(bytes ? { body: bytes } : {}),
    }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as Record<string, unknown> & { code?: string },
    }))
}

for (const store of testStores) {
  describe(`one durable commit per signed request (${store.name})`, () => {
    let hub: TestHub
    let identity: Identity
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        // The timed jobs that commit whether or not there is work (the compute reaper, every
        // third of a lease, and the cleanup) do not run within the suite: a commit of theirs
        // inside a request's count would be counted as the request's.
        BATON_COMPUTE_LEASE_SECONDS: '3600',
        BATON_CLEANUP_INTERVAL_SECONDS: '3600',
      })
      identity = createIdentity(hub.url)
      const client = await SignedClient.connect(`${hub.url}/.well-known/agent-net`, identity, {
        maxRetryWaitMs: 0,
      })
      await client.request('GET', '/v1/me')
    })
    after(() => hub.close())

    /** The commits and statements one request makes, on a hub doing nothing else. */
    async function cost(send: () => Promise<{ status: number }>) {
      await hub.ctx.batcher.flush()
      const counts = countStatements(hub.ctx.database)
      const before = { ...counts }
      const answer = await send()
      await hub.ctx.batcher.flush()
      return {
        status: answer.status,
        commits: counts.commits - before.commits,
        statements: counts.statements - before.statements,
      }
    }

    test('a signed write commits its nonce, quota charge and write in one transaction', async () => {
      const send = signed(hub, identity, 'POST', '/v1/resources', {
        namespace: 'n',
        kind: 'k',
        data: { a: 1 },
      })
      const write = await cost(send)
      assert.equal(write.status, 201)
      assert.equal(write.commits, 1)
      const me = await cost(signed(hub, identity, 'GET', '/v1/me'))
      assert.equal(me.status, 200)
      assert.equal(me.commits, 1, 'a read-only route commits its nonce alone')
    })

    test("a new key's first request, a write, enrols the key in the write's own commit", async () => {
      const newcomer = createIdentity(hub.url)
      const write = await cost(
        signed(hub, newcomer, 'POST', '/v1/resources', { namespace: 'n', kind: 'new', data: {} }),
      )
      assert.equal(write.status, 201)
      assert.equal(write.commits, 1)
      const me = await signed(hub, newcomer, 'GET', '/v1/me')()
      assert.equal(me.status, 200)
      assert.equal(me.body.principal, newcomer.principal)
      assert.equal(me.body.state, 'approved')
    })

    test('a request its route refused consumes its nonce: its replay is refused', async () => {
      const created = await signed(hub, identity, 'POST', '/v1/resources', {
        namespace: 'n',
        kind: 'k',
        data: { v: 1 },
      })()
      assert.equal(created.status, 201)
      const id = created.body.id as string
      // 409 from inside the write's own savepoint: the version is stale.
      const stale = signed(hub, identity, 'PATCH', `/v1/resources/${id}`, {
        expectedVersion: 7,
        data: { v: 2 },
      })
      assert.equal((await stale()).status, 409)
      const replayed = await stale()
      assert.equal(replayed.status, 401)
      assert.equal(replayed.body.code, 'signature_replayed')
      // 403 before any write is queued.
      const forbidden = signed(hub, identity, 'PATCH', '/v1/resources/not-an-id', {
        expectedVersion: 1,
        data: { v: 2 },
      })
      assert.equal((await forbidden()).status, 403)
      const again = await forbidden()
      assert.equal(again.status, 401)
      assert.equal(again.body.code, 'signature_replayed')
    })

    test('an A2A JSON-RPC call refused, before or by its method, still spends its nonce', async () => {
      for (const rpc of [
        { jsonrpc: '2.0', id: 1, method: 'NoSuchMethod', params: {} },
        { jsonrpc: '2.0', id: 2, method: 'CancelTask', params: { id: 'not-a-task' } },
      ]) {
        const call = signed(hub, identity, 'POST', '/v1/a2a?A2A-Version=1.0', rpc)
        const refused = await cost(call)
        assert.notEqual(refused.status, 200)
        assert.equal(refused.commits, 1)
        const replayed = await call()
        assert.equal(replayed.status, 401)
        assert.equal(
          (replayed.body.error as { data: { code: string } }).data.code,
          'signature_replayed',
        )
      }
    })

    /**
     * A signed MCP client without the event stream it would open after initialize (answered
     * here, unsent, as a server without one), so that only the requests a test makes reach the hub.
     */
    async function mcpClient(): Promise<Client> {
      const sign = signedFetch(identity)
      const fetchNoStream: typeof fetch = async (input, init) =>
        init?.method === 'GET' ? new Response(null, { status: 405 }) : sign(input, init)
      const client = new Client({ name: 'commits', version: '1.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), { fetch: fetchNoStream }),
      )
      return client
    }

    test('a signed MCP tool call that writes commits its nonce and its write together', async () => {
      const client = await mcpClient()
      try {
        const write = await cost(() =>
          client
            .callTool({
              name: 'create_resource',
              arguments: { namespace: 'n', kind: 'mcp', data: { a: 1 } },
            })
            .then((r) => ({ status: r.isError ? 400 : 200 })),
        )
        assert.equal(write.status, 200)
        assert.equal(write.commits, 1)
        const list = await cost(() => client.listTools().then(() => ({ status: 200 })))
        assert.equal(list.commits, 1, 'a request that writes nothing commits its nonce alone')
        const rows = await hub.ctx.database.db
          .selectFrom('resources')
          .select('id')
          .where('kind', '=', 'mcp')
          .execute()
        assert.equal(rows.length, 1)
      } finally {
        await client.close()
      }
    })

    test('a signed MCP move of a handoff this hub knows commits its nonce with the move', async () => {
      const client = await mcpClient()
      try {
        const call = async (name: string, args: Record<string, unknown>) => {
          const r = await client.callTool({ name, arguments: args })
          const text = (r.content as { type: string; text: string }[])[0]!.text
          return { status: r.isError ? 400 : 200, body: JSON.parse(text) as Record<string, string> }
        }
        // Created on this hub, so its moves are ones the hub can predict.
        const created = await call('create_agent_handoff', { payload: { task: 'commits' } })
        assert.equal(created.status, 200)
        const move = await cost(() =>
          call('advance_agent_handoff', {
            handoff_id: created.body.handoff_id,
            token: created.body.receiver_token,
            state: 'accepted',
            from: 'offered',
            nonce: 'mcp-move-1',
          }),
        )
        assert.equal(move.status, 200)
        assert.equal(move.commits, 1, 'the move and the signed request it came in commit as one')
      } finally {
        await client.close()
      }
    })

    test('a signed MCP tool call its operation refused still spends its nonce', async () => {
      const client = await mcpClient()
      try {
        const refused = await cost(() =>
          client
            .callTool({
              name: 'update_resource',
              arguments: { id: 'not-an-id', expectedVersion: 1, data: {} },
            })
            .then((r) => ({ status: r.isError ? 403 : 200 })),
        )
        assert.equal(refused.status, 403)
        assert.equal(refused.commits, 1)
      } finally {
        await client.close()
      }
    })

    test('a replay sent while its original is still in flight is refused', async () => {
      const send = signed(hub, identity, 'POST', '/v1/resources', {
        namespace: 'n',
        kind: 'race',
        data: {},
      })
      const answers = await Promise.all(Array.from({ length: 8 }, () => send()))
      assert.equal(answers.filter((a) => a.status === 201).length, 1)
      for (const a of answers.filter((a) => a.status !== 201)) {
        assert.equal(a.body.code, 'signature_replayed')
      }
      const rows = await hub.ctx.database.db
        .selectFrom('resources')
        .select('id')
        .where('kind', '=', 'race')
        .execute()
      assert.equal(rows.length, 1)
    })
  })
}

const PUBLIC_URL = 'http://baton.test'
const postgres = onPostgres.store!
describe('one signed request raced on two hub instances (postgres)', {
  skip: onPostgres.skip,
}, () => {
  let hubs: Awaited<ReturnType<Awaited<ReturnType<typeof restartableHub>>['start']>>[]
  let drop: () => Promise<void>
  before(async () => {
    const shared = await restartableHub(postgres, {
      BATON_ADMISSION: 'open',
      BATON_PUBLIC_URL: PUBLIC_URL,
    })
    drop = shared.drop
    hubs = [await shared.start(), await shared.start()]
  })
  after(async () => {
    for (const h of hubs) await h.stop()
    await drop()
  })

  test('exactly one copy is applied; the other answers the replay error', async () => {
    const publicHub = { url: PUBLIC_URL }
    const identity = createIdentity(PUBLIC_URL)
    assert.equal((await signed(publicHub, identity, 'GET', '/v1/me')(hubs[0])).status, 200)
    for (let round = 0; round < 10; round++) {
      const kind = `race-${round}`
      // Both instances answer for the one public URL the request is signed for.
      const send = signed(publicHub, identity, 'POST', '/v1/resources', {
        namespace: 'n',
        kind,
        data: {},
      })
      const answers = await Promise.all([send(hubs[0]), send(hubs[1])])
      const applied = answers.filter((a) => a.status === 201)
      assert.equal(applied.length, 1, JSON.stringify(answers))
      const other = answers.find((a) => a.status !== 201)!
      assert.equal(other.body.code, 'signature_replayed')
      const rows = await hubs[0]!.ctx.database.db
        .selectFrom('resources')
        .select('id')
        .where('kind', '=', kind)
        .execute()
      assert.equal(rows.length, 1)
    }
  })
})
