import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  createIdentity,
  requestJson,
  type SignedBody,
  SignedClient,
  TransferAdminClient,
  TransferClient,
} from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createMcpServer } from '../src/mcp/server.js'
import { localInvoke } from '../src/ops/local.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { VERSION } from '../src/version.js'
import { startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

const ADMIN = 'transfer-mcp-operator-token-0123456789abcdef'

// The tools run in the hub (as the Streamable HTTP server runs them) and over signed HTTP
// requests to it (as `baton mcp --hub URL --identity FILE` runs them).
const invokers = ['local', 'remote'] as const

for (const store of testStores) {
  for (const via of invokers)
    describe(`session transfer MCP tools (${store.name}, ${via})`, () => {
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
        const invoke =
          via === 'local'
            ? localInvoke(hub.ctx, {
                ip: '127.0.0.1',
                principal: {
                  principal: signed.identity.principal,
                  state: 'approved',
                  enrolledAt: 0,
                  decidedAt: 0,
                },
              })
            : remoteInvoke({
                plain: (method, path, body, headers, signal) =>
                  requestJson(hub.url, method, path, body, { headers, signal }),
                signed: (method, path, body, headers, signal) =>
                  signed.request(method, path, body as SignedBody, headers, { signal }),
              })
        const server = createMcpServer(
          { invoke, auths: new Set<Auth>(['none', 'handoff-token', 'signature']) },
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

      test('runtime tools: whoami, list, claim and lease act as the session identity', async () => {
        const agent = await mcpAs()
        const runtime = await mcpAs()
        const orchestrator = new TransferAdminClient(hub.url, ADMIN)
        const me = await runtime.tool('whoami', {})
        assert.equal(me.isError, false, JSON.stringify(me.body))
        assert.equal(me.body.principal, runtime.transfers.client.identity.principal)
        assert.equal(me.body.state, 'approved')

        const none = await runtime.tool('claim_next_transfer', { tier: 'small' })
        assert.equal(none.isError, false, JSON.stringify(none.body))
        assert.equal(none.body.transfer, null)

        const snap = await agent.tool('snapshot_state', {
          snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'run me' }] },
        })
        const id = snap.body.transferId as string
        const p = { tier: 'small', budgetMicros: 5000, rateMicrosPerSecond: 100 }
        const { token } = await orchestrator.mint(id, { scope: 'provision', ...p })
        assert.equal(
          (await agent.tool('provision_runtime', { transferId: id, ...p, token })).body.state,
          'provisioned',
        )
        const early = await runtime.tool('lease_transfer', {
          transferId: id,
          instance: 'runtime-instance-1',
        })
        assert.equal(early.isError, true)
        assert.equal(early.body.code, 'transfer_not_found', 'a stranger until it claims')

        const claimed = await runtime.tool('claim_transfer', { transferId: id })
        assert.equal(claimed.isError, false, JSON.stringify(claimed.body))
        assert.equal(claimed.body.runtime, runtime.transfers.client.identity.principal)
        const again = await agent.tool('claim_transfer', { transferId: id })
        assert.equal(again.body.code, 'transfer_claimed')
        const next = await runtime.tool('claim_next_transfer', { tier: 'small' })
        assert.equal(next.body.transfer, null)

        const runs = await runtime.tool('list_transfers', { role: 'runtime' })
        assert.deepEqual(
          (runs.body.transfers as { transferId: string }[]).map((t) => t.transferId),
          [id],
        )
        const owns = await agent.tool('list_transfers', {})
        assert.ok(
          (owns.body.transfers as { transferId: string }[]).some((t) => t.transferId === id),
        )

        assert.equal((await runtime.tool('push_state', { transferId: id })).body.state, 'pushed')
        const { token: act } = await orchestrator.mint(id, { scope: 'activate' })
        const active = await agent.tool('activate', { transferId: id, token: act })
        assert.equal(active.body.state, 'active')
        const lease = await runtime.tool('lease_transfer', {
          transferId: id,
          instance: 'runtime-instance-1',
        })
        assert.equal(lease.isError, false, JSON.stringify(lease.body))
        assert.equal(lease.body.renewed, false)
        const renewed = await runtime.tool('lease_transfer', {
          transferId: id,
          instance: 'runtime-instance-1',
        })
        assert.equal(renewed.body.renewed, true)
        const stranger = await agent.tool('lease_transfer', {
          transferId: id,
          instance: 'runtime-instance-2',
        })
        assert.equal(stranger.body.code, 'transfer_forbidden', 'the owner is not its runtime')
      })
    })
}
