import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { GUIDES } from '../src/guides/guides.js'
import { renderMarkdown } from '../src/guides/pages.js'
import { call, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

test('guide Markdown is rendered with every character of its text escaped', () => {
  const html = renderMarkdown(
    '# <script>alert(1)</script>\n\nA `<b>` and <img src=x onerror=alert(1)> "q"\n\n```\n</pre><script>x</script>\n```\n- <i>item</i>',
  )
  assert.equal(/<(script|img|b|i)[\s>]/i.test(html), false)
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/)
  assert.match(html, /<code>&lt;b&gt;<\/code>/)
})

test('the guides include the README and the compute and signed-request docs', () => {
  const names = GUIDES.map((g) => g.name)
  for (const n of ['readme', 'compute', 'signed-requests', 'transfers'])
    assert.ok(names.includes(n))
})

for (const store of testStores) {
  describe(`public guides (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_COMPUTE_EMBEDDED: 'true' })
    })
    after(() => hub.close())

    test('anonymous HTTP lists, reads and searches the guides', async () => {
      const list = await call(hub, 'GET', '/guides')
      assert.equal(list.status, 200)
      const names = (list.body.guides as { name: string }[]).map((g) => g.name)
      assert.deepEqual(
        names,
        GUIDES.map((g) => g.name),
      )
      const read = await call(hub, 'GET', '/guides/compute')
      assert.equal(read.status, 200)
      assert.match(read.body.markdown as string, /json-expr-v1/)
      const found = await call(hub, 'GET', '/guides/search?q=json-expr-v1')
      assert.ok((found.body.results as { name: string }[]).some((r) => r.name === 'compute'))
      const missing = await call(hub, 'GET', '/guides/..%2FREADME')
      assert.equal(missing.status, 404)
      assert.equal(missing.body.code, 'not_found')
    })

    test('browsers get HTML pages under a strict CSP', async () => {
      const index = await fetch(`${hub.url}/docs`)
      assert.equal(index.status, 200)
      assert.match(index.headers.get('content-type') ?? '', /^text\/html/)
      assert.match(index.headers.get('content-security-policy') ?? '', /default-src 'none'/)
      assert.match(await index.text(), /href="\/docs\/compute"/)
      const one = await fetch(`${hub.url}/docs/signed-requests`)
      assert.equal(one.status, 200)
      assert.doesNotMatch(await one.text(), /<script/i)
      const none = await fetch(`${hub.url}/docs/nope`)
      assert.equal(none.status, 404)
    })

    test('an anonymous MCP session reads and searches guides, and is offered no write', async () => {
      const client = new Client({ name: 'baton-test', version: '1.0.0' })
      await client.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`)))
      try {
        const names = new Set((await client.listTools()).tools.map((t) => t.name))
        for (const n of ['list_guides', 'read_guide', 'search_guides']) assert.ok(names.has(n), n)
        assert.equal(names.has('submit_compute_job'), false)
        const read = toolAnswer(
          await client.callTool({ name: 'read_guide', arguments: { name: 'readme' } }),
        )
        assert.equal(read.isError, false)
        assert.equal(read.body.name, 'readme')
        const found = toolAnswer(
          await client.callTool({ name: 'search_guides', arguments: { q: 'runtimeAvailability' } }),
        )
        assert.equal(found.isError, false)
      } finally {
        await client.close()
      }
    })
  })
}
