import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { requestJson, type SignedBody, type SignedClient, signedFetch } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpError, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { busWatch, type Delay, pollWatch, type Watch } from '../src/mcp/resources.js'
import { createMcpServer } from '../src/mcp/server.js'
import { SESSION_LIMITS } from '../src/mcp/sessions.js'
import { localInvoke } from '../src/ops/local.js'
import type { Invoke } from '../src/ops/mcp.js'
import type { Auth } from '../src/ops/operation.js'
import { remoteInvoke } from '../src/ops/remote.js'
import { VERSION } from '../src/version.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

const SIGNED = new Set<Auth>(['none', 'handoff-token', 'signature'])
const ADMIN = 'mcp-resources-operator-token-0123456789abcdef'
/** MCP resources: "Resource not found". */
const NOT_FOUND = -32002

/** A delay the test releases by hand, so a polling watch re-reads only when the test says. */
function manualDelay() {
  const waiting = new Set<() => void>()
  const delay: Delay = (_ms, signal) =>
    new Promise((resolve) => {
      const done = () => {
        waiting.delete(done)
        resolve()
      }
      waiting.add(done)
      signal.addEventListener('abort', done, { once: true })
    })
  return {
    delay,
    tick() {
      for (const done of [...waiting]) done()
    },
  }
}

/** Collects `notifications/resources/updated` and answers the next one for a URI. */
function updates(client: Client) {
  const seen: string[] = []
  const wanted = new Map<string, () => void>()
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    seen.push(n.params.uri)
    wanted.get(n.params.uri)?.()
  })
  return {
    seen,
    next: (uri: string) =>
      new Promise<void>((resolve) =>
        wanted.set(uri, () => {
          wanted.delete(uri)
          resolve()
        }),
      ),
  }
}

/** The JSON text of a read's one content. */
function textOf(contents: readonly object[]): string {
  const first = contents[0] as { text?: unknown } | undefined
  assert.equal(typeof first?.text, 'string')
  return first!.text as string
}

async function rejectsWith(promise: Promise<unknown>, code: number) {
  await assert.rejects(promise, (e: unknown) => e instanceof McpError && e.code === code)
}

