import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  hopSigner,
  requestJson,
  type SignedBody,
  type SignedClient,
  signedFetch,
} from '@baton/client'
import {
  MCP_META_KEY,
  readMcpStatus,
  signOffer,
  signStatus,
  toHandoff,
  withMcpHandoff,
} from '@baton/context'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createMcpServer } from '../src/mcp/server.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { VERSION } from '../src/version.js'
import { signedAgent, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

// The hop tools come from the operation registry: the same calls over signed Streamable HTTP at
// /mcp and through `baton mcp --identity` (a signed HTTP request per tool call).
const TOOLS = ['offer_handoff', 'answer_handoff', 'list_hop_inbox', 'read_hop', 'read_hop_chain']

for (const store of testStores) {
  describe(`hop tools over MCP (${store.name})`, () => {
    let hub: TestHub
    const clients: Client[] = []
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
    })

    async function streamable(agent: SignedClient) {
      const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
        fetch: signedFetch(agent.identity),
      })
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      return client
    }

    async function remote(agent: SignedClient) {
      const invoke = remoteInvoke({
        plain: (method, path, body, headers, signal) =>
          requestJson(hub.url, method, path, body, { headers, signal }),
        signed: (method, path, body, headers, signal) =>
          agent.request(method, path, body as SignedBody, headers, { signal }),
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
      return client
    }

    test('an unsigned session is offered none of the hop tools', async () => {
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
      clients.push(client)
      const names = new Set((await client.listTools()).tools.map((t) => t.name))
      for (const name of TOOLS) assert.equal(names.has(name), false, name)
    })

    test('offer_handoff reads the Handoff object from _meta; the status rides back in _meta', async () => {
      const planner = await signedAgent(hub)
      const coder = await signedAgent(hub)
      const p = await streamable(planner)
      const c = await streamable(coder)
      const offer = signOffer({
        signer: await hopSigner(planner.identity),
        aud: coder.principal,
        dialog: 'ctx-meta',
        task: 'task-42',
      })
      const handoff = toHandoff(offer)
      // seed 003: the Handoff object under the carrying key in the request params' _meta
      const carried = withMcpHandoff(
        { name: 'offer_handoff', arguments: { to: coder.principal } },
        handoff,
      )
      const first = await p.callTool(carried)
      const offered = toolAnswer(first)
      assert.equal(offered.isError, false, JSON.stringify(offered.body))
      assert.equal((offered.body.hop as { digest: string }).digest, offer.digest)
      assert.equal(offered.body.retransmission, false)
      assert.equal(readMcpStatus(first), undefined)
      const inbox = toolAnswer(await c.callTool({ name: 'list_hop_inbox', arguments: {} }))
      assert.deepEqual(
        (inbox.body.deliveries as { element: string }[]).map((d) => d.element),
        [offer.element],
      )

      const accepted = signStatus({
        signer: await hopSigner(coder.identity),
        offer: offer.element,
        state: 'accepted',
      })
      await c.callTool({ name: 'answer_handoff', arguments: { status: accepted.element } })
      // A delegator over MCP learns of a later status by retransmitting: it rides in _meta.
      const again = await p.callTool(carried)
      assert.equal(toolAnswer(again).body.retransmission, true)
      assert.deepEqual(readMcpStatus(again), { status: accepted.element })
      assert.deepEqual((again._meta as Record<string, unknown>)[MCP_META_KEY], {
        status: accepted.element,
      })
      // The same Handoff in both places is one offer; different ones are refused.
      const both = await p.callTool({
        ...carried,
        arguments: { to: coder.principal, handoff: { offer: offer.element } },
      })
      assert.equal(toolAnswer(both).body.retransmission, true)
      const other = signOffer({
        signer: await hopSigner(planner.identity),
        aud: coder.principal,
        dialog: 'ctx-meta',
      })
      for (const params of [
        { ...carried, arguments: { to: coder.principal, handoff: { offer: other.element } } },
        { ...carried, _meta: { [MCP_META_KEY]: { offer: 42 } } },
        { name: 'offer_handoff', arguments: { to: coder.principal } },
      ]) {
        const refused = toolAnswer(await p.callTool(params))
        assert.equal(refused.isError, true)
        assert.equal(refused.body.code, 'invalid_request', JSON.stringify(params))
      }
      const unsigned = toolAnswer(
        await p.callTool(
          withMcpHandoff(
            { name: 'offer_handoff', arguments: { to: coder.principal } },
            { offer: 'not.a.jws' },
          ),
        ),
      )
      assert.equal(unsigned.body.code, 'hop_refused')
      assert.equal(unsigned.body.reason, 'bad-signature')
      // Over HTTP the Handoff object is required in the body.
      const bare = await planner.request('POST', '/v1/hops', { to: coder.principal })
      assert.equal(bare.status, 400)
      assert.equal((bare.body as { code: string }).code, 'invalid_request')
    })

    for (const [face, connect] of [
      ['signed Streamable HTTP at /mcp', streamable],
      ['baton mcp --identity', remote],
    ] as const) {
      test(`offer, answer, read, chain and inbox (${face})`, async () => {
        const planner = await signedAgent(hub)
        const coder = await signedAgent(hub)
        const p = await connect(planner)
        const c = await connect(coder)
        const names = new Set((await p.listTools()).tools.map((t) => t.name))
        for (const name of TOOLS) assert.ok(names.has(name), name)

        const offer = signOffer({
          signer: await hopSigner(planner.identity),
          aud: coder.principal,
          dialog: 'ctx-mcp',
          task: 'task-42',
        })
        const offered = toolAnswer(
          await p.callTool({
            name: 'offer_handoff',
            arguments: { to: coder.principal, handoff: { offer: offer.element } },
          }),
        )
        assert.equal(offered.isError, false, JSON.stringify(offered.body))
        const hop = offered.body.hop as { digest: string; state: string }
        assert.equal(hop.digest, offer.digest)
        assert.equal(hop.state, 'offered')

        const inbox = toolAnswer(await c.callTool({ name: 'list_hop_inbox', arguments: {} }))
        const deliveries = inbox.body.deliveries as { kind: string; element: string }[]
        assert.deepEqual(
          deliveries.map((d) => [d.kind, d.element]),
          [['offer', offer.element]],
        )

        const accepted = signStatus({
          signer: await hopSigner(coder.identity),
          offer: offer.element,
          state: 'accepted',
        })
        const answered = toolAnswer(
          await c.callTool({ name: 'answer_handoff', arguments: { status: accepted.element } }),
        )
        assert.equal(answered.isError, false, JSON.stringify(answered.body))
        assert.equal((answered.body.hop as { state: string }).state, 'accepted')

        const read = toolAnswer(
          await p.callTool({ name: 'read_hop', arguments: { digest: offer.digest } }),
        )
        assert.equal((read.body as { state: string }).state, 'accepted')
        const chain = toolAnswer(
          await p.callTool({ name: 'read_hop_chain', arguments: { digest: offer.digest } }),
        )
        assert.deepEqual(
          (chain.body.hops as { digest: string }[]).map((h) => h.digest),
          [offer.digest],
        )

        // A refusal is a tool error with the stable code and the draft's reason.
        const wrong = toolAnswer(
          await p.callTool({
            name: 'offer_handoff',
            arguments: { to: planner.principal, handoff: { offer: offer.element } },
          }),
        )
        assert.equal(wrong.isError, true)
        assert.equal(wrong.body.code, 'hop_refused')
        assert.equal(wrong.body.reason, 'wrong-audience')
      })
    }
  })
}
