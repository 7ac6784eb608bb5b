// Tracing costs nothing when it is off: a hub without an OTLP endpoint, answering a request of
// each face, loads no OpenTelemetry module at all. The same hub with an endpoint loads them,
// which shows the recording sees them when they are there.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { repoRoot, TEST_ADDRESS_LIMITS } from './support.js'

const child = path.join(repoRoot, 'packages/hub/test/fixtures/hub-at-work.ts')

/** Runs a hub at work in its own process; answers its statuses and the OpenTelemetry loads. */
function atWork(env: Record<string, string>): Promise<{ statuses: number[]; loads: string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-tracing-off-'))
  const loads = path.join(dir, 'loads.txt')
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', child],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          ...TEST_ADDRESS_LIMITS,
          DATABASE_URL: '',
          BATON_HOST: '127.0.0.1',
          BATON_PORT: '0',
          BATON_DATA_DIR: dir,
          BATON_ADMISSION: 'open',
          BATON_OTLP_ENDPOINT: '',
          OTEL_EXPORTER_OTLP_ENDPOINT: '',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
          TRACE: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          RECORD_LOADS: loads,
          ...env,
        },
        timeout: 120_000,
      },
      (error, stdout, stderr) => {
        try {
          if (error) return reject(new Error(`${error.message}\n${stderr}`))
          const statuses = JSON.parse(stdout.trim().split('\n').at(-1)!) as number[]
          const text = existsSync(loads) ? readFileSync(loads, 'utf8') : ''
          resolve({ statuses, loads: text.split('\n').filter(Boolean) })
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      },
    )
  })
}

describe('what tracing costs when it is off', () => {
  const receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
  })
  before(() => new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r)))
  after(() => new Promise<void>((r) => receiver.close(() => r())))

  test('a hub without an OTLP endpoint loads no OpenTelemetry module, whatever it answers', async () => {
    const off = await atWork({})
    assert.deepEqual(off.statuses, [200, 201, 200, 200, 200, 201])
    assert.deepEqual(off.loads, [])
  })

  test('with an endpoint it loads them: the recording sees them', async () => {
    const { port } = receiver.address() as AddressInfo
    const on = await atWork({ BATON_OTLP_ENDPOINT: `http://127.0.0.1:${port}` })
    assert.deepEqual(on.statuses, [200, 201, 200, 200, 200, 201])
    assert.ok(
      on.loads.some((url) => url.includes('/@opentelemetry/sdk-trace-node/')),
      on.loads.join('\n'),
    )
  })
})
