import {
  contracts,
  type HomeFileDeleteView,
  type HomeFileListView,
  type HomeFileView,
  type HomeFileWriteView,
  type WriteHomeFileInput,
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
    return this.client.call(contracts.writeHomeFile, { body: input })
  }

  /** Reads a file of the caller's own home. */
  read(path: string): Promise<HomeFileView> {
    return this.client.call(contracts.readHomeFile, { query: { path } })
  }

  /** Lists files (paths, revisions and sizes, no content), ordered by path. */
  list(query: HomeListQuery = {}): Promise<HomeFileListView> {
    return this.client.call(contracts.listHomeFiles, { query })
  }

  /** Deletes a file, only at `expectedRevision`. */
  remove(path: string, expectedRevision: number): Promise<HomeFileDeleteView> {
    return this.client.call(contracts.deleteHomeFile, { query: { path, expectedRevision } })
  }
}
