import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type SignedClient, saveIdentity } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createMcpServer } from '../src/mcp/server.js'
import { localInvoke } from '../src/ops/local.js'
import type { Auth } from '../src/ops/operation.js'
import { VERSION } from '../src/version.js'
import { batonBin, call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

type Body = Record<string, unknown>

// The published schemas of the inbox, transfer and compute reads are the whole rule of their
// input: what they accept is answered, what they refuse is a 400 with a stable code and the
// field, and the limits an operator changes are the ones HTTP, OpenAPI and MCP all state.
for (const store of testStores) {
  describe(`inputs are their published schemas (${store.name})`, () => {
    let hub: TestHub
    let plain: TestHub
    let agent: SignedClient
    const clients: Client[] = []

    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
        BATON_MESSAGE_MAX_WAIT_SECONDS: '1',
        BATON_MESSAGE_MAX_BYTES: '2048',
        BATON_COMPUTE_MAX_WAIT_SECONDS: '1',
      })
      plain = await startTestHub(store, { BATON_ADMISSION: 'open' })
      agent = await signedAgent(hub)
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
      await plain.close()
    })

    const get = async (path: string) => {
      const res = await agent.request<Body>('GET', path)
      return { status: res.status, body: res.body }
    }

    /** Every query answered 200, and every refused one 400 with its code and field. */
    async function check(
      path: string,
      accepted: string[],
      refused: [query: string, code: string, field: string][],
    ) {
      for (const q of accepted) {
        const res = await get(`${path}${q}`)
        assert.equal(res.status, 200, `${path}${q}: ${JSON.stringify(res.body)}`)
      }
      for (const [q, code, field] of refused) {
        const res = await get(`${path}${q}`)
        assert.equal(res.status, 400, `${path}${q}`)
        assert.equal(res.body.code, code, `${path}${q}`)
        assert.equal(res.body.field, field, `${path}${q}`)
      }
    }

    async function toolsOf(target: TestHub): Promise<Map<string, Body>> {
      const server = createMcpServer(
        {
          invoke: localInvoke(target.ctx, { ip: '127.0.0.1' }),
          auths: new Set<Auth>(['none', 'handoff-token', 'signature']),
          config: target.config,
        },
        VERSION,
      )
      const [a, b] = InMemoryTransport.createLinkedPair()
      await server.connect(a)
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(b)
      clients.push(client)
      const { tools } = await client.listTools()
      return new Map(tools.map((t) => [t.name, t as unknown as Body]))
    }

    const openapi = async (target: TestHub) =>
      (await call(target, 'GET', '/openapi.json')).body as { paths: Record<string, Body> }

    test('an inbox read takes whole numbers, a flag and a wait, and nothing else', async () => {
      await check(
        '/v1/messages',
        ['', '?after=0&limit=100&unacked=true&wait=0', '?after=12&limit=1&unacked=false'],
        [
          ['?limit=0', 'invalid_request', 'limit'],
          ['?limit=101', 'invalid_request', 'limit'],
          ['?after=-1', 'invalid_request', 'after'],
          ['?after=01', 'invalid_request', 'after'],
          ['?after=', 'invalid_request', 'after'],
          ['?after=1234567890123456', 'invalid_request', 'after'],
          ['?unacked=yes', 'invalid_request', 'unacked'],
          ['?wait=1.5', 'invalid_request', 'wait'],
          ['?cursor=3', 'unknown_field', 'cursor'],
        ],
      )
    })

    test('a transfer listing takes a role and a state of the lifecycle', async () => {
      await check(
        '/v1/transfers',
        ['', '?role=runtime', '?role=owner&state=active'],
        [
          ['?role=boss', 'invalid_request', 'role'],
          ['?state=gone', 'invalid_request', 'state'],
          ['?limit=5', 'unknown_field', 'limit'],
        ],
      )
    })

    test("a transfer wait takes whole seconds and a version; a longer wait is the hub's", async () => {
      const created = await agent.request<Body>('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [] },
      })
      assert.equal(created.status, 201)
      const id = created.body.transferId as string
      await check(
        `/v1/transfers/${id}/wait`,
        ['', '?seconds=0', '?seconds=0&version=1', '?version=0'],
        [
          ['?seconds=abc', 'invalid_request', 'seconds'],
          ['?seconds=-1', 'invalid_request', 'seconds'],
          ['?version=1.0', 'invalid_request', 'version'],
          ['?seconds=0&after=1', 'unknown_field', 'after'],
        ],
      )
      // Seen version 0: the transfer is past it, so even the longest wait answers at once.
      const now = await get(`/v1/transfers/${id}/wait?seconds=999999&version=0`)
      assert.equal(now.status, 200)
      assert.equal(now.body.changed, true)
    })

    test('a compute listing and wait take whole numbers in their ranges', async () => {
      await check(
        '/v1/compute/jobs',
        ['', '?limit=1', '?limit=100'],
        [
          ['?limit=0', 'invalid_request', 'limit'],
          ['?limit=101', 'invalid_request', 'limit'],
          ['?limit=5x', 'invalid_request', 'limit'],
          ['?limit=1&state=queued', 'unknown_field', 'state'],
        ],
      )
      const job = '/v1/compute/jobs/job_missing'
      for (const [path, field] of [
        [`${job}/wait/abc`, 'seconds'],
        [`${job}/wait/-3`, 'seconds'],
        [`${job}/wait/0?version=x`, 'version'],
      ] as const) {
        const res = await get(path)
        assert.equal(res.status, 400, path)
        assert.equal(res.body.code, 'invalid_request', path)
        assert.equal(res.body.field, field, path)
      }
      assert.equal(
        (await get(`${job}/wait/0?after=1`)).body.code,
        'unknown_field',
        'an unknown query key is refused',
      )
      // A well-formed wait on a job that is not the caller's is the service's answer.
      const missing = await get(`${job}/wait/999999?version=1`)
      assert.equal(missing.status, 404)
      assert.equal(missing.body.code, 'compute_job_not_found')
    })

    test("the operator's limits are what HTTP clamps and MCP and OpenAPI publish", async () => {
      // The inbox's longest wait is 1 s on this hub: an hour's wait answers, empty, within it.
      const page = await get('/v1/messages?wait=3600')
      assert.equal(page.status, 200)
      assert.deepEqual(page.body.messages, [])

      // A message body is at most 2048 bytes as canonical JSON here, 64 KiB by default.
      const peer = await signedAgent(hub)
      const big = { recipient: peer.identity.principal, body: 'x'.repeat(3000) }
      const refused = await agent.request<Body>('POST', '/v1/messages', {
        ...big,
        idempotencyKey: 'big-1',
      })
      assert.equal(refused.status, 413)
      assert.equal(refused.body.code, 'message_too_large')
      assert.equal(refused.body.limit, 2048)

      const tuned = await toolsOf(hub)
      const defaults = await toolsOf(plain)
      const maxOf = (tools: Map<string, Body>, tool: string, arg: string) =>
        (tools.get(tool)!.inputSchema as { properties: Record<string, { maximum?: number }> })
          .properties[arg]?.maximum
      // A longer wait is clamped, as the route clamps it, never refused: the description says
      // how long the hub waits at most.
      assert.equal(maxOf(tuned, 'list_messages', 'wait_seconds'), undefined)
      assert.match(tuned.get('list_messages')!.description as string, /at most 1;/)
      assert.match(defaults.get('list_messages')!.description as string, /at most 25;/)
      assert.match(tuned.get('send_message')!.description as string, /at most 2048 bytes/)
      assert.match(defaults.get('send_message')!.description as string, /at most 65536 bytes/)
      assert.match(tuned.get('wait_compute_job')!.description as string, /at most 1;/)
      assert.match(defaults.get('wait_compute_job')!.description as string, /at most 25;/)

      // `baton mcp --hub` publishes the limits of the hub it reaches, read from its discovery.
      const dir = await mkdtemp(path.join(tmpdir(), 'baton-mcp-limits-'))
      const identityFile = path.join(dir, 'agent.identity.json')
      await saveIdentity(identityFile, agent.identity)
      const stdio = new Client({ name: 'baton-test', version: '1.0.0' })
      await stdio.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [batonBin, 'mcp', '--hub', hub.url, '--identity', identityFile],
          stderr: 'pipe',
        }),
      )
      clients.push(stdio)
      const remote = new Map((await stdio.listTools()).tools.map((t) => [t.name, t]))
      for (const name of ['list_messages', 'send_message', 'create_agent_handoff']) {
        assert.equal(remote.get(name)?.description, tuned.get(name)?.description, name)
        assert.deepEqual(remote.get(name)?.inputSchema, tuned.get(name)?.inputSchema, name)
      }
      await rm(dir, { recursive: true, force: true })

      const [doc, plainDoc] = [await openapi(hub), await openapi(plain)]
      const text = (d: typeof doc, path: string) => JSON.stringify(d.paths[path])
      assert.match(text(doc, '/v1/messages'), /longer than 1 is clamped/)
      assert.match(text(plainDoc, '/v1/messages'), /longer than 25 is clamped/)
      assert.match(text(doc, '/v1/messages'), /at most 2048 bytes/)
      assert.match(text(plainDoc, '/v1/messages'), /at most 65536 bytes/)
      const computeWait = '/v1/compute/jobs/{id}/wait/{seconds}'
      assert.match(text(doc, computeWait), /longer than 1 is clamped/)
      assert.match(text(plainDoc, computeWait), /longer than 25 is clamped/)
    })
  })
}
