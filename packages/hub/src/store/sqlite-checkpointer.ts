// The body of the SQLite checkpoint thread (see `WalSync`): its own connection to the file runs a
// PASSIVE checkpoint on each request, so the page copies and their fsyncs never run on the event
// loop. PASSIVE never waits for the writer or a reader: frames it cannot copy yet wait for the
// next request.
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'

const port = parentPort
if (port) {
  const data = workerData as { file: string; pragmas: string[] }
  const db = new SQLite(data.file)
  for (const pragma of data.pragmas) db.pragma(pragma)
  port.on('message', (m: 'checkpoint' | 'close') => {
    if (m === 'close') {
      db.close()
      port.close()
      return
    }
    let result: unknown
    try {
      result = db.pragma('wal_checkpoint(PASSIVE)')
    } catch (error) {
      result = { error: String(error) }
    }
    port.postMessage(result)
  })
}
