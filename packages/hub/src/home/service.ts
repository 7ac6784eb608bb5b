import {
  BatonError,
  defaultHomePageSize,
  type HomeFileDeleteView,
  type HomeFileListView,
  type HomeFileView,
  type HomeFileWriteView,
  type ListHomeFilesQuery,
  type WriteHomeFileInput,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import { changeStoredBytes } from '../store/quota.js'
import type { HomeFileRow } from '../store/schema.js'
import type { Carrying, Tx, WriteBatcher } from '../store/transaction.js'
import { traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'

/** What the home service needs from the rest of the hub. */
export interface HomeDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  config: Config['home']
  /** Bytes a principal may store, over its home files and its resources (one quota). */
  storedBytesQuota: number
}

/** The event topic of a principal's home; an event is a hint to re-read. */
export const homeTopic = (principal: string) => `home:${principal}`

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Private home files (seed 000 checkpoints): each path belongs to the signing principal only.
 * Writes are compare-and-set on a revision that starts at 1; revision 0 means create-only.
 */
export class HomeService {
  constructor(private readonly deps: HomeDeps) {}

  /**
   * Writes a file. seed 000: expectedRevision 0 is create-only; otherwise the write commits only
   * at that revision. A repeat of a committed write (the file holds exactly this content at
   * expectedRevision + 1) answers success again, so a write is safe to retry after a lost answer.
   */
  async write(
    principal: string,
    body: WriteHomeFileInput,
    { carry, trace }: Carrying = {},
  ): Promise<HomeFileWriteView> {
    const { path } = body
    const size = Buffer.byteLength(body.content, 'utf8')
    const limit = this.deps.config.maxFileBytes
    if (size > limit) {
      throw new BatonError(
        'home_file_too_large',
        `The content is ${size} bytes; at most ${limit} are accepted`,
        { limit, size },
      )
    }
    const expected = body.expectedRevision
    return this.deps.batcher.carrying(carry).run(
      async (tx) => {
        const now = this.deps.clock.now()
        const current = await store.findFile(tx.db, principal, path)
        if (current && current.revision === expected + 1 && current.content === body.content) {
          return toWriteView(current)
        }
        const currentRevision = current?.revision ?? 0
        if (currentRevision !== expected) throw conflict(path, currentRevision, expected)
        await changeStoredBytes(tx.db, {
          principal,
          delta: size - (current?.size ?? 0),
          limit: this.deps.storedBytesQuota,
        })
        const row: HomeFileRow = {
          principal,
          path,
          revision: expected + 1,
          content: body.content,
          size,
          created_at: current?.created_at ?? now,
          updated_at: now,
          ...traceColumns(trace),
        }
        if (!current) {
          await store.insertFile(tx.db, row)
        } else if (
          !(await store.casUpdate(tx.db, {
            principal,
            path,
            expectRevision: expected,
            content: body.content,
            size,
            at: now,
            trace: traceColumns(trace),
          }))
        ) {
          // Another instance committed in between; answer from what it committed.
          const now2 = await store.findFile(tx.db, principal, path)
          throw conflict(path, now2?.revision ?? 0, expected)
        }
        this.published(tx, principal, path, row.revision, now)
        return toWriteView(row)
      },
      // Two creates raced (another instance): the loser rolled back; the re-run sees the winner.
      { rerunOnUniqueViolation: true },
    )
  }

  /** Reads a file of the caller's own home. */
  async read(principal: string, path: string): Promise<HomeFileView> {
    const row = await store.findFile(this.deps.database.db, principal, path)
    if (!row) throw notFound(path)
    return { ...toWriteView(row), content: row.content, ...traceFields(row) }
  }

  /** Lists the caller's files (no content) by path, optionally under a prefix. */
  async list(principal: string, q: ListHomeFilesQuery): Promise<HomeFileListView> {
    const { prefix = '', after } = q
    const limit = q.limit ?? defaultHomePageSize(this.deps.config)
    const rows = await store.listFiles(this.deps.database.db, { principal, prefix, after, limit })
    return {
      files: rows.map((r) => ({
        path: r.path,
        revision: r.revision,
        size: r.size,
        updatedAt: iso(r.updated_at),
      })),
      nextAfter: rows.length === limit ? rows.at(-1)!.path : null,
    }
  }

  /**
   * Deletes a file only at `expectedRevision`. A repeat after a lost answer finds no file and
   * answers `home_file_not_found`: the file is gone either way.
   */
  async remove(
    principal: string,
    path: string,
    expected: number,
    { carry }: Carrying = {},
  ): Promise<HomeFileDeleteView> {
    return this.deps.batcher.carrying(carry).run(async (tx) => {
      const current = await store.findFile(tx.db, principal, path)
      if (!current) throw notFound(path)
      if (
        current.revision !== expected ||
        !(await store.casDelete(tx.db, principal, path, expected))
      ) {
        const now2 = await store.findFile(tx.db, principal, path)
        if (!now2) throw notFound(path)
        throw conflict(path, now2.revision, expected)
      }
      await changeStoredBytes(tx.db, { principal, delta: -current.size })
      this.published(tx, principal, path, 0, this.deps.clock.now())
      return { path, revision: expected, deleted: true }
    })
  }

  private published(tx: Tx, principal: string, path: string, revision: number, at: number): void {
    tx.afterCommit(() =>
      this.deps.bus.publish({
        topic: homeTopic(principal),
        type: revision === 0 ? 'home.deleted' : 'home.written',
        at,
        data: { path, revision },
      }),
    )
  }
}

function conflict(path: string, currentRevision: number, expectedRevision: number): BatonError {
  return new BatonError(
    'revision_conflict',
    currentRevision === 0
      ? `No file at ${path}, so revision ${expectedRevision} cannot be replaced`
      : `${path} is at revision ${currentRevision}, not ${expectedRevision}`,
    { path, currentRevision, expectedRevision },
  )
}

function notFound(path: string): BatonError {
  return new BatonError('home_file_not_found', `No file at ${path} in your home`, { path })
}

function toWriteView(row: HomeFileRow): HomeFileWriteView {
  return {
    path: row.path,
    revision: row.revision,
    size: row.size,
    updatedAt: iso(row.updated_at),
  }
}
