import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, saveIdentity } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  batonBin,
  call,
  repoRoot,
  startTestHub,
  type TestHub,
  testStores,
  toolAnswer,
} from './support.js'

type Structured = Record<string, unknown>

async function tool(client: Client, name: string, args: Record<string, unknown>) {
  const res = await client.callTool({ name, arguments: args })
  return toolAnswer(res) as { isError: boolean; body: Structured }
}

const transports = {
  'Streamable HTTP at /mcp': (hub: TestHub) =>
    new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)),
  'stdio (baton mcp --hub)': (hub: TestHub) =>
    new StdioClientTransport({
      command: process.execPath,
      args: [batonBin, 'mcp', '--hub', hub.url],
      cwd: repoRoot,
      stderr: 'pipe',
    }),
}

for (const store of testStores) {
  for (const [kind, makeTransport] of Object.entries(transports)) {
    describe(`MCP handoff tools over ${kind} (${store.name})`, () => {
      let hub: TestHub
      let client: Client
      before(async () => {
        hub = await startTestHub(store)
        client = new Client({ name: 'baton-test', version: '1.0.0' })
        await client.connect(makeTransport(hub))
      })
      after(async () => {
        await client.close()
        await hub.close()
      })

      test('lists the three seed tools with input schemas', async () => {
        const { tools } = await client.listTools()
        const names = tools.map((t) => t.name).sort()
        for (const name of [
          'advance_agent_handoff',
          'create_agent_handoff',
          'read_agent_handoff',
        ]) {
          assert.ok(names.includes(name), name)
        }
        const read = tools.find((t) => t.name === 'read_agent_handoff')!
        const props = read.inputSchema.properties as Record<string, object>
        assert.deepEqual(Object.keys(props).sort(), [
          'handoff_id',
          'token',
          'version',
          'wait_seconds',
        ])
        // The wait is the route's: any whole number, clamped to the hub's longest wait, which
        // the description states; the tool takes no argument the route does not.
        const doc = (await fetch(`${hub.url}/openapi.json`).then((r) => r.json())) as {
          paths: Record<string, { get: { parameters: { name: string; schema: object }[] } }>
        }
        const route = doc.paths['/services/v1/handoff/{handoff_id}/wait/{seconds}']!.get
        const param = (name: string) => route.parameters.find((p) => p.name === name)?.schema
        assert.deepEqual(props.wait_seconds, param('seconds'))
        assert.deepEqual(props.version, param('version'))
        assert.match(read.description ?? '', /at most 25;/)
        assert.equal(read.inputSchema.additionalProperties, false)
      })

      test('create, advance, read and a conflict, with the same rules as HTTP', async () => {
        const created = await tool(client, 'create_agent_handoff', {
          payload: { task: 'translate', words: 120 },
          note: 'from the planner',
        })
        assert.equal(created.isError, false)
        const id = created.body.handoff_id as string
        const owner = created.body.owner_token as string
        const receiver = created.body.receiver_token as string
        assert.equal(created.body.state, 'offered')

        const moved = await tool(client, 'advance_agent_handoff', {
          handoff_id: id,
          token: receiver,
          state: 'accepted',
          from: 'offered',
          nonce: 'mcp-1',
        })
        assert.equal(moved.isError, false)
        assert.equal(moved.body.state, 'accepted')
        assert.equal(moved.body.by, 'receiver')

        const repeat = await tool(client, 'advance_agent_handoff', {
          handoff_id: id,
          token: receiver,
          state: 'accepted',
          from: 'offered',
          nonce: 'mcp-1',
        })
        assert.equal(repeat.body.repeated, true)

        const conflict = await tool(client, 'advance_agent_handoff', {
          handoff_id: id,
          token: owner,
          state: 'working',
          from: 'offered',
        })
        assert.equal(conflict.isError, true)
        assert.equal(conflict.body.code, 'state_conflict')
        assert.equal(conflict.body.state, 'accepted')
        assert.equal(conflict.body.version, 2)
        assert.equal(conflict.body.ended, false)

        const read = await tool(client, 'read_agent_handoff', { handoff_id: id, token: owner })
        assert.equal(read.body.state, 'accepted')
        assert.deepEqual(read.body.payload, { task: 'translate', words: 120 })
        // The HTTP face sees exactly what the tool wrote.
        const http = await call(hub, 'GET', `/services/v1/handoff/${id}`, { token: owner })
        assert.equal(http.body.version, 2)
      })

      test('domain failures are tool errors with the stable code', async () => {
        const big = await tool(client, 'create_agent_handoff', {
          payload: { s: 'x'.repeat(16_400) },
        })
        assert.equal(big.isError, true)
        assert.equal(big.body.code, 'payload_too_large')
        const machine = await tool(client, 'create_agent_handoff', {
          payload: 1,
          states: ['a', 'b', 'a'],
        })
        assert.equal(machine.body.code, 'invalid_machine')
        const missing = await tool(client, 'read_agent_handoff', {
          handoff_id: 'ho_AAAAAAAAAAAAAAAAAAAAAA',
          token: 'hot_o_x',
        })
        assert.equal(missing.isError, true)
        assert.equal(missing.body.code, 'handoff_not_found')
        const state = await tool(client, 'advance_agent_handoff', {
          handoff_id: 'ho_AAAAAAAAAAAAAAAAAAAAAA',
          token: 'hot_o_x',
          state: 'bad state',
          from: 'offered',
        })
        assert.equal(state.body.code, 'unknown_state')
      })

      test('read_agent_handoff with wait_seconds answers when the other side moves', async () => {
        const created = await tool(client, 'create_agent_handoff', { payload: { n: 1 } })
        const id = created.body.handoff_id as string
        const owner = created.body.owner_token as string
        const held = hub.ctx.waits.waiting
        const waiting = tool(client, 'read_agent_handoff', {
          handoff_id: id,
          token: owner,
          wait_seconds: 20,
          version: 1,
        })
        await hub.ctx.waits.untilWaiting(held + 1)
        await call(hub, 'POST', `/services/v1/handoff/${id}/accepted`, {
          token: created.body.receiver_token as string,
          body: { from: 'offered' },
        })
        const woke = await waiting
        assert.equal(woke.body.changed, true)
        assert.equal(woke.body.state, 'accepted')
        assert.equal(woke.body.version, 2)
      })
    })
  }
}