for (const store of testStores) {
  describe(`MCP resources (${store.name})`, () => {
    let hub: TestHub
    const clients: Client[] = []
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: ADMIN,
        BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
      })
    })
    after(async () => {
      for (const c of clients) await c.close()
      await hub.close()
    })

    async function connect(invoke: Invoke, auths: ReadonlySet<Auth>, watch?: Watch) {
      const server = createMcpServer({ invoke, auths, watch }, VERSION)
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

    /** A resource, a transfer and a message of `owner`'s, made over HTTP. */
    async function itemsOf(owner: SignedClient, peer: SignedClient) {
      const a = await owner.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'watch',
        kind: 'k',
        data: { n: 1 },
      })
      const b = await owner.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'watch',
        kind: 'k',
        data: { n: 1 },
      })
      const t = await owner.request<{ transferId: string }>('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'hello' }] },
      })
      assert.equal(a.status, 201)
      assert.equal(t.status, 201)
      const sent = await peer.request('POST', '/v1/messages', {
        recipient: owner.principal,
        body: { hello: 1 },
        idempotencyKey: 'first',
      })
      assert.equal(sent.status, 201)
      return {
        a: `baton://resources/${a.body.id}`,
        b: `baton://resources/${b.body.id}`,
        aId: a.body.id,
        bId: b.body.id,
        transfer: `baton://transfers/${t.body.transferId}`,
        transferId: t.body.transferId,
      }
    }

    const update = async (agent: SignedClient, id: string, expectedVersion: number) => {
      const res = await agent.request('PATCH', `/v1/resources/${id}`, {
        expectedVersion,
        data: { n: expectedVersion + 1 },
      })
      assert.equal(res.status, 200)
    }

    test('an unsigned session offers the guides alone', async () => {
      const client = await connect(localInvoke(hub.ctx, { ip: '127.0.0.1' }), new Set(['none']))
      const { resourceTemplates } = await client.listResourceTemplates()
      assert.deepEqual(
        resourceTemplates.map((t) => t.uriTemplate),
        ['baton://guides/{name}'],
      )
    })

    test('templates, list and read of each kind, and what another principal sees', async () => {
      const owner = await signedAgent(hub)
      const peer = await signedAgent(hub)
      const items = await itemsOf(owner, peer)
      const client = await connect(local(owner), SIGNED)

      const { resourceTemplates } = await client.listResourceTemplates()
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
        'baton://guides/{name}',
        'baton://inbox',
        'baton://resources/{id}',
        'baton://transfers/{id}',
      ])
      for (const t of resourceTemplates) {
        assert.equal(t.mimeType, t.name === 'guide' ? 'text/markdown' : 'application/json')
      }
      const { resources } = await client.listResources()
      assert.deepEqual(
        resources
          .map((r) => r.uri)
          .filter((u) => !u.startsWith('baton://guides/'))
          .sort(),
        ['baton://inbox', items.a, items.b, items.transfer].sort(),
      )

      const json = async (uri: string) => {
        const { contents } = await client.readResource({ uri })
        assert.equal(contents.length, 1)
        assert.equal(contents[0]!.uri, uri)
        assert.equal(contents[0]!.mimeType, 'application/json')
        return JSON.parse(textOf(contents)) as Record<string, unknown>
      }
      assert.deepEqual((await json(items.a)).data, { n: 1 })
      assert.equal((await json(items.transfer)).state, 'staged')
      const inbox = await json('baton://inbox')
      assert.deepEqual(
        (inbox.messages as { body: unknown }[]).map((m) => m.body),
        [{ hello: 1 }],
      )

      // Another principal: the owner's items answer exactly like ones that do not exist.
      const outsider = await connect(local(peer), SIGNED, busWatch(hub.ctx.bus, peer.principal))
      for (const uri of [items.a, items.transfer, 'baton://resources/rs_missing', 'baton://nope']) {
        await rejectsWith(outsider.readResource({ uri }), NOT_FOUND)
        await rejectsWith(outsider.subscribeResource({ uri }), NOT_FOUND)
      }
      const theirs = await outsider.readResource({ uri: 'baton://inbox' })
      assert.deepEqual(JSON.parse(textOf(theirs.contents)).messages, [])
      assert.equal(
        (await outsider.listResources()).resources.some((r) => r.uri === items.a),
        false,
      )
    })

    /** The official client over signed Streamable HTTP, and a promise of its GET event stream. */
    async function streamable(agent: SignedClient) {
      const signed = signedFetch(agent.identity)
      let streamOpen!: () => void
      const opened = new Promise<void>((resolve) => {
        streamOpen = resolve
      })
      const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
        fetch: async (url, init) => {
          const res = await signed(url, init)
          if (init?.method === 'GET' && res.status === 200) streamOpen()
          return res
        },
      })
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      return { client, transport, opened }
    }

    /** A signed JSON-RPC POST to /mcp naming a session, as `agent`. */
    async function postIn(agent: SignedClient, sessionId: string | undefined) {
      const res = await signedFetch(agent.identity)(`${hub.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
          ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      })
      const text = await res.text()
      return { status: res.status, text }
    }

    test('signed Streamable HTTP: a session pushes updates on its event stream', async () => {
      const owner = await signedAgent(hub)
      const peer = await signedAgent(hub)
      const items = await itemsOf(owner, peer)
      const { client, transport, opened } = await streamable(owner)
      assert.equal(client.getServerCapabilities()?.resources?.subscribe, true)
      assert.equal(typeof transport.sessionId, 'string')
      const { contents } = await client.readResource({ uri: items.a })
      assert.equal(JSON.parse(textOf(contents)).id, items.aId)
      await rejectsWith(client.readResource({ uri: `${items.transfer}x` }), NOT_FOUND)

      const notes = updates(client)
      await client.subscribeResource({ uri: items.a })
      await opened
      await update(owner, items.bId, 1)
      const changed = notes.next(items.a)
      await update(owner, items.aId, 1)
      await changed
      assert.deepEqual(notes.seen, [items.a])

      // The session is the signer's: another key naming it is answered like a missing session.
      const mine = await postIn(owner, transport.sessionId)
      assert.equal(mine.status, 200)
      const theirs = await postIn(peer, transport.sessionId)
      const missing = await postIn(peer, 'no-such-session')
      assert.equal(theirs.status, 404)
      assert.deepEqual(JSON.parse(theirs.text), JSON.parse(missing.text))
      assert.equal(JSON.parse(theirs.text).error.code, -32001)
      await client.close()
    })

    /** Listeners on the hub's bus, over all topics. */
    const listeners = () => {
      const bus = hub.ctx.bus as unknown as { listenerCount?: () => number; local?: unknown }
      return typeof bus.listenerCount === 'function'
        ? bus.listenerCount()
        : (bus.local as { listenerCount(): number }).listenerCount()
    }

    test("a suspension ends the principal's sessions and their watches", async () => {
      const owner = await signedAgent(hub)
      const peer = await signedAgent(hub)
      const items = await itemsOf(owner, peer)
      const before = listeners()
      const { client } = await streamable(owner)
      await client.subscribeResource({ uri: items.a })
      // One listener for the subscription, one for the principal's admission.
      assert.equal(listeners(), before + 2)
      const suspended = await call(
        hub,
        'POST',
        `/admin/v1/principals/${encodeURIComponent(owner.principal)}/suspend`,
        { token: ADMIN },
      )
      assert.equal(suspended.status, 200)
      assert.equal(listeners(), before)
    })

    test('an unsigned Streamable HTTP client gets no session, and the guides without subscriptions', async () => {
      const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`))
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(transport)
      clients.push(client)
      assert.equal(transport.sessionId, undefined)
      assert.equal(client.getServerCapabilities()?.resources?.subscribe, false)
      const { resources } = await client.listResources()
      assert.ok(resources.every((r) => r.uri.startsWith('baton://guides/')))
    })

    test('a principal holds a few sessions at most: a new one closes its oldest', async () => {
      const owner = await signedAgent(hub)
      const opened: string[] = []
      for (let i = 0; i <= SESSION_LIMITS.maxPerPrincipal; i++) {
        const { transport } = await streamable(owner)
        opened.push(transport.sessionId!)
      }
      assert.equal((await postIn(owner, opened[0])).status, 404)
      for (const id of opened.slice(1)) assert.equal((await postIn(owner, id)).status, 200)
    })

    for (const face of ['in the hub (event bus)', 'over signed HTTP (long polls)'] as const) {
      test(`a change over HTTP notifies the subscribed URI only, ${face}`, async () => {
        const owner = await signedAgent(hub)
        const peer = await signedAgent(hub)
        const items = await itemsOf(owner, peer)
        const manual = manualDelay()
        const client =
          face === 'in the hub (event bus)'
            ? await connect(local(owner), SIGNED, busWatch(hub.ctx.bus, owner.principal))
            : await connect(
                remote(owner),
                SIGNED,
                pollWatch(remote(owner), { delay: manual.delay }),
              )
        assert.equal(client.getServerCapabilities()?.resources?.subscribe, true)
        const notes = updates(client)

        await client.subscribeResource({ uri: items.a })
        await client.subscribeResource({ uri: items.transfer })
        await client.subscribeResource({ uri: 'baton://inbox' })

        // b is not subscribed: its change is never announced; a's is.
        await update(owner, items.bId, 1)
        const aChanged = notes.next(items.a)
        await update(owner, items.aId, 1)
        manual.tick()
        await aChanged
        assert.deepEqual(notes.seen, [items.a])

        const transferChanged = notes.next(items.transfer)
        const ended = await call(hub, 'POST', `/admin/v1/transfers/${items.transferId}/terminate`, {
          token: ADMIN,
          body: {},
        })
        assert.equal(ended.status, 200)
        await transferChanged

        const inboxChanged = notes.next('baton://inbox')
        const sent = await peer.request('POST', '/v1/messages', {
          recipient: owner.principal,
          body: { hello: 2 },
          idempotencyKey: 'second',
        })
        assert.equal(sent.status, 201)
        await inboxChanged
        assert.deepEqual(notes.seen.sort(), [items.a, items.transfer, 'baton://inbox'].sort())

        // After unsubscribing, a's changes are silent; the inbox still speaks.
        await client.unsubscribeResource({ uri: items.a })
        await update(owner, items.aId, 2)
        manual.tick()
        const again = notes.next('baton://inbox')
        await peer.request('POST', '/v1/messages', {
          recipient: owner.principal,
          body: { hello: 3 },
          idempotencyKey: 'third',
        })
        await again
        manual.tick()
        assert.equal(notes.seen.filter((u) => u === items.a).length, 1)
        // Its long polls end with it, before the next test counts listeners.
        await client.close()
      })
    }

    test('closing a session releases its bus listeners', async () => {
      const owner = await signedAgent(hub)
      const peer = await signedAgent(hub)
      const items = await itemsOf(owner, peer)
      const count = listeners
      const before = count()
      const client = await connect(local(owner), SIGNED, busWatch(hub.ctx.bus, owner.principal))
      await client.subscribeResource({ uri: items.a })
      await client.subscribeResource({ uri: 'baton://inbox' })
      assert.equal(count(), before + 2)
      await client.unsubscribeResource({ uri: items.a })
      assert.equal(count(), before + 1)
      await client.close()
      assert.equal(count(), before)
    })
  })
}
