import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, ResourceClient, SignedClient, saveIdentity } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import {
  batonBin,
  repoRoot,
  startTestHub,
  type TestHub,
  testStores,
  toolAnswer,
} from './support.js'

for (const store of testStores) {
  describe(`MCP tools acting as an identity, over stdio (${store.name})`, () => {
    let hub: TestHub
    let client: Client
    let dir: string
    let peer: SignedClient
    let ownerPrincipal: string
    const tool = async (name: string, args: Record<string, unknown>) => {
      const res = await client.callTool({ name, arguments: args })
      return toolAnswer(res)
    }

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      dir = mkdtempSync(path.join(tmpdir(), 'baton-mcp-id-'))
      const owner = createIdentity(hub.url)
      ownerPrincipal = owner.principal
      await saveIdentity(path.join(dir, 'agent.identity.json'), owner)
      peer = await SignedClient.connect(`${hub.url}/.well-known/agent-net`, createIdentity(hub.url))
      await peer.me()
      client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [
            batonBin,
            'mcp',
            '--hub',
            hub.url,
            '--identity',
            path.join(dir, 'agent.identity.json'),
          ],
          cwd: repoRoot,
          stderr: 'pipe',
        }),
      )
    })
    after(async () => {
      await client.close()
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test('resource and grant tools act as the identity the server was started with', async () => {
      const { tools } = await client.listTools()
      const names = new Set(tools.map((t) => t.name))
      for (const n of [
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
      ]) {
        assert.ok(names.has(n), n)
      }
      assert.ok(![...names].some((n) => /admin|approve|token/.test(n)), 'no operator tools')

      const created = await tool('create_resource', {
        namespace: 'mcp',
        kind: 'task/v1',
        data: { s: 1 },
      })
      assert.equal(created.isError, false, JSON.stringify(created.body))
      assert.equal(created.body.owner, ownerPrincipal)
      const id = created.body.id as string
      const updated = await tool('update_resource', { id, expectedVersion: 1, data: { s: 2 } })
      assert.equal(updated.body.version, 2)
      const conflict = await tool('update_resource', { id, expectedVersion: 1, data: { s: 3 } })
      assert.equal(conflict.isError, true)
      assert.equal(conflict.body.code, 'version_conflict')
      assert.equal(conflict.body.currentVersion, 2)
      const history = await tool('resource_history', { id })
      assert.equal((history.body.versions as unknown[]).length, 2)

      const peerResources = new ResourceClient(peer)
      await assert.rejects(peerResources.get(id), { code: 'resource_forbidden' })
      const grant = await tool('grant_access', {
        resourceId: id,
        subject: peer.principal,
        actions: ['resource:read'],
        expiresAt: new Date(Date.now() + 3600_000).toISOString(),
      })
      assert.equal(grant.isError, false, JSON.stringify(grant.body))
      assert.equal((await peerResources.get(id)).version, 2)
      const listed = await tool('list_grants', {})
      assert.equal((listed.body.capabilities as unknown[]).length, 1)
      const revoked = await tool('revoke_grant', { id: grant.body.id })
      assert.equal(revoked.body.status, 'revoked')
      await assert.rejects(peerResources.get(id), { code: 'resource_forbidden' })
      const list = await tool('list_resources', { namespace: 'mcp' })
      assert.equal((list.body.resources as unknown[]).length, 1)

      const written = await tool('write_home_file', {
        path: 'notes/one.json',
        expectedRevision: 0,
        content: '{"n":1}',
      })
      assert.equal(written.isError, false, JSON.stringify(written.body))
      assert.equal(written.body.revision, 1)
      const read = await tool('read_home_file', { path: 'notes/one.json' })
      assert.equal(read.body.content, '{"n":1}')
      const sent = await tool('send_message', {
        recipient: peer.principal,
        body: { hello: 'peer' },
        idempotencyKey: 'mcp-msg-1',
      })
      assert.equal(sent.isError, false, JSON.stringify(sent.body))
      const inbox = await peer.call<{ messages: { id: string; sender: string }[] }>(
        'GET',
        '/v1/messages?after=0&limit=20',
      )
      assert.equal(inbox.messages[0]?.sender, ownerPrincipal)
      assert.equal(inbox.messages[0]?.id, sent.body.id)
    })
  })
}
