import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'
import { ENV_DOC, loadConfig } from './config.js'

test('defaults: loopback on 8080, SQLite under ./data, the seed 002 limits', () => {
  const c = loadConfig({})
  assert.equal(c.host, '127.0.0.1')
  assert.equal(c.port, 8080)
  assert.equal(c.dataDir, path.resolve('data'))
  assert.equal(c.databaseUrl, undefined)
  assert.equal(c.trustProxy, false)
  assert.deepEqual(
    {
      ttl: c.handoff.ttlMs,
      payload: c.handoff.maxPayloadBytes,
      note: c.handoff.maxNoteChars,
      states: c.handoff.maxStates,
      wait: c.handoff.maxWaitSeconds,
      quota: c.handoff.dailyCreatesPerIp,
    },
    { ttl: 86_400_000, payload: 16384, note: 500, states: 12, wait: 25, quota: 100 },
  )
})

test('the environment sets values and flags override it', () => {
  const c = loadConfig(
    {
      BATON_PORT: '9000',
      BATON_HOST: '0.0.0.0',
      BATON_HANDOFF_DAILY_QUOTA: '7',
      BATON_HANDOFF_TTL_SECONDS: '60',
      BATON_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
      DATABASE_URL: 'postgres://u:p@db:5432/baton',
    },
    { port: '9100', 'data-dir': '/tmp/x' },
  )
  assert.equal(c.port, 9100)
  assert.equal(c.host, '0.0.0.0')
  assert.equal(c.dataDir, '/tmp/x')
  assert.equal(c.handoff.dailyCreatesPerIp, 7)
  assert.equal(c.handoff.ttlMs, 60_000)
  assert.deepEqual(c.trustProxy, ['10.0.0.0/8', '127.0.0.1'])
  assert.equal(c.databaseUrl, 'postgres://u:p@db:5432/baton')
  assert.equal(loadConfig({ BATON_TRUST_PROXY: '2' }).trustProxy, 2)
  assert.equal(loadConfig({ BATON_TRUST_PROXY: 'true' }).trustProxy, true)
})

test('bad values are refused with the variable named', () => {
  for (const [name, value] of [
    ['BATON_PORT', 'eighty'],
    ['BATON_PORT', '-1'],
    ['BATON_HANDOFF_MAX_STATES', '1'],
    ['BATON_NOTIFY_ALLOW_LOOPBACK', 'maybe'],
    ['BATON_HANDOFF_TTL_SECONDS', '0'],
  ] as const) {
    assert.throws(() => loadConfig({ [name]: value }), new RegExp(name))
  }
})

test('every documented variable is read, and every read variable is documented', async () => {
  const { readFile } = await import('node:fs/promises')
  const source = await readFile(new URL('./config.ts', import.meta.url), 'utf8')
  const read = new Set(
    [...source.matchAll(/['.]((?:BATON|DATABASE|OTEL)_[A-Z0-9_]+)\b/g)].map((m) => m[1]!),
  )
  for (const name of Object.keys(ENV_DOC))
    assert.ok(read.has(name), `${name} is documented but not read`)
  for (const name of read) assert.ok(name in ENV_DOC, `${name} is read but not documented`)
})
