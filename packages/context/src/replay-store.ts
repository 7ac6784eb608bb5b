import { type FileHandle, open, readFile, rename } from 'node:fs/promises'
import { ContextError } from './errors.js'

/** What a receiver remembers about one (iss, hop): the handoff digest, until when, and hop state. */
export interface HopRecord {
  /** The sender of the offer. */
  readonly iss: string
  /** The hop identifier. */
  readonly hop: string
  /** The handoff digest of the offer first seen for (iss, hop). */
  readonly digest: string
  /** Epoch milliseconds until which the record must be kept (at least exp plus skew). */
  readonly expiresAt: number
  /** JSON state the hop state machine keeps with the record. */
  readonly data?: Readonly<Record<string, unknown>>
}

/**
 * The replay and hop store: remembers each (iss, hop) that passed the first three checks, with its
 * digest, at least until exp plus skew. Implementations make `remember` atomic per (iss, hop).
 */
// seed 003: a receiver must remember each (iss, hop) pair that passed the first three checks,
// with its handoff digest, at least until exp plus the skew
export interface ReplayStore {
  /**
   * Remembers a record if no live record for its (iss, hop) exists; answers the existing live
   * record otherwise (and then stores nothing).
   */
  remember(record: HopRecord, nowMs: number): Promise<HopRecord | undefined>
  /** The live record for (iss, hop), if any. */
  get(iss: string, hop: string, nowMs: number): Promise<HopRecord | undefined>
  /** Inserts or replaces a record (hop-state updates). */
  put(record: HopRecord): Promise<void>
  /** Every live record (for cancellation walks and inspection). */
  list(nowMs: number): Promise<HopRecord[]>
  /** Forgets records whose expiresAt has passed; answers how many. */
  sweep(nowMs: number): Promise<number>
  /** Releases resources. */
  close(): Promise<void>
}

function keyOf(iss: string, hop: string): string {
  return `${iss}\n${hop}`
}

/** An in-memory ReplayStore: fast, lost on restart. */
export class MemoryReplayStore implements ReplayStore {
  private readonly records = new Map<string, HopRecord>()

  /** Remembers a record unless a live one exists for its (iss, hop). */
  async remember(record: HopRecord, nowMs: number): Promise<HopRecord | undefined> {
    return this.rememberSync(record, nowMs)
  }

  /** The synchronous form of remember, for callers that need no I/O. */
  rememberSync(record: HopRecord, nowMs: number): HopRecord | undefined {
    const k = keyOf(record.iss, record.hop)
    const old = this.records.get(k)
    if (old !== undefined && old.expiresAt > nowMs) return old
    this.records.set(k, record)
    return undefined
  }

  /** The live record for (iss, hop). */
  async get(iss: string, hop: string, nowMs: number): Promise<HopRecord | undefined> {
    const r = this.records.get(keyOf(iss, hop))
    return r !== undefined && r.expiresAt > nowMs ? r : undefined
  }

  /** Inserts or replaces a record. */
  async put(record: HopRecord): Promise<void> {
    this.records.set(keyOf(record.iss, record.hop), record)
  }

  /** Every live record. */
  async list(nowMs: number): Promise<HopRecord[]> {
    return [...this.records.values()].filter((r) => r.expiresAt > nowMs)
  }

  /** Forgets expired records. */
  async sweep(nowMs: number): Promise<number> {
    let n = 0
    for (const [k, r] of this.records) {
      if (r.expiresAt <= nowMs) {
        this.records.delete(k)
        n++
      }
    }
    return n
  }

  /** Nothing to release. */
  async close(): Promise<void> {}
}

/**
 * A ReplayStore in an append-only JSON-lines file, fsynced before each answer, so it survives a
 * restart; compacted on sweep. One process owns a file at a time.
 * @example const store = await FileReplayStore.open('./data/hops.jsonl')
 */
// seed 003: should keep answered hops in storage that survives a restart
export class FileReplayStore implements ReplayStore {
  private readonly memory = new MemoryReplayStore()
  private queue: Promise<void> = Promise.resolve()
  private closed = false

  private constructor(
    private readonly path: string,
    private handle: FileHandle,
  ) {}

  /** Opens (or creates) the store at a path and loads what it holds. */
  static async open(path: string): Promise<FileReplayStore> {
    let text = ''
    try {
      text = await readFile(path, 'utf8')
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    }
    const handle = await open(path, 'a')
    if (text.length > 0 && !text.endsWith('\n')) {
      // end a line cut short by a crash, so the next record starts on a line of its own
      await handle.write('\n')
      await handle.datasync()
    }
    const store = new FileReplayStore(path, handle)
    for (const line of text.split('\n')) {
      if (line.length === 0) continue
      let entry: unknown
      try {
        entry = JSON.parse(line)
      } catch {
        // a line cut short by a crash mid-write was never acknowledged; it is skipped
        continue
      }
      if (isRecord(entry)) await store.memory.put(entry)
    }
    return store
  }

  /** Remembers a record unless a live one exists; durable before it answers. */
  async remember(record: HopRecord, nowMs: number): Promise<HopRecord | undefined> {
    this.assertOpen()
    const old = this.memory.rememberSync(record, nowMs)
    if (old !== undefined) return old
    await this.append(record)
    return undefined
  }

  /** The live record for (iss, hop). */
  async get(iss: string, hop: string, nowMs: number): Promise<HopRecord | undefined> {
    return this.memory.get(iss, hop, nowMs)
  }

  /** Inserts or replaces a record; durable before it answers. */
  async put(record: HopRecord): Promise<void> {
    this.assertOpen()
    await this.memory.put(record)
    await this.append(record)
  }

  /** Every live record. */
  async list(nowMs: number): Promise<HopRecord[]> {
    return this.memory.list(nowMs)
  }

  /** Forgets expired records and rewrites the file with the live ones. */
  async sweep(nowMs: number): Promise<number> {
    this.assertOpen()
    const n = await this.memory.sweep(nowMs)
    const live = await this.memory.list(Number.NEGATIVE_INFINITY)
    const job = this.queue.then(async () => {
      const tmp = `${this.path}.tmp`
      const out = await open(tmp, 'w')
      try {
        await out.writeFile(live.map((r) => `${JSON.stringify(r)}\n`).join(''))
        await out.sync()
      } finally {
        await out.close()
      }
      await this.handle.close()
      await rename(tmp, this.path)
      this.handle = await open(this.path, 'a')
    })
    this.queue = job.catch(() => {})
    await job
    return n
  }

  /** Waits for pending writes and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.queue
    await this.handle.close()
  }

  private append(record: HopRecord): Promise<void> {
    const line = `${JSON.stringify(record)}\n`
    const job = this.queue.then(async () => {
      await this.handle.write(line)
      await this.handle.datasync()
    })
    this.queue = job.catch(() => {})
    return job
  }

  private assertOpen(): void {
    if (this.closed) throw new ContextError('invalid-input', 'store is closed')
  }
}

function isRecord(v: unknown): v is HopRecord {
  if (typeof v !== 'object' || v === null) return false
  const r = v as Record<string, unknown>
  return (
    typeof r.iss === 'string' &&
    typeof r.hop === 'string' &&
    typeof r.digest === 'string' &&
    typeof r.expiresAt === 'number'
  )
}
