import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  requestJson,
  SignedClient,
  TransferAdminClient,
  TransferClient,
} from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { VERSION } from '../src/app.js'
import { createMcpServer } from '../src/mcp/server.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { transferOpsFromClient } from '../src/transfers/mcp.js'
import { startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

const ADMIN = 'transfer-mcp-operator-token-0123456789abcdef'

for (const store of testStores) {
  describe(`session transfer MCP tools (${store.name})`, () => {
    let hub: TestHub
    const clients: Client[] = []

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: ADMIN })
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
    })

    /** An MCP client connected to a server whose tools act as a fresh identity. */
    async function mcpAs(): Promise<{
      tool: (
        name: string,
        args: Record<string, unknown>,
      ) => Promise<{ isError: boolean; body: Record<string, unknown> }>
      client: Client
      transfers: TransferClient
    }> {
      const signed = await SignedClient.connect(
        `${hub.url}/.well-known/agent-net`,
        createIdentity(hub.url),
      )
      const transfers = new TransferClient(signed)
      const server = createMcpServer(
        {
          invoke: remoteInvoke({
            plain: (method, path, body, headers, signal) =>
              requestJson(hub.url, method, path, body, { headers, signal }),
          }),
          auths: new Set<Auth>(['none', 'handoff-token']),
          transfers: transferOpsFromClient(transfers),
        },
        VERSION,
      )
      const [a, b] = InMemoryTransport.createLinkedPair()
      await server.connect(a)
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(b)
      clients.push(client)
      return {
        client,
        transfers,
        tool: async (name, args) => {
          const res = await client.callTool({ name, arguments: args })
          return toolAnswer(res)
        },
      }
    }

    test('the six seed tools drive a transfer; none mints a token; domain errors carry codes', async () => {
      const agent = await mcpAs()
      const runtime = await mcpAs()
      const orchestrator = new TransferAdminClient(hub.url, ADMIN)
      const { tools } = await agent.client.listTools()
      const names = tools.map((t) => t.name)
      for (const n of [
        'snapshot_state',
        'provision_runtime',
        'push_state',
        'activate',
        'report_usage',
        'get_status',
      ]) {
        assert.ok(names.includes(n), n)
      }
      assert.ok(!names.some((n) => /mint|token|issue|terminate/.test(n)), 'no orchestrator tools')

      const secret = await agent.tool('snapshot_state', {
        snapshot: {
          systemPrompt: 'p',
          messages: [{ role: 'user', content: `my key is AKIAIOSFODNN7EXAMPLE` }],
        },
      })
      assert.equal(secret.isError, true)
      assert.equal(secret.body.code, 'snapshot_contains_secret')

      const snap = await agent.tool('snapshot_state', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
        idempotencyKey: 'mcp-1',
      })
      assert.equal(snap.isError, false, JSON.stringify(snap.body))
      const id = snap.body.transferId as string
      const again = await agent.tool('snapshot_state', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
        idempotencyKey: 'mcp-1',
      })
      assert.equal(again.body.transferId, id)

      const p = { tier: 'small', budgetMicros: 5000, rateMicrosPerSecond: 100 }
      const { token } = await orchestrator.mint(id, { scope: 'provision', ...p })
      const wrong = await agent.tool('provision_runtime', {
        transferId: id,
        ...p,
        budgetMicros: 6000,
        token,
      })
      assert.equal(wrong.body.code, 'transfer_token_params_mismatch')
      const prov = await agent.tool('provision_runtime', { transferId: id, ...p, token })
      assert.equal(prov.body.state, 'provisioned')

      const notMine = await agent.tool('push_state', { transferId: id })
      assert.equal(notMine.body.code, 'transfer_forbidden')
      await runtime.transfers.claim(id)
      const pushed = await runtime.tool('push_state', { transferId: id })
      assert.equal(pushed.body.state, 'pushed', JSON.stringify(pushed.body))

      const { token: act } = await orchestrator.mint(id, { scope: 'activate' })
      const active = await agent.tool('activate', { transferId: id, token: act })
      assert.equal(active.body.state, 'active')
      const replay = await agent.tool('activate', { transferId: id, token: act })
      assert.equal(replay.body.code, 'transfer_token_replayed')

      const refused = await agent.tool('report_usage', {
        transferId: id,
        idempotencyKey: 'u1',
        amountMicros: 10,
      })
      assert.equal(
        refused.body.code,
        'transfer_forbidden',
        'the source agent cannot force insolvency',
      )
      const used = await runtime.tool('report_usage', {
        transferId: id,
        idempotencyKey: 'u1',
        amountMicros: 5000,
      })
      assert.equal(used.body.stop, true)
      assert.equal(used.body.state, 'insolvent')

      const status = await agent.tool('get_status', { transferId: id })
      assert.deepEqual(
        (status.body.events as { type: string }[]).map((e) => e.type),
        ['staged', 'provisioned', 'claimed', 'pushed', 'active', 'insolvent'],
      )
      const waited = await runtime.tool('get_status', { transferId: id, wait_seconds: 0 })
      assert.equal(waited.body.changed, false)
    })
  })
}
