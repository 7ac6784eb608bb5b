// The body of the SQLite writer thread: it owns the write connection and runs the statements the
// hub's driver sends, one message at a time, in order. See `SqliteWriterThread`.
import { readFileSync } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import { runScript, type ScriptResult, type ScriptStatement } from './sqlite-driver.js'

/** A statement to run, or the end of a connection's turn (roll back what it left open). */
export type WriterRequest =
  | { op: 'exec'; id: number; sql: string; params: unknown[] }
  | { op: 'end' }
  | { op: 'close'; id: number }
  | { op: 'cpu'; id: number }
  | { op: 'script'; id: number; statements: ScriptStatement[] }

/** What one statement answered, or its error with the SQLite code the capabilities read. */
export type WriterAnswer =
  | {
      id: number
      ok: true
      rows?: unknown[]
      changes?: number
      lastInsertRowid?: number
      cpuMicros?: number
      results?: ScriptResult[]
      /** Whether the connection is inside a transaction once the statement has run. */
      open?: boolean
    }
  | {
      id: number
      ok: false
      error: { name: string; message: string; code?: string }
      open?: boolean
    }

export interface WriterData {
  file: string
  pragmas: string[]
  cacheSize: number
}

/**
 * CPU time this thread has run, in microseconds, where the system tells a thread's own (Linux:
 * the first field of its schedstat, in nanoseconds); undefined elsewhere.
 */
function threadCpuMicros(): number | undefined {
  try {
    const ns = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0])
    return Number.isFinite(ns) ? ns / 1000 : undefined
  } catch {
    return undefined
  }
}

const port = parentPort
if (port) {
  const data = workerData as WriterData
  const db = new SQLite(data.file)
  for (const pragma of data.pragmas) db.pragma(pragma)
  const cache = new Map<string, SQLite.Statement>()
  const prepare = (source: string) => {
    let statement = cache.get(source)
    if (statement) {
      cache.delete(source)
    } else {
      statement = db.prepare(source)
      if (cache.size >= data.cacheSize) cache.delete(cache.keys().next().value!)
    }
    cache.set(source, statement)
    return statement
  }
  // A Buffer parameter arrives as a plain Uint8Array, which better-sqlite3 does not bind.
  const revive = (p: unknown) =>
    p instanceof Uint8Array && !Buffer.isBuffer(p)
      ? Buffer.from(p.buffer, p.byteOffset, p.byteLength)
      : p
  port.on('message', (m: WriterRequest) => {
    if (m.op === 'end') {
      if (db.inTransaction) db.exec('rollback')
      return
    }
    if (m.op === 'cpu') {
      const cpuMicros = threadCpuMicros()
      port.postMessage({
        id: m.id,
        ok: true,
        ...(cpuMicros === undefined ? {} : { cpuMicros }),
      } satisfies WriterAnswer)
      return
    }
    if (m.op === 'close') {
      db.close()
      port.postMessage({ id: m.id, ok: true } satisfies WriterAnswer)
      return
    }
    let answer: WriterAnswer
    try {
      if (m.op === 'script') {
        const statements = m.statements.map((s) => ({
          sql: s.sql,
          parameters: s.parameters.map(revive),
        }))
        answer = { id: m.id, ok: true, results: runScript(db, prepare, statements) }
        port.postMessage(answer)
        return
      }
      const statement = prepare(m.sql)
      const params = m.params.map(revive)
      if (statement.reader) {
        answer = { id: m.id, ok: true, rows: statement.all(params) }
      } else {
        const { changes, lastInsertRowid } = statement.run(params)
        answer = { id: m.id, ok: true, changes, lastInsertRowid: Number(lastInsertRowid) }
      }
    } catch (e) {
      const error = e as { name?: string; message?: string; code?: unknown }
      answer = {
        id: m.id,
        ok: false,
        error: {
          name: String(error.name ?? 'Error'),
          message: String(error.message ?? e),
          ...(typeof error.code === 'string' ? { code: error.code } : {}),
        },
      }
    }
    answer.open = db.inTransaction
    port.postMessage(answer)
  })
}
