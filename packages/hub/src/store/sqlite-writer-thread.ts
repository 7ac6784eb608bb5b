import { Worker } from 'node:worker_threads'
import type { QueryResult } from 'kysely'
import type { ScriptResult, ScriptStatement, WriteConnection } from './sqlite-driver.js'
import type { WriterAnswer, WriterData, WriterRequest } from './sqlite-writer.js'

const ENTRY = import.meta.url.endsWith('.ts')
  ? new URL('./sqlite-writer-entry.mjs', import.meta.url)
  : new URL('./sqlite-writer.js', import.meta.url)

/** An error from the writer thread, with the SQLite code `caps.isRetryable` and friends read. */
class SqliteThreadError extends Error {
  constructor(
    readonly code: string | undefined,
    message: string,
    name: string,
  ) {
    super(message)
    this.name = name
  }
}

/**
 * The SQLite write connection on a worker thread, so statement execution and the commit's fsync
 * overlap the main thread's HTTP parsing and signature checks. Statements run in the order they
 * are sent (one message port, one connection), so a transaction opened by one kysely connection
 * stays that connection's until the driver hands the writer on. A transaction the thread never
 * commits is never durable: a crash anywhere leaves SQLite's last commit.
 */
export class SqliteWriterThread implements WriteConnection {
  private readonly worker: Worker
  private readonly pending = new Map<
    number,
    { resolve: (r: WriterAnswer & { ok: true }) => void; reject: (e: unknown) => void }
  >()
  private next = 1
  /** Messages posted to the thread so far: each one wakes it. */
  messagesSent = 0
  private failed: Error | undefined
  /** Whether the connection was inside a transaction after the last statement it answered. */
  private open = false

  constructor(data: WriterData) {
    this.worker = new Worker(ENTRY, { workerData: data, execArgv: [] })
    // Only answers still owed keep the process alive.
    this.worker.unref()
    this.worker.on('message', (a: WriterAnswer) => {
      if (a.open !== undefined) this.open = a.open
      const waiter = this.pending.get(a.id)
      if (!waiter) return
      this.pending.delete(a.id)
      if (this.pending.size === 0) this.worker.unref()
      if (a.ok) {
        waiter.resolve(a)
      } else {
        waiter.reject(new SqliteThreadError(a.error.code, a.error.message, a.error.name))
      }
    })
    const fail = (error: Error) => {
      this.failed = error
      for (const waiter of this.pending.values()) waiter.reject(error)
      this.pending.clear()
    }
    this.worker.on('error', fail)
    this.worker.on('exit', (code) => fail(new Error(`the SQLite writer thread exited (${code})`)))
  }

  private send(request: WriterRequest & { id: number }): Promise<WriterAnswer & { ok: true }> {
    if (this.failed) return Promise.reject(this.failed)
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref()
      this.pending.set(request.id, { resolve, reject })
      this.messagesSent++
      this.worker.postMessage(request)
    })
  }

  async execute(sql: string, params: readonly unknown[]): Promise<QueryResult<unknown>> {
    const a = await this.send({ op: 'exec', id: this.next++, sql, params: params as unknown[] })
    return a.rows
      ? { rows: a.rows }
      : {
          numAffectedRows: BigInt(a.changes ?? 0),
          insertId: BigInt(a.lastInsertRowid ?? 0),
          rows: [],
        }
  }

  async script(statements: readonly ScriptStatement[]): Promise<ScriptResult[]> {
    const a = await this.send({ op: 'script', id: this.next++, statements: [...statements] })
    return a.results ?? []
  }

  /** CPU time the writer thread has run, in microseconds, where the system tells it. */
  async cpuMicros(): Promise<number | undefined> {
    return (await this.send({ op: 'cpu', id: this.next++ })).cpuMicros
  }

  endTurn(): void {
    // The turn's holder has had every statement answered, so the last answer tells whether it
    // left a transaction open; a turn that left none costs no message.
    if (this.failed || (!this.open && this.pending.size === 0)) return
    this.open = false
    this.messagesSent++
    this.worker.postMessage({ op: 'end' } satisfies WriterRequest)
  }

  async close(): Promise<void> {
    if (!this.failed) await this.send({ op: 'close', id: this.next++ })
    await this.worker.terminate()
  }
}
