import { once } from 'node:events'
import { closeSync, fdatasync, fstatSync, openSync } from 'node:fs'
import { Worker } from 'node:worker_threads'

const CHECKPOINTER = import.meta.url.endsWith('.ts')
  ? new URL('./sqlite-checkpointer-entry.mjs', import.meta.url)
  : new URL('./sqlite-checkpointer.js', import.meta.url)

/** Options of `WalSync`; tests shorten the checkpoint interval or replace the sync. */
export interface WalSyncOptions {
  /** Commits between two checkpoint requests (default 256). */
  checkpointEvery?: number
  /** Makes the WAL file's written bytes durable; default fdatasync on the thread pool. */
  sync?: (fd: number, done: (error: Error | null) => void) => void
}

interface Waiter {
  commit: number
  resolve: () => void
  reject: (error: Error) => void
}

/**
 * Durability of the SQLite write connection's commits, off the event loop. The connection runs
 * with synchronous=NORMAL: a commit writes its WAL frames and returns without an fsync, and
 * SQLite itself syncs the WAL before a checkpoint, the database after one and the WAL header when
 * the file is reused, so the file is always consistent. What NORMAL alone could lose to a power
 * cut or an OS crash is the last commits; here no caller is answered before they are durable:
 * every commit waits for an fdatasync of the WAL file that began after it, one at a time on the
 * thread pool, shared by every commit made meanwhile (group commit). A read that saw a commit
 * waits the same way before it answers (`whenDurable`), so nothing not yet durable is ever shown.
 *
 * Checkpoints run on a thread of their own (the write connection's automatic checkpoint is off,
 * as it would copy pages and fsync on the event loop): a PASSIVE one every `checkpointEvery`
 * commits, at most one at a time.
 *
 * An fsync that fails leaves the file's state unknown (the kernel may have dropped the pages):
 * the commits it covered and every later one are refused with that error, never answered as
 * durable, until the hub restarts and SQLite recovers from what is on disk.
 */
export class WalSync {
  private fd: number | undefined
  /** Commits written to the WAL so far, and how many of them are known durable. */
  private committed = 0
  private durable = 0
  private running = false
  private readonly waiters: Waiter[] = []
  private head = 0
  private failed: Error | undefined
  private sinceCheckpoint = 0
  private checkpointer: Worker | undefined
  private checkpointing = false
  private closed = false
  private readonly every: number
  private readonly syncFile: NonNullable<WalSyncOptions['sync']>
  /** fdatasyncs run so far (for tests and benchmarks). */
  syncs = 0
  /** Checkpoints the checkpoint thread has run so far. */
  checkpoints = 0

  constructor(
    private readonly file: string,
    private readonly pragmas: readonly string[],
    opts: WalSyncOptions = {},
  ) {
    this.every = opts.checkpointEvery ?? 256
    this.syncFile = opts.sync ?? fdatasync
  }

  /** Notes a commit the connection has just made; resolves once it is durable. */
  commit(): Promise<void> {
    this.committed++
    if (++this.sinceCheckpoint >= this.every) this.checkpoint()
    return this.until(this.committed)
  }

  /**
   * Undefined when every commit made so far is durable; else a promise that resolves once they
   * are. A read calls it right after it ran, so it waits for exactly what it could have seen.
   */
  whenDurable(): Promise<void> | undefined {
    if (this.failed) return Promise.reject(this.failed)
    return this.durable >= this.committed ? undefined : this.until(this.committed)
  }

  private until(commit: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed)
    return new Promise((resolve, reject) => {
      this.waiters.push({ commit, resolve, reject })
      this.kick()
    })
  }

  private kick(): void {
    if (this.running || this.failed || this.durable >= this.committed) return
    this.running = true
    const target = this.committed
    let fd: number
    try {
      fd = this.walFd()
    } catch (error) {
      this.fail(error as Error)
      return
    }
    this.syncs++
    this.syncFile(fd, (error) => {
      this.running = false
      if (error) {
        this.fail(error)
        return
      }
      this.durable = target
      while (this.head < this.waiters.length && this.waiters[this.head]!.commit <= target) {
        const waiter = this.waiters[this.head]!
        this.waiters[this.head++] = undefined as unknown as Waiter
        waiter.resolve()
      }
      if (this.head === this.waiters.length) {
        this.waiters.length = 0
        this.head = 0
      } else if (this.head > 1024) {
        this.waiters.splice(0, this.head)
        this.head = 0
      }
      this.kick()
    })
  }

  /**
   * The WAL file, opened once. SQLite keeps the file (and its inode) while any connection is
   * open, and the write connection is open for as long as this is used.
   */
  private walFd(): number {
    if (this.fd === undefined) {
      this.fd = openSync(`${this.file}-wal`, 'r')
    } else if (fstatSync(this.fd).nlink === 0) {
      throw new Error('the SQLite WAL file was removed while the hub had it open')
    }
    return this.fd
  }

  private fail(error: Error): void {
    this.failed = error
    for (let i = this.head; i < this.waiters.length; i++) this.waiters[i]!.reject(error)
    this.waiters.length = 0
    this.head = 0
  }

  /** Asks the checkpoint thread for a PASSIVE checkpoint, unless one is under way. */
  private checkpoint(): void {
    if (this.checkpointing || this.closed) return
    this.sinceCheckpoint = 0
    this.checkpointing = true
    if (!this.checkpointer) {
      const worker = new Worker(CHECKPOINTER, {
        workerData: { file: this.file, pragmas: this.pragmas },
        execArgv: [],
      })
      worker.on('message', () => {
        if (this.checkpointer !== worker) return
        this.checkpoints++
        this.checkpointing = false
        worker.unref()
      })
      // A checkpoint that cannot run leaves the WAL longer, never a commit less durable: the
      // next request starts a new thread.
      const lost = () => {
        if (this.checkpointer === worker) this.checkpointer = undefined
        this.checkpointing = false
      }
      worker.on('error', lost)
      worker.on('exit', lost)
      this.checkpointer = worker
    }
    this.checkpointer.ref()
    this.checkpointer.postMessage('checkpoint')
  }

  /**
   * Waits for the syncs under way, stops the checkpoint thread (it closes its connection) and
   * closes the WAL file; call before closing the write connection.
   */
  async close(): Promise<void> {
    this.closed = true
    await this.whenDurable()?.catch(() => undefined)
    const worker = this.checkpointer
    this.checkpointer = undefined
    if (worker) {
      const exited = once(worker, 'exit')
      worker.ref()
      worker.postMessage('close')
      await exited
    }
    if (this.fd !== undefined) {
      closeSync(this.fd)
      this.fd = undefined
    }
  }
}
