import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { type CachedDiscovery, type DiscoveryCache, fetchDiscovery } from './discovery.js'

/** What the hub serves and how it says it may be cached; each GET is recorded. */
const hub = {
  version: 1,
  cacheControl: 'max-age=5' as string | undefined,
  gets: [] as { ifNoneMatch: string | undefined }[],
}
let origin = ''
const server = createServer((req, res) => {
  const etag = `"v${hub.version}"`
  hub.gets.push({ ifNoneMatch: req.headers['if-none-match'] })
  if (hub.cacheControl) res.setHeader('cache-control', hub.cacheControl)
  res.setHeader('etag', etag)
  if (req.headers['if-none-match'] === etag) {
    res.statusCode = 304
    res.end()
    return
  }
  res.setHeader('content-type', 'application/json')
  res.end(
    JSON.stringify({
      apiBase: origin,
      signatures: { algorithm: 'ed25519' },
      runtimeAvailability: { ready: true, version: hub.version },
    }),
  )
})

before(async () => {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => {
  server.closeAllConnections()
  server.close()
})

/** A cache in memory, standing for the CLI's files; a fresh URL per test stands for a new process. */
function memoryCache(): DiscoveryCache & { entries: Map<string, CachedDiscovery> } {
  const entries = new Map<string, CachedDiscovery>()
  return {
    entries,
    get: async (url) => entries.get(url),
    set: async (url, entry) => {
      entries.set(url, entry)
    },
  }
}

let processes = 0
/** The discovery URL as a new process would first ask for it. */
const newProcess = () => `${origin}/.well-known/agent-net?process=${++processes}`

const version = (doc: { runtimeAvailability?: unknown }) =>
  (doc.runtimeAvailability as { version: number }).version

test('a document the hub calls fresh is read from the cache; a stale one is revalidated', async () => {
  hub.version = 1
  hub.cacheControl = 'max-age=5'
  hub.gets = []
  const cache = memoryCache()
  let now = 1_000_000
  const clock = () => now
  const url = newProcess()
  await fetchDiscovery(url, { cache, now: clock })
  assert.deepEqual(hub.gets, [{ ifNoneMatch: undefined }])
  assert.equal(cache.entries.get(url)?.freshUntil, now + 5000)
  assert.equal(cache.entries.get(url)?.etag, '"v1"')

  // Another process within max-age: no request at all.
  const again = url.replace(/process=\d+/, `process=${++processes}`)
  cache.entries.set(again, cache.entries.get(url)!)
  now += 4999
  assert.equal(version(await fetchDiscovery(again, { cache, now: clock })), 1)
  assert.equal(hub.gets.length, 1)

  // Past max-age: asked with its ETag; unchanged, so 304 and the same document, fresh again.
  const later = url.replace(/process=\d+/, `process=${++processes}`)
  cache.entries.set(later, cache.entries.get(url)!)
  now += 2
  assert.equal(version(await fetchDiscovery(later, { cache, now: clock })), 1)
  assert.deepEqual(hub.gets.at(-1), { ifNoneMatch: '"v1"' })
  assert.equal(cache.entries.get(later)?.freshUntil, now + 5000)

  // Changed at the hub: a stale entry gets the new document.
  hub.version = 2
  const changed = url.replace(/process=\d+/, `process=${++processes}`)
  cache.entries.set(changed, { ...cache.entries.get(later)!, freshUntil: now - 1 })
  assert.equal(version(await fetchDiscovery(changed, { cache, now: clock })), 2)
  assert.equal(cache.entries.get(changed)?.etag, '"v2"')
})

test('fresh asks the hub whatever the cache holds, and within one process too', async () => {
  hub.version = 3
  hub.cacheControl = 'max-age=60'
  hub.gets = []
  const cache = memoryCache()
  const url = newProcess()
  assert.equal(version(await fetchDiscovery(url, { cache })), 3)
  assert.equal(version(await fetchDiscovery(url, { cache })), 3)
  assert.equal(hub.gets.length, 1, 'once per process')
  hub.version = 4
  assert.equal(version(await fetchDiscovery(url, { cache, fresh: true })), 4)
  assert.deepEqual(hub.gets.at(-1), { ifNoneMatch: '"v3"' })
  assert.equal(version(await fetchDiscovery(url, { cache })), 4)
  assert.equal(version(await fetchDiscovery(url, { fresh: true })), 4)
  assert.deepEqual(hub.gets.at(-1), { ifNoneMatch: '"v4"' })
})

test('no-store is never kept; no-cache and no max-age are kept but asked again each time', async () => {
  hub.version = 5
  hub.gets = []
  hub.cacheControl = 'no-store'
  const cache = memoryCache()
  const kept = newProcess()
  await fetchDiscovery(kept, { cache })
  assert.equal(cache.entries.size, 0)
  for (const cacheControl of ['no-cache', undefined]) {
    hub.cacheControl = cacheControl
    const url = newProcess()
    await fetchDiscovery(url, { cache })
    const entry = cache.entries.get(url)!
    const next = newProcess()
    cache.entries.set(next, entry)
    const before = hub.gets.length
    await fetchDiscovery(next, { cache, now: () => entry.freshUntil })
    assert.equal(hub.gets.length, before + 1, String(cacheControl))
    assert.deepEqual(hub.gets.at(-1), { ifNoneMatch: '"v5"' })
  }
})

test('a cached entry that is no discovery document is not used: the hub is asked', async () => {
  hub.version = 6
  hub.cacheControl = 'max-age=5'
  hub.gets = []
  const cache = memoryCache()
  const url = newProcess()
  cache.entries.set(url, {
    document: { apiBase: 1 } as never,
    etag: '"v6"',
    freshUntil: Number.MAX_SAFE_INTEGER,
  })
  assert.equal(version(await fetchDiscovery(url, { cache })), 6)
  assert.deepEqual(hub.gets, [{ ifNoneMatch: undefined }])
})
