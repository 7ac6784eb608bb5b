import assert from 'node:assert/strict'
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { after, before, describe, mock, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { GUIDES, listGuides, readGuide, searchGuides } from '../src/guides/guides.js'
import { renderMarkdown, toGuideHref } from '../src/guides/pages.js'
import { call, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

test('guide Markdown is rendered with every character of its text escaped', () => {
  const html = renderMarkdown(
    '# <script>alert(1)</script>\n\nA `<b>` and <img src=x onerror=alert(1)> "q"\n\n```\n</pre><script>x</script>\n```\n- <i>item</i>',
  )
  assert.equal(/<(script|img|b|i)[\s>]/i.test(html), false)
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/)
  assert.match(html, /<code>&lt;b&gt;<\/code>/)
})

test('raw HTML and script links in a guide render inert; relative guide links become pages', () => {
  const html = renderMarkdown(
    [
      '<script>alert(1)</script>',
      '',
      '<a href="javascript:alert(1)">raw</a> <img src=x onerror=alert(1)>',
      '',
      '[js](javascript:alert(1)) [vb](VBScript:msgbox) [data](data:text/html;base64,PHNjcmlwdD4=)',
      '[cli](docs/cli.md) [errors](errors.md#codes) [top](README.md) [repo](packages/context/README.md)',
      '![pixel](https://example.com/p.png)',
    ].join('\n'),
  )
  assert.equal(/<(script|img|iframe)[\s>]/i.test(html), false)
  assert.equal(/href="(?!\/docs\/|https:)/i.test(html), false)
  assert.doesNotMatch(
    html,
    /javascript:alert\(1\)"|<a href="javascript|<a href="data|<a href="vbscript/i,
  )
  assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/)
  assert.match(html, /<a href="\/docs\/cli">cli<\/a>/)
  assert.match(html, /<a href="\/docs\/errors#codes">errors<\/a>/)
  assert.match(html, /<a href="\/docs\/readme">top<\/a>/)
  assert.match(html, /\brepo\b/)
  assert.equal(toGuideHref('packages/context/README.md'), undefined)
  assert.equal(toGuideHref('docs/walkthrough.md'), '/docs/walkthrough')
})

test('guide Markdown renders tables, links and code as elements', () => {
  const html = renderMarkdown('| a | b |\n| --- | --- |\n| `x` | [y](https://example.com) |\n')
  assert.match(html, /<table>[\s\S]*<th>a<\/th>[\s\S]*<td><code>x<\/code><\/td>/)
  assert.match(html, /<a href="https:\/\/example.com" rel="noreferrer">y<\/a>/)
  assert.doesNotMatch(html, /\|/)
})

test('listing, reading and searching guides reads no file: each was read once, when loaded', () => {
  const reads = [
    mock.method(fs, 'readFileSync'),
    mock.method(fs, 'readdirSync'),
    mock.method(fs, 'openSync'),
    mock.method(fs.promises, 'readFile'),
  ]
  syncBuiltinESMExports()
  try {
    for (let i = 0; i < 3; i++) {
      assert.ok(listGuides().guides.length > 5)
      assert.match(readGuide('walkthrough').markdown, /baton request/)
      assert.ok(searchGuides('signature created').results.length > 0)
    }
    assert.deepEqual(
      reads.map((r) => r.mock.callCount()),
      [0, 0, 0, 0],
    )
  } finally {
    for (const r of reads) r.mock.restore()
    syncBuiltinESMExports()
  }
})

test('the guides include the README and the compute and signed-request docs', () => {
  const names = GUIDES.map((g) => g.name)
  for (const n of ['readme', 'compute', 'signed-requests', 'transfers', 'connect', 'walkthrough'])
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

    test('anonymous browsers read the walkthrough and the connection guide rendered', async () => {
      for (const name of ['walkthrough', 'connect']) {
        const res = await fetch(`${hub.url}/docs/${name}`)
        assert.equal(res.status, 200)
        const html = await res.text()
        assert.match(html, /<h1 id="[^"]+">/)
        assert.match(html, /<pre><code class="language-sh">[^<]*baton request/)
        assert.match(html, /<a href="\/docs\/(connect|walkthrough)">/)
        assert.doesNotMatch(html, /^\|.*\|$/m, 'no table is left as pipes')
        assert.doesNotMatch(html, /\]\([^)]*\.md\)/, 'no link is left as Markdown')
        assert.doesNotMatch(html, /`/, 'no code span is left in backticks')
      }
      const connect = await (await fetch(`${hub.url}/docs/connect`)).text()
      assert.match(connect, /<table>[\s\S]*<td><code>admission.mode<\/code><\/td>/)
      const walkthrough = await (await fetch(`${hub.url}/docs/walkthrough`)).text()
      assert.match(walkthrough, /handoff-peer-complete.json/)
      const css = await fetch(`${hub.url}/docs/guides.css`)
      assert.equal(css.status, 200)
      assert.match(css.headers.get('content-type') ?? '', /^text\/css/)
      const csp = css.headers.get('content-security-policy') ?? ''
      assert.match(csp, /default-src 'none'/)
      assert.match(csp, /style-src 'self'/)
      assert.doesNotMatch(csp, /script-src|unsafe-inline/)
      assert.match(walkthrough, /<link rel="stylesheet" href="\/docs\/guides.css">/)
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
