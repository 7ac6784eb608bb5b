import { BatonError, type DiscoveryDocument } from '@baton/protocol'

const cache = new Map<string, Promise<DiscoveryDocument>>()

/**
 * Reads a hub's discovery document (seed 000: `/.well-known/agent-net`), once per process per URL.
 *
 * @example const doc = await fetchDiscovery('https://hub.example/.well-known/agent-net')
 */
export function fetchDiscovery(
  url: string,
  opts: { fresh?: boolean } = {},
): Promise<DiscoveryDocument> {
  const known = cache.get(url)
  if (known && !opts.fresh) return known
  const pending = (async () => {
    const res = await fetch(url, { headers: { accept: 'application/json' } })
    const text = await res.text()
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    if (!res.ok) throw BatonError.fromBody(body, res.status)
    const doc = body as DiscoveryDocument | undefined
    if (!doc || typeof doc.apiBase !== 'string' || doc.signatures?.algorithm !== 'ed25519') {
      throw new BatonError('internal', `${url} is not a Baton discovery document`)
    }
    return doc
  })()
  cache.set(url, pending)
  pending.catch(() => cache.delete(url))
  return pending
}

/** The absolute URL of a request path on the hub a discovery document describes, encoding kept as given. */
export function resolveApiUrl(doc: DiscoveryDocument, path: string): string {
  if (!path.startsWith('/'))
    throw new TypeError(`A request path starts with /, got ${JSON.stringify(path)}`)
  return new URL(doc.apiBase.replace(/\/+$/, '') + path).href
}
