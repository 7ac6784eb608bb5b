// A real MCP server and client: the handoff travels in the _meta of tools/call params, the status
// comes back in the CallToolResult's _meta, and canceled travels in notifications/cancelled.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import {
  type CallToolResult,
  CancelledNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import {
  HandoffAgent,
  MCP_META_KEY,
  readMcpHandoff,
  readMcpStatus,
  type StatusOutcome,
  withMcpHandoff,
  withMcpStatus,
} from '../src/index.js'
import { agents, T0, trustOf } from './fixtures.js'

const PLANNER = 'spiffe://a.example/agent/planner'
const CODER = 'spiffe://b.example/agent/coder'
const list = await agents([PLANNER, CODER])
const trust = trustOf(list)
const now = () => T0 * 1000
const planner = new HandoffAgent({ signer: list[0]!.signer, trust, now })
const coder = new HandoffAgent({ signer: list[1]!.signer, trust, now })

const server = new McpServer({ name: 'coder', version: '1.0.0' })
const client = new Client({ name: 'planner', version: '1.0.0' })
const cancels: StatusOutcome[] = []
let cancelled: () => void = () => {}

before(async () => {
  server.registerTool(
    'write_patch',
    { description: 'write a patch' },
    async (extra): Promise<CallToolResult> => {
      const handoff = readMcpHandoff(extra._meta ?? {})
      const r = await coder.receive(handoff)
      if (r.kind === 'new') {
        // the work is done within the call, so the one reply carries the terminal status
        const done = await coder.complete(r.verified.claims)
        return withMcpStatus({ content: [{ type: 'text', text: 'patched' }] }, done)
      }
      const answer =
        r.kind === 'rejected'
          ? r.status?.element
          : r.kind === 'retransmission'
            ? r.resend
            : undefined
      const result: CallToolResult = { content: [{ type: 'text', text: r.kind }], isError: true }
      return answer === undefined ? result : withMcpStatus(result, answer)
    },
  )
  server.server.setNotificationHandler(CancelledNotificationSchema, async (n) => {
    const carried = readMcpStatus(n.params)
    if (carried !== undefined) cancels.push(await coder.receiveStatus(carried))
    cancelled()
  })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  await client.connect(clientSide)
})

after(async () => {
  await client.close()
  await server.close()
})

describe('MCP carrier', () => {
  test('a handoff in tools/call _meta is verified; the status returns in the result _meta', async () => {
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'mcp-session-1' })
    const params = withMcpHandoff({ name: 'write_patch', arguments: {} }, handoff)
    assert.ok(MCP_META_KEY in params._meta)
    const result = await client.callTool(params)
    assert.equal(result.isError, undefined)
    const status = readMcpStatus(result)
    assert.ok(status, 'the result carries a status')
    const outcome = await planner.receiveStatus(status)
    assert.equal(outcome.ok, true)
    assert.equal(outcome.state, 'completed')
    assert.equal(await planner.issuedState(offer.claims.hop), 'completed')
  })

  test('a retransmission over MCP learns the last status again, as identical octets', async () => {
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'mcp-session-2' })
    const first = await client.callTool(
      withMcpHandoff({ name: 'write_patch', arguments: {} }, handoff),
    )
    const again = await planner.retransmit(offer.claims.hop)
    const second = await client.callTool(
      withMcpHandoff({ name: 'write_patch', arguments: {} }, again!),
    )
    assert.equal(readMcpStatus(second)?.status, readMcpStatus(first)?.status)
  })

  test('an offer meant for another agent is rejected without a status', async () => {
    const { handoff } = await planner.offer({ aud: 'spiffe://c.example/agent/other', dialog: 'x' })
    const result = await client.callTool(
      withMcpHandoff({ name: 'write_patch', arguments: {} }, handoff),
    )
    assert.equal(result.isError, true)
    assert.equal(readMcpStatus(result), undefined)
  })

  test('canceled travels in the _meta of notifications/cancelled', async () => {
    const { handoff, offer } = await planner.offer({ aud: CODER, dialog: 'mcp-session-3' })
    // the delegate has taken the hop but not finished it
    await coder.receive(handoff)
    await coder.accept(offer.claims)
    const cancel = await planner.cancel(offer.claims.hop)
    const arrived = new Promise<void>((resolve) => {
      cancelled = resolve
    })
    await client.notification({
      method: 'notifications/cancelled',
      params: withMcpStatus({ requestId: 12345, reason: 'plan changed' }, cancel),
    })
    await arrived
    assert.equal(cancels.at(-1)?.ok, true)
    assert.equal(cancels.at(-1)?.state, 'canceled')
    assert.equal((await coder.receivedHop(offer.claims))?.state, 'canceled')
  })
})
