import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type SignedClient, signedFetch } from '@baton/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// The contract is the rule: what the published schema of an identity, home, resource, grant or
// guide operation accepts, the hub accepts; what it refuses is a 400 with a stable code and the
// field; a limit the operator sets is the one HTTP enforces and OpenAPI and MCP publish.

const ADMIN_TOKEN = 'op-secret-0123456789abcdefghijklmnopqrstuv'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const OPEN = { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: ADMIN_TOKEN }

type Answer = { status: number; body: Record<string, unknown> & { code?: string } }

async function signed(a: SignedClient, method: string, path: string, body?: unknown) {
  const res = await a.request<Answer['body']>(
    method,
    path,
    body === undefined ? undefined : (body as never),
  )
  return { status: res.status, body: res.body }
}

function refused(res: Answer, code: string, field: string): void {
  assert.equal(res.status, 400, JSON.stringify(res.body))
  assert.equal(res.body.code, code)
  assert.equal(res.body.field, field)
}

/** Every `pattern` in a JSON Schema, at any depth. */
function patterns(schema: unknown, out: string[] = []): string[] {
  if (schema && typeof schema === 'object') {
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'pattern' && typeof v === 'string') out.push(v)
      else patterns(v, out)
    }
  }
  return out
}

async function limitPatterns(hub: { url: string }): Promise<RegExp[]> {
  const doc = (await call(hub, 'GET', '/openapi.json')).body as {
    paths: Record<string, { get: { parameters: { name: string; schema: unknown }[] } }>
  }
  const limit = doc.paths['/v1/home/files']!.get.parameters.find((p) => p.name === 'limit')
  assert.ok(limit)
  return patterns(limit.schema).map((p) => new RegExp(p))
}

