import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { requestJson, type SignedBody, type SignedClient, signedFetch } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createMcpServer } from '../src/mcp/server.js'
import { localInvoke } from '../src/ops/local.js'
import type { Invoke } from '../src/ops/mcp.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { VERSION } from '../src/version.js'
import { signedAgent, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

// Seed 000's resource, grant, message and home-file tools, driven through both ways a tool
// reaches the hub: the operation's own run in the hub, and a signed HTTP request built from the
// same declaration (`baton mcp --identity`). The SDK client checks every structured answer
// against the tool's output schema, so a schema that disagrees with the service fails here.
const TOOLS = [
  'create_resource',
  'read_resource',
  'update_resource',
  'resource_history',
  'list_resources',
  'grant_access',
  'list_grants',
  'revoke_grant',
  'send_message',
  'list_messages',
  'ack_message',
  'read_home_file',
  'write_home_file',
  'list_home_files',
  'delete_home_file',
]

const SIGNED = new Set<Auth>(['none', 'handoff-token', 'signature'])

for (const store of testStores) {
  describe(`resource, grant, message and home tools (${store.name})`, () => {
    let hub: TestHub
    const clients: Client[] = []
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
      })
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
    })

    async function connect(invoke: Invoke, auths: ReadonlySet<Auth>) {
      const server = createMcpServer({ invoke, auths }, VERSION)
      const [a, b] = InMemoryTransport.createLinkedPair()
      await server.connect(a)
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(b)
      clients.push(client)
      return client
    }

    const local = (agent: SignedClient): Invoke =>
      localInvoke(hub.ctx, {
        ip: '127.0.0.1',
        principal: { principal: agent.principal, state: 'approved', enrolledAt: 0, decidedAt: 0 },
      })
    const remote = (agent: SignedClient): Invoke =>
      remoteInvoke({
        plain: (method, path, body, headers, signal) =>
          requestJson(hub.url, method, path, body, { headers, signal }),
        signed: (method, path, body, headers, signal) =>
          agent.request(method, path, body as SignedBody, headers, { signal }),
      })

    test('an unsigned session is offered none of them', async () => {
      const client = await connect(
        localInvoke(hub.ctx, { ip: '127.0.0.1' }),
        new Set<Auth>(['none', 'handoff-token']),
      )
      const names = new Set((await client.listTools()).tools.map((t) => t.name))
      for (const name of TOOLS) assert.equal(names.has(name), false, name)
    })

    // The official client over Streamable HTTP, each request signed as the agent (SEP-2752's
    // shape): the hub's /mcp judges the signature as under /v1 and acts as that principal.
    const streamable = async (agent: SignedClient): Promise<Client> => {
      const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
        fetch: signedFetch(agent.identity),
      })
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      return client
    }

    test('an unsigned Streamable HTTP session at /mcp is offered none of them', async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`))
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      const names = new Set((await client.listTools()).tools.map((t) => t.name))
      for (const name of TOOLS) assert.equal(names.has(name), false, name)
      assert.ok(names.has('create_agent_handoff'))
    })

    for (const [transport, clientFor] of [
      ['in the hub', (agent: SignedClient) => connect(local(agent), SIGNED)],
      ['over signed HTTP', (agent: SignedClient) => connect(remote(agent), SIGNED)],
      ['over signed Streamable HTTP at /mcp', streamable],
    ] as const) {
      test(`every tool answers what its output schema says, ${transport}`, async () => {
        const owner = await signedAgent(hub)
        const peer = await signedAgent(hub)
        const client = await clientFor(owner)
        const { tools } = await client.listTools()
        for (const name of TOOLS) {
          const t = tools.find((x) => x.name === name)
          assert.ok(t, name)
          assert.equal(t.outputSchema?.type, 'object', `${name} declares its output`)
        }
        const tool = async (name: string, args: Record<string, unknown>) => {
          const answer = toolAnswer(await client.callTool({ name, arguments: args }))
          return answer
        }
        const ok = async (name: string, args: Record<string, unknown>) => {
          const answer = await tool(name, args)
          assert.equal(answer.isError, false, `${name}: ${JSON.stringify(answer.body)}`)
          return answer.body
        }

        const created = await ok('create_resource', { namespace: 'mcp', kind: 'k', data: [1] })
        assert.equal(created.owner, owner.principal)
        const id = created.id as string
        assert.equal((await ok('read_resource', { id })).version, 1)
        const updated = await ok('update_resource', { id, expectedVersion: 1, data: { n: 2 } })
        assert.equal(updated.version, 2)
        const repeat = await ok('update_resource', { id, expectedVersion: 1, data: { n: 2 } })
        assert.equal(repeat.repeated, true)
        const stale = await tool('update_resource', { id, expectedVersion: 1, data: { n: 3 } })
        assert.equal(stale.body.code, 'version_conflict')
        assert.equal(stale.body.currentVersion, 2)
        assert.equal(((await ok('resource_history', { id })).versions as unknown[]).length, 2)
        const page = await ok('list_resources', { namespace: 'mcp', limit: '1' })
        assert.deepEqual(
          (page.resources as { id: string }[]).map((r) => r.id),
          [id],
        )
        assert.equal(page.next, id)
        const unknown = await tool('read_resource', { id: 'rs_missing' })
        assert.equal(unknown.body.code, 'resource_forbidden')

        const grant = await ok('grant_access', {
          resourceId: id,
          subject: peer.principal,
          actions: ['resource:read'],
          expiresAt: new Date(Date.now() + 3600_000).toISOString(),
        })
        assert.equal(grant.status, 'active')
        const grants = await ok('list_grants', {})
        assert.equal((grants.capabilities as unknown[]).length, 1)
        const revoked = await ok('revoke_grant', { id: grant.id })
        assert.equal(revoked.status, 'revoked')
        assert.equal((await ok('revoke_grant', { id: grant.id })).revokedAt, revoked.revokedAt)
        assert.equal(
          (await tool('revoke_grant', { id: 'gr_missing' })).body.code,
          'grant_not_found',
        )

        const sent = await ok('send_message', {
          recipient: peer.principal,
          body: { to: 'peer' },
          idempotencyKey: 'k1',
        })
        assert.equal(typeof sent.receipt, 'string')
        const incoming = await peer.request<{ id: string }>('POST', '/v1/messages', {
          recipient: owner.principal,
          body: { to: 'owner' },
          idempotencyKey: 'k2',
        })
        assert.equal(incoming.status, 201)
        const inbox = await ok('list_messages', { after: 0, limit: 10, unacked: true })
        const messages = inbox.messages as { id: string; sequence: number; body: unknown }[]
        assert.deepEqual(
          messages.map((m) => m.body),
          [{ to: 'owner' }],
        )
        assert.equal(inbox.nextAfter, messages[0]!.sequence)
        const waited = await ok('list_messages', { after: inbox.nextAfter, wait_seconds: 0 })
        assert.deepEqual(waited.messages, [])
        const ack = await ok('ack_message', { id: incoming.body.id })
        assert.equal(typeof ack.ackedAt, 'string')
        assert.equal((await ok('ack_message', { id: incoming.body.id })).ackedAt, ack.ackedAt)
        const acked = await ok('list_messages', { after: 0, unacked: true })
        assert.deepEqual(acked.messages, [])
        assert.equal((await tool('ack_message', { id: sent.id })).body.code, 'message_not_found')

        const written = await ok('write_home_file', {
          path: 'mcp/a.json',
          expectedRevision: 0,
          content: '{}',
        })
        assert.equal(written.revision, 1)
        assert.equal((await ok('read_home_file', { path: 'mcp/a.json' })).content, '{}')
        const files = await ok('list_home_files', { prefix: 'mcp/', limit: 1 })
        assert.deepEqual(
          (files.files as { path: string }[]).map((f) => f.path),
          ['mcp/a.json'],
        )
        assert.equal(files.nextAfter, 'mcp/a.json')
        const bad = await tool('read_home_file', { path: 'a//b' })
        assert.equal(bad.body.code, 'invalid_path')
        const stay = await tool('delete_home_file', { path: 'mcp/a.json', expectedRevision: 2 })
        assert.equal(stay.body.code, 'revision_conflict')
        const gone = await ok('delete_home_file', { path: 'mcp/a.json', expectedRevision: 1 })
        assert.deepEqual(gone, { path: 'mcp/a.json', revision: 1, deleted: true })
        const missing = await tool('read_home_file', { path: 'mcp/a.json' })
        assert.equal(missing.body.code, 'home_file_not_found')
      })
    }
  })
}
