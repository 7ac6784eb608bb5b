import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const clientDir = path.join(repoRoot, 'tools/openapi-client')
const bin = (dir: string, name: string) => path.join(dir, 'node_modules/.bin', name)
const run = (command: string, args: string[], env: Record<string, string> = {}) =>
  spawnSync(command, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
    // The linter must not phone home or look for updates: the document is checked offline.
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      ...env,
    },
  })

// The hub under test runs in this process, so a client that calls it must not block the loop.
const execAsync = promisify(execFile)

for (const store of testStores) {
  describe(`the OpenAPI document tools accept (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    let docFile: string
    before(async () => {
      hub = await startTestHub(store)
      dir = mkdtempSync(path.join(tmpdir(), 'baton-openapi-'))
      docFile = path.join(dir, 'openapi.json')
      const res = await fetch(`${hub.url}/openapi.json`)
      assert.equal(res.status, 200)
      writeFileSync(docFile, await res.text())
    })
    after(async () => {
      await hub.close()
      rmSync(dir, { recursive: true, force: true })
    })

    test('redocly lint finds no errors', () => {
      const lint = run(bin(repoRoot, 'redocly'), ['lint', docFile, '--format=json'])
      const report = JSON.parse(lint.stdout) as {
        totals: { errors: number; warnings: number }
        problems: { severity: string; ruleId: string; message: string }[]
      }
      const errors = report.problems.filter((p) => p.severity === 'error')
      assert.deepEqual(
        errors.map((p) => `${p.ruleId}: ${p.message}`),
        [],
        'the served document lints clean',
      )
      assert.equal(report.totals.errors, 0)
    })

    test('a client generated from it compiles and completes a token handoff', async () => {
      mkdirSync(path.join(clientDir, 'generated'), { recursive: true })
      const generate = run(bin(clientDir, 'openapi-typescript'), [
        docFile,
        '-o',
        path.join(clientDir, 'generated/schema.d.ts'),
      ])
      assert.equal(generate.status, 0, generate.stderr)
      const compile = run(bin(repoRoot, 'tsc'), ['-p', path.join(clientDir, 'tsconfig.json')])
      assert.equal(compile.status, 0, compile.stdout + compile.stderr)
      const handoff = await execAsync(
        process.execPath,
        ['--import', 'tsx', path.join(clientDir, 'handoff.ts')],
        { cwd: repoRoot, env: { ...process.env, BATON_HUB_URL: hub.url }, timeout: 60_000 },
      )
      const result = JSON.parse(handoff.stdout.trim()) as Record<string, unknown>
      assert.deepEqual(result, {
        created: 201,
        moved: { status: 200, state: 'accepted', version: 2 },
        conflict: { status: 409, code: 'state_conflict' },
        read: { state: 'accepted', history: 1 },
      })
    })
  })
}
