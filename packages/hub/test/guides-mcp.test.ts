import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { repoRoot, startTestHub, type TestHub, testStores } from './support.js'

/** MCP resources: "Resource not found". */
const NOT_FOUND = -32002

for (const store of testStores) {
  describe(`guides as MCP resources for anonymous sessions (${store.name})`, () => {
    let hub: TestHub
    let client: Client
    before(async () => {
      hub = await startTestHub(store)
      client = new Client({ name: 'guides-test', version: '1.0.0' })
      // No signature: the official client over plain Streamable HTTP.
      await client.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
    })
    after(async () => {
      await client.close()
      await hub.close()
    })

    test('resources/list names every guide; the anonymous session sees nothing else', async () => {
      const { resources } = await client.listResources()
      const uris = resources.map((r) => r.uri)
      assert.ok(uris.includes('baton://guides/readme'))
      assert.ok(uris.includes('baton://guides/compute'))
      assert.ok(uris.includes('baton://guides/connect'))
      assert.ok(uris.includes('baton://guides/walkthrough'))
      assert.ok(uris.every((u) => u.startsWith('baton://guides/')))
      for (const r of resources) assert.equal(r.mimeType, 'text/markdown')
      const { resourceTemplates } = await client.listResourceTemplates()
      assert.deepEqual(
        resourceTemplates.map((t) => t.uriTemplate),
        ['baton://guides/{name}'],
      )
    })

    test('resources/read answers a guide’s Markdown, as the file holds it', async () => {
      const uri = 'baton://guides/compute'
      const { contents } = await client.readResource({ uri })
      assert.equal(contents.length, 1)
      assert.equal(contents[0]!.uri, uri)
      assert.equal(contents[0]!.mimeType, 'text/markdown')
      const text = (contents[0] as { text: string }).text
      assert.equal(text, readFileSync(path.join(repoRoot, 'docs/compute.md'), 'utf8'))
    })

    test('the seed’s walkthrough and connection guide read as Markdown resources', async () => {
      for (const name of ['walkthrough', 'connect']) {
        const uri = `baton://guides/${name}`
        const { contents } = await client.readResource({ uri })
        assert.equal(contents[0]!.mimeType, 'text/markdown')
        const text = (contents[0] as { text: string }).text
        assert.equal(text, readFileSync(path.join(repoRoot, `docs/${name}.md`), 'utf8'))
        assert.match(text, /baton request "\$HUB" agent\.identity\.json/)
      }
      const { contents } = await client.readResource({ uri: 'baton://guides/walkthrough' })
      assert.match((contents[0] as { text: string }).text, /handoff-owner-checkpoint\.json/)
    })

    test('an unknown guide, a path and a signed-only resource are not found', async () => {
      for (const uri of [
        'baton://guides/nope',
        'baton://guides/..%2FREADME',
        'baton://inbox',
        'baton://resources/rs_missing',
      ]) {
        await assert.rejects(
          client.readResource({ uri }),
          (e: unknown) => e instanceof McpError && e.code === NOT_FOUND,
        )
      }
    })
  })
}
