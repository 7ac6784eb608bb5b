import type {
  HomeFileDeleteView,
  HomeFileListView,
  HomeFileView,
  HomeFileWriteView,
  WriteHomeFileInput,
} from '@baton/protocol'
import type { SignedClient } from './signed-client.js'

/** Query of a home listing. */
export interface HomeListQuery {
  /** Only paths that start with this text. */
  prefix?: string
  /** An exclusive path cursor: the `nextAfter` of the previous page. */
  after?: string
  /** At most this many files (default 100, at most 1000). */
  limit?: number
}

/**
 * Typed calls for seed 000's private home files (checkpoints) over a signed client. Every path
 * addresses the signer's own home.
 *
 * @example
 * const home = new HomeClient(client)
 * await home.write({ path: 'handoff/run-1/owner.json', expectedRevision: 0, content: '{}' })
 */
export class HomeClient {
  constructor(private readonly client: SignedClient) {}

  /** Writes a file: revision 0 creates only; otherwise commits only at `expectedRevision`. */
  write(input: WriteHomeFileInput): Promise<HomeFileWriteView> {
    return this.client.call<HomeFileWriteView>('PUT', '/v1/home/file', input)
  }

  /** Reads a file of the caller's own home. */
  read(path: string): Promise<HomeFileView> {
    return this.client.call<HomeFileView>('GET', `/v1/home/file?path=${encodeURIComponent(path)}`)
  }

  /** Lists files (paths, revisions and sizes, no content), ordered by path. */
  list(query: HomeListQuery = {}): Promise<HomeFileListView> {
    const params = new URLSearchParams()
    if (query.prefix !== undefined) params.set('prefix', query.prefix)
    if (query.after !== undefined) params.set('after', query.after)
    if (query.limit !== undefined) params.set('limit', String(query.limit))
    const text = params.toString()
    return this.client.call<HomeFileListView>('GET', `/v1/home/files${text ? `?${text}` : ''}`)
  }

  /** Deletes a file, only at `expectedRevision`. */
  remove(path: string, expectedRevision: number): Promise<HomeFileDeleteView> {
    const q = `path=${encodeURIComponent(path)}&expectedRevision=${expectedRevision}`
    return this.client.call<HomeFileDeleteView>('DELETE', `/v1/home/file?${q}`)
  }
}