describe('baton mcp against a hub that is down', () => {
  test('a tool answers hub_unreachable with the cause, and says it on stderr', async () => {
    // A port that was just free and is now closed: nothing listens there.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [batonBin, 'mcp', '--hub', `http://127.0.0.1:${port}`],
      cwd: repoRoot,
      stderr: 'pipe',
    })
    // The line is awaited as it arrives, not looked for after a pause.
    const cause = /baton mcp: POST \/services\/v1\/handoff: .*ECONNREFUSED/
    let stderr = ''
    const saidWhy = new Promise<void>((resolve) => {
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8')
        if (cause.test(stderr)) resolve()
      })
    })
    const client = new Client({ name: 'baton-test', version: '1.0.0' })
    await client.connect(transport)
    try {
      const res = await tool(client, 'create_agent_handoff', { payload: { n: 1 } })
      assert.equal(res.isError, true)
      assert.equal(res.body.code, 'hub_unreachable')
      assert.match(String(res.body.error), /ECONNREFUSED/)
      assert.equal(res.body.hub, `http://127.0.0.1:${port}`)
      assert.ok(typeof res.body.fix === 'string' && res.body.fix.length > 0)
      await saidWhy
    } finally {
      await client.close()
    }
    assert.match(stderr, cause)
  })

  test('with --identity, a hub down at startup: the server starts, and each tool says why', async () => {
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const hubUrl = `http://127.0.0.1:${port}`
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-mcp-down-'))
    const identityFile = path.join(dir, 'agent.identity.json')
    await saveIdentity(identityFile, createIdentity(`${hubUrl}/.well-known/agent-net`))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [batonBin, 'mcp', '--hub', hubUrl, '--identity', identityFile],
      cwd: repoRoot,
      stderr: 'pipe',
    })
    const cause = /baton mcp: GET \/v1\/resources\S*: .*ECONNREFUSED/
    let stderr = ''
    const saidWhy = new Promise<void>((resolve) => {
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8')
        if (cause.test(stderr)) resolve()
      })
    })
    const client = new Client({ name: 'baton-test', version: '1.0.0' })
    await client.connect(transport)
    try {
      // The signed tools are offered: the identity was read, the hub was not needed for that.
      const names = new Set((await client.listTools()).tools.map((t) => t.name))
      assert.ok(names.has('list_resources'))
      for (let i = 0; i < 2; i++) {
        const res = await tool(client, 'list_resources', {})
        assert.equal(res.isError, true)
        assert.equal(res.body.code, 'hub_unreachable')
        assert.match(String(res.body.error), /fetch failed: .*ECONNREFUSED/)
        assert.equal(res.body.hub, hubUrl)
      }
      await saidWhy
    } finally {
      await client.close()
      await rm(dir, { recursive: true, force: true })
    }
    assert.match(stderr, cause)
  })
})
