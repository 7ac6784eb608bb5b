import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { contracts, DISCOVERY_PATH } from '@baton/protocol'
import { call, startTestHub, type TestHub, testStores } from './support.js'

for (const store of testStores) {
  describe(`discovery may be kept briefly and revalidated (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store)
    })
    after(() => hub.close())

    test('it is answered with a short private max-age and the ETag of its bytes', async () => {
      const first = await call(hub, 'GET', DISCOVERY_PATH)
      assert.equal(first.status, 200)
      const maxAge = contracts.discovery.cache?.maxAgeSeconds
      assert.ok(maxAge !== undefined && maxAge > 0 && maxAge <= 10, `max-age ${maxAge}`)
      assert.equal(first.headers.get('cache-control'), `private, max-age=${maxAge}`)
      const etag = first.headers.get('etag')
      assert.match(etag ?? '', /^"[A-Za-z0-9_-]{22}"$/)
      assert.equal(first.body.apiBase, hub.url)
      const again = await call(hub, 'GET', DISCOVERY_PATH)
      assert.equal(again.headers.get('etag'), etag, 'the same document, the same tag')
    })

    test('a request naming its ETag is answered 304 with no body; any other tag, the document', async () => {
      const etag = (await call(hub, 'GET', DISCOVERY_PATH)).headers.get('etag')!
      for (const given of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await fetch(hub.url + DISCOVERY_PATH, { headers: { 'if-none-match': given } })
        assert.equal(res.status, 304, given)
        assert.equal(await res.text(), '')
        assert.equal(res.headers.get('etag'), etag)
        assert.match(res.headers.get('cache-control') ?? '', /^private, max-age=\d+$/)
      }
      const changed = await call(hub, 'GET', DISCOVERY_PATH, {
        headers: { 'if-none-match': '"not-this-one"' },
      })
      assert.equal(changed.status, 200)
      assert.equal(changed.body.apiBase, hub.url)
    })

    test('the tag is of the bytes sent, so a changed document has another tag', async () => {
      const res = await fetch(hub.url + DISCOVERY_PATH)
      const bytes = Buffer.from(await res.arrayBuffer())
      const digest = createHash('sha256').update(bytes).digest('base64url').slice(0, 22)
      assert.equal(res.headers.get('etag'), `"${digest}"`)
    })

    test('operations without a cache declaration send no validators', async () => {
      const res = await call(hub, 'GET', '/healthz')
      assert.equal(res.headers.get('etag'), null)
      assert.equal(res.headers.get('cache-control'), null)
    })

    test('the OpenAPI document says so: the headers, and a 304 answer', async () => {
      const doc = (await call(hub, 'GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, { responses: Record<string, { headers?: object }> }>>
      }
      const responses = doc.paths[DISCOVERY_PATH]!.get!.responses
      assert.ok(responses['304'], 'a 304 answer')
      assert.deepEqual(Object.keys(responses['200']!.headers ?? {}).sort(), [
        'Cache-Control',
        'ETag',
      ])
    })
  })
}
