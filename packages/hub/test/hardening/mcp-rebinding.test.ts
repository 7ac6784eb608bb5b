import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestHub, type TestHub, testStores } from '../support.js'

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'rebinding-test', version: '1.0.0' },
  },
})

/** A raw POST /mcp with exactly the Host and Origin given (fetch may not set Host). */
function postMcp(
  hub: TestHub,
  headers: { host: string; origin?: string },
  body = INITIALIZE,
): Promise<{ status: number; body: { code?: string } }> {
  const url = new URL(`${hub.url}/mcp`)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: '/mcp',
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (c) => {
          text += c
        })
        res.on('end', () => {
          let parsed: { code?: string } = {}
          try {
            parsed = JSON.parse(text) as { code?: string }
          } catch {
            parsed = {}
          }
          resolve({ status: res.statusCode ?? 0, body: parsed })
        })
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

async function handoffCount(hub: TestHub): Promise<number> {
  const row = await hub.ctx.database.db
    .selectFrom('handoffs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

const createHandoff = JSON.stringify({
  jsonrpc: '2.0',
  id: 2,
  method: 'tools/call',
  params: { name: 'create_agent_handoff', arguments: { payload: { task: 'x' } } },
})

describe('DNS rebinding protection on /mcp (loopback hub)', () => {
  let hub: TestHub
  let port: string
  before(async () => {
    hub = await startTestHub(testStores[0]!)
    port = new URL(hub.url).port
  })
  after(() => hub.close())

  test('the real MCP client, which sends no Origin, works on a loopback host', async () => {
    const client = new Client({ name: 'baton-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
    const { tools } = await client.listTools()
    assert.ok(tools.some((t) => t.name === 'create_agent_handoff'))
    await client.close()
  })

  test('a Host the hub does not serve is 403 host_not_allowed, and no tool runs', async () => {
    const before = await handoffCount(hub)
    for (const host of [`evil.example:${port}`, 'evil.example', `localhost.evil.example:${port}`]) {
      const res = await postMcp(hub, { host }, createHandoff)
      assert.equal(res.status, 403, host)
      assert.equal(res.body.code, 'host_not_allowed', host)
    }
    // A rebinding page names its own host in both headers.
    const rebound = await postMcp(
      hub,
      { host: `evil.example:${port}`, origin: `http://evil.example:${port}` },
      createHandoff,
    )
    assert.equal(rebound.status, 403)
    assert.equal(rebound.body.code, 'host_not_allowed')
    assert.equal(await handoffCount(hub), before)
  })

  test('an Origin of another site is 403 origin_not_allowed even with an allowed Host', async () => {
    const before = await handoffCount(hub)
    for (const origin of ['http://evil.example', `http://localhost:${Number(port) + 1}`, 'null']) {
      const res = await postMcp(hub, { host: `127.0.0.1:${port}`, origin }, createHandoff)
      assert.equal(res.status, 403, origin)
      assert.equal(res.body.code, 'origin_not_allowed', origin)
    }
    assert.equal(await handoffCount(hub), before)
  })

  test('the loopback names pass, with no Origin or with the hub own origin', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const res = await postMcp(hub, { host })
      assert.equal(res.status, 200, host)
    }
    const same = await postMcp(hub, {
      host: `localhost:${port}`,
      origin: `http://localhost:${port}`,
    })
    assert.equal(same.status, 200)
  })

  test('the real MCP client sending a foreign Origin is refused', async () => {
    const client = new Client({ name: 'baton-test', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
      requestInit: { headers: { origin: 'http://evil.example' } },
    })
    await assert.rejects(client.connect(transport))
  })
})

describe('DNS rebinding protection on /mcp (configured hosts and origins)', () => {
  let hub: TestHub
  before(async () => {
    hub = await startTestHub(testStores[0]!, {
      BATON_PUBLIC_URL: 'https://hub.example.com',
      BATON_ALLOWED_HOSTS: 'agents.internal, proxy.internal:8443',
      BATON_ALLOWED_ORIGINS: 'https://app.example',
    })
  })
  after(() => hub.close())

  test('the public URL host and origin pass', async () => {
    const res = await postMcp(hub, {
      host: 'hub.example.com',
      origin: 'https://hub.example.com',
    })
    assert.equal(res.status, 200)
  })

  test('BATON_ALLOWED_HOSTS and BATON_ALLOWED_ORIGINS extend the lists', async () => {
    assert.equal((await postMcp(hub, { host: 'agents.internal:9' })).status, 200)
    assert.equal((await postMcp(hub, { host: 'proxy.internal:8443' })).status, 200)
    const wrongPort = await postMcp(hub, { host: 'proxy.internal:8444' })
    assert.equal(wrongPort.body.code, 'host_not_allowed')
    const app = await postMcp(hub, { host: 'hub.example.com', origin: 'https://app.example' })
    assert.equal(app.status, 200)
    const other = await postMcp(hub, { host: 'hub.example.com', origin: 'https://other.example' })
    assert.equal(other.status, 403)
    assert.equal(other.body.code, 'origin_not_allowed')
  })
})