for (const store of testStores) {
  describe(`contracts of identity, home, resources, grants and guides (${store.name})`, () => {
    let hub: TestHub
    let a: SignedClient
    before(async () => {
      hub = await startTestHub(store, OPEN)
      a = await signedAgent(hub)
    })
    after(() => hub.close())

    test('listPrincipals: state an enum, limit 1 to 500, cursor one the list answered, no other key', async () => {
      const q = (s: string) => call(hub, 'GET', `/admin/v1/principals?${s}`, { headers: admin })
      assert.equal((await q('state=approved&limit=500')).status, 200)
      const one = await q('limit=1')
      assert.equal(one.status, 200)
      refused(await q('limit=501'), 'invalid_request', 'limit')
      refused(await q('limit=0'), 'invalid_request', 'limit')
      refused(await q('limit=01'), 'invalid_request', 'limit')
      refused(await q('state=sleeping'), 'invalid_request', 'state')
      refused(await q('cursor=v1.AAAA'), 'cursor_invalid', 'cursor')
      refused(await q('cursor=page2'), 'cursor_invalid', 'cursor')
      refused(await q('color=blue'), 'unknown_field', 'color')
    })

    test('decidePrincipal: the decision is approve, reject or suspend', async () => {
      const decide = (d: string) =>
        call(hub, 'POST', `/admin/v1/principals/${encodeURIComponent(a.principal)}/${d}`, {
          headers: admin,
        })
      const done = await decide('approve')
      assert.equal(done.status, 200)
      assert.equal(done.body.state, 'approved')
      refused(await decide('approved'), 'invalid_request', 'decision')
      refused(await decide('delete'), 'invalid_request', 'decision')
    })

    test('home files: the path rule (invalid_path), whole-number revisions and page limits', async () => {
      const written = await signed(a, 'PUT', '/v1/home/file', {
        path: 'c/a.json',
        expectedRevision: 0,
        content: '{}',
      })
      assert.equal(written.status, 200)
      refused(await signed(a, 'GET', '/v1/home/file'), 'invalid_path', 'path')
      refused(await signed(a, 'GET', '/v1/home/file?path=c%2F..%2Fa'), 'invalid_path', 'path')
      refused(await signed(a, 'GET', '/v1/home/file?path=c/a.json&x=1'), 'unknown_field', 'x')
      assert.equal((await signed(a, 'GET', '/v1/home/files?prefix=c/&limit=1000')).status, 200)
      assert.equal((await signed(a, 'GET', '/v1/home/files?prefix=&after=c/a')).status, 200)
      refused(await signed(a, 'GET', '/v1/home/files?prefix=c//'), 'invalid_path', 'prefix')
      refused(await signed(a, 'GET', '/v1/home/files?after=/c'), 'invalid_path', 'after')
      refused(await signed(a, 'GET', '/v1/home/files?limit=1001'), 'invalid_request', 'limit')
      refused(await signed(a, 'GET', '/v1/home/files?limit=ten'), 'invalid_request', 'limit')
      const del = (s: string) => signed(a, 'DELETE', `/v1/home/file?path=c/a.json${s}`)
      refused(await del(''), 'invalid_request', 'expectedRevision')
      refused(await del('&expectedRevision=0'), 'invalid_request', 'expectedRevision')
      refused(await del('&expectedRevision=1.0'), 'invalid_request', 'expectedRevision')
      assert.equal((await del('&expectedRevision=2')).body.code, 'revision_conflict')
      assert.equal((await del('&expectedRevision=1')).status, 200)
    })

    test('resources: a listing limit is a whole number 1 to 999 (above the page size: a page)', async () => {
      const created = await signed(a, 'POST', '/v1/resources', {
        namespace: 'n',
        kind: 'k',
        data: 1,
      })
      assert.equal(created.status, 201)
      const page = await signed(a, 'GET', '/v1/resources?limit=999')
      assert.equal(page.status, 200)
      assert.equal((page.body.resources as unknown[]).length, 1)
      refused(await signed(a, 'GET', '/v1/resources?limit=0'), 'invalid_request', 'limit')
      refused(await signed(a, 'GET', '/v1/resources?limit=1000'), 'invalid_request', 'limit')
      refused(await signed(a, 'GET', '/v1/resources?owner=me'), 'unknown_field', 'owner')
    })

    test('grants: each action at most once, as the schema publishes (uniqueItems)', async () => {
      const res = await signed(a, 'POST', '/v1/resources', { namespace: 'g', kind: 'k', data: 1 })
      const peer = await signedAgent(hub)
      const base = {
        resourceId: res.body.id,
        subject: peer.principal,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      }
      const twice = await signed(a, 'POST', '/v1/capabilities', {
        ...base,
        actions: ['resource:read', 'resource:read'],
      })
      refused(twice, 'invalid_request', 'actions')
      const doc = (await call(hub, 'GET', '/openapi.json')).body as {
        paths: Record<string, unknown>
      }
      assert.match(JSON.stringify(doc.paths['/v1/capabilities']), /"uniqueItems":true/)
      const granted = await signed(a, 'POST', '/v1/capabilities', {
        ...base,
        actions: ['resource:update', 'resource:read'],
      })
      assert.equal(granted.status, 201)
      assert.deepEqual(granted.body.actions, ['resource:read', 'resource:update'])
    })

    test('guides: a search needs a word; no other key', async () => {
      assert.equal((await call(hub, 'GET', '/guides/search?q=hub')).status, 200)
      refused(await call(hub, 'GET', '/guides/search?q=%20%20'), 'invalid_request', 'q')
      refused(await call(hub, 'GET', '/guides/search?q=hub&page=2'), 'unknown_field', 'page')
    })

    test("the operator's home page size is what HTTP enforces and OpenAPI and MCP publish", async () => {
      const small = await startTestHub(store, {
        ...OPEN,
        BATON_HOME_MAX_PAGE_SIZE: '3',
        BATON_HOME_MAX_FILE_BYTES: '64',
      })
      const clients: Client[] = []
      try {
        const b = await signedAgent(small)
        for (const p of ['x/1', 'x/2', 'x/3', 'x/4']) {
          const w = await signed(b, 'PUT', '/v1/home/file', {
            path: p,
            expectedRevision: 0,
            content: p,
          })
          assert.equal(w.status, 200)
        }
        const page = await signed(b, 'GET', '/v1/home/files?limit=3')
        assert.equal(page.status, 200)
        assert.equal((page.body.files as unknown[]).length, 3)
        refused(await signed(b, 'GET', '/v1/home/files?limit=4'), 'invalid_request', 'limit')
        // With no limit, a page is the default within the hub's most.
        assert.equal(((await signed(b, 'GET', '/v1/home/files')).body.files as unknown[]).length, 3)
        // The default hub takes 4 and publishes so.
        assert.equal((await signed(a, 'GET', '/v1/home/files?limit=4')).status, 200)
        assert.ok((await limitPatterns(hub)).every((p) => p.test('4') && p.test('1000')))
        const published = await limitPatterns(small)
        assert.ok(published.length > 0)
        assert.ok(published.every((p) => p.test('3') && !p.test('4')))

        const transport = new StreamableHTTPClientTransport(new URL(`${small.url}/mcp`), {
          fetch: signedFetch(b.identity),
        })
        const client = new Client({ name: 'baton-test', version: '1.0.0' })
        await client.connect(transport)
        clients.push(client)
        const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]))
        const list = tools.get('list_home_files')?.inputSchema.properties as
          | Record<string, { anyOf?: { type?: string; maximum?: number }[] }>
          | undefined
        // A tool's limit is the route's: a JSON integer up to the hub's page size, or its text.
        const integer = list?.limit?.anyOf?.find((b) => b.type === 'integer')
        assert.equal(integer?.maximum, 3)
        assert.match(tools.get('write_home_file')?.description ?? '', /\b64\b/)
        const over = await client.callTool({ name: 'list_home_files', arguments: { limit: 4 } })
        assert.equal(over.isError, true)
        const within = await client.callTool({ name: 'list_home_files', arguments: { limit: 3 } })
        assert.equal(within.isError, undefined)
        assert.equal(
          ((within.structuredContent as { files: unknown[] }).files as unknown[]).length,
          3,
        )
      } finally {
        for (const c of clients) await c.close()
        await small.close()
      }
    })
  })
}
