import type { DiscoveryDocument } from '@baton/protocol'
import { BatonError } from '@baton/protocol/primitives'
import { exchange, type FetchLike } from './transport.js'

/** A discovery document kept by a {@link DiscoveryCache}, with what HTTP caching says of it. */
export interface CachedDiscovery {
  document: DiscoveryDocument
  /** The hub's `ETag` for it, sent back as `If-None-Match` once it is stale. */
  etag?: string | undefined
  /** Until when (epoch ms) it may be used without asking the hub, from its `Cache-Control`. */
  freshUntil: number
}

/**
 * Where discovery documents are kept between processes (the `baton` CLI keeps them on disk, one
 * per hub): `fetchDiscovery` reads an entry before asking the hub, and writes what it learns.
 */
export interface DiscoveryCache {
  get(url: string): Promise<CachedDiscovery | undefined>
  set(url: string, entry: CachedDiscovery): Promise<void>
}

/** Options of {@link fetchDiscovery}. */
export interface DiscoveryOptions {
  /**
   * Asks the hub whatever is cached (conditionally, when an ETag is known), for the live parts
   * of the document such as `runtimeAvailability`.
   */
  fresh?: boolean
  /** Keeps documents between processes, as the hub's `Cache-Control` and `ETag` allow. */
  cache?: DiscoveryCache | undefined
  /** Sends through this `fetch` instead of the SDK's keep-alive connections. */
  fetch?: FetchLike | undefined
  /** The clock of freshness, for tests (default `Date.now`). */
  now?: () => number
}

const known = new Map<string, Promise<CachedDiscovery>>()

/** How long an answer stays fresh (RFC 9111 §4.2.1), or undefined when it may not be stored. */
function freshForMs(headers: Headers): number | undefined {
  const directives = (headers.get('cache-control') ?? '').toLowerCase()
  if (/(?:^|,)\s*no-store\s*(?:,|$)/.test(directives)) return undefined
  if (/(?:^|,)\s*no-cache\s*(?:,|$)/.test(directives)) return 0
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?\s*(?:,|$)/.exec(directives)?.[1]
  if (maxAge === undefined) return 0
  const age = Number(headers.get('age') ?? 0)
  return Math.max(0, Number(maxAge) - (Number.isFinite(age) ? age : 0)) * 1000
}

function isDiscovery(body: unknown): body is DiscoveryDocument {
  const doc = body as DiscoveryDocument | undefined
  return !!doc && typeof doc.apiBase === 'string' && doc.signatures?.algorithm === 'ed25519'
}

function assertDiscovery(url: string, body: unknown): DiscoveryDocument {
  if (!isDiscovery(body)) {
    throw new BatonError('internal', `${url} is not a Baton discovery document`)
  }
  return body
}

async function revalidate(
  url: string,
  held: CachedDiscovery | undefined,
  opts: DiscoveryOptions,
): Promise<CachedDiscovery> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (held?.etag) headers['if-none-match'] = held.etag
  const answer = await exchange({ url, method: 'GET', headers }, opts.fetch)
  const now = (opts.now ?? Date.now)()
  const freshMs = freshForMs(answer.headers)
  if (answer.status === 304 && held) {
    const entry = {
      document: held.document,
      etag: answer.headers.get('etag') ?? held.etag,
      freshUntil: now + (freshMs ?? 0),
    }
    await opts.cache?.set(url, entry)
    return entry
  }
  let body: unknown
  try {
    body = JSON.parse(answer.text)
  } catch {
    body = undefined
  }
  if (answer.status < 200 || answer.status >= 300) throw BatonError.fromBody(body, answer.status)
  const entry = {
    document: assertDiscovery(url, body),
    etag: answer.headers.get('etag') ?? undefined,
    freshUntil: now + (freshMs ?? 0),
  }
  if (freshMs !== undefined) await opts.cache?.set(url, entry)
  return entry
}

/**
 * Reads a hub's discovery document (seed 000: `/.well-known/agent-net`), once per process per
 * URL; with a `cache`, a document the hub's `Cache-Control` still calls fresh is not asked for
 * again, and a stale one is revalidated with its `ETag`. `fresh` always asks the hub.
 *
 * @example const doc = await fetchDiscovery('https://hub.example/.well-known/agent-net')
 */
export function fetchDiscovery(
  url: string,
  opts: DiscoveryOptions = {},
): Promise<DiscoveryDocument> {
  const held = known.get(url)
  if (held && !opts.fresh) return held.then((entry) => entry.document)
  const pending = (async () => {
    let kept = held ? await held.catch(() => undefined) : undefined
    if (!kept && opts.cache) {
      // An entry that cannot be read, or holds no discovery document, is as good as none.
      kept = await opts.cache.get(url).catch(() => undefined)
      if (kept && !isDiscovery(kept.document)) kept = undefined
      const now = (opts.now ?? Date.now)()
      if (kept && !opts.fresh && now < kept.freshUntil) return kept
    }
    return revalidate(url, kept, opts)
  })()
  known.set(url, pending)
  pending.catch(() => {
    if (known.get(url) === pending) known.delete(url)
  })
  return pending.then((entry) => entry.document)
}

/** The absolute URL of a request path on the hub a discovery document describes, encoding kept as given. */
export function resolveApiUrl(doc: DiscoveryDocument, path: string): string {
  if (!path.startsWith('/'))
    throw new TypeError(`A request path starts with /, got ${JSON.stringify(path)}`)
  return new URL(doc.apiBase.replace(/\/+$/, '') + path).href
}
