import assert from 'node:assert/strict'
import { test } from 'node:test'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { ManualClock } from '../clock.js'
import { type McpSession, SessionTable } from './sessions.js'

const LIMITS = { maxTotal: 3, maxPerPrincipal: 2, idleMs: 60_000 }

function session(id: string, principal: string, clock: ManualClock): McpSession {
  return {
    id,
    principal,
    server: new McpServer({ name: 'test', version: '0' }),
    transport: new StreamableHTTPServerTransport({ sessionIdGenerator: () => id }),
    lastSeenAt: clock.now(),
    streams: 0,
  }
}

test('a session is found only with the principal that opened it', () => {
  const clock = new ManualClock()
  const table = new SessionTable(clock, LIMITS)
  table.add(session('s1', 'did:key:a', clock))
  assert.equal(table.find('s1', 'did:key:a')?.id, 's1')
  assert.equal(table.find('s1', 'did:key:b'), undefined)
  assert.equal(table.find('s1', undefined), undefined)
  assert.equal(table.find('s2', 'did:key:a'), undefined)
})

test('idle sessions close; a request or an open event stream keeps one', () => {
  const clock = new ManualClock()
  const table = new SessionTable(clock, LIMITS)
  table.add(session('used', 'did:key:a', clock))
  table.add(session('idle', 'did:key:b', clock))
  const streaming = session('streaming', 'did:key:c', clock)
  streaming.streams = 1
  table.add(streaming)
  assert.equal(table.hasRoom(), false)
  clock.advance(LIMITS.idleMs - 1)
  assert.ok(table.find('used', 'did:key:a'))
  clock.advance(1)
  assert.equal(table.find('idle', 'did:key:b'), undefined)
  assert.equal(table.hasRoom(), true)
  assert.equal(table.size, 2)
  clock.advance(LIMITS.idleMs)
  assert.equal(table.hasRoom(), true)
  assert.equal(table.size, 1)
  assert.ok(table.find('streaming', 'did:key:c'))
})

test("past a principal's cap its least recently used session closes, no one else's", () => {
  const clock = new ManualClock()
  const table = new SessionTable(clock, LIMITS)
  table.add(session('a1', 'did:key:a', clock))
  clock.advance(1)
  table.add(session('a2', 'did:key:a', clock))
  table.add(session('b1', 'did:key:b', clock))
  clock.advance(1)
  table.find('a1', 'did:key:a')
  table.add(session('a3', 'did:key:a', clock))
  assert.equal(table.find('a2', 'did:key:a'), undefined)
  assert.ok(table.find('a1', 'did:key:a'))
  assert.ok(table.find('a3', 'did:key:a'))
  assert.ok(table.find('b1', 'did:key:b'))
  table.closeAll('did:key:a')
  assert.equal(table.size, 1)
  table.closeAll()
  assert.equal(table.size, 0)
})
