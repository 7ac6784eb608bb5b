import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatTraceparent, parseTraceparent, parseTracestate } from './trace-context.js'

const T = '4bf92f3577b34da6a3ce929d0e0e4736'
const P = '00f067aa0ba902b7'

test('traceparent: version 00 as W3C Trace Context §3.2 defines it, and nothing else', () => {
  const valid = [`00-${T}-${P}-01`, `00-${T}-${P}-00`, `00-${T}-${P}-ff`, `cc-${T}-${P}-01-later`]
  for (const header of valid) {
    const parsed = parseTraceparent(header)
    assert.equal(parsed?.traceId, T, header)
    assert.equal(parsed?.spanId, P, header)
  }
  assert.equal(formatTraceparent(parseTraceparent(`00-${T}-${P}-01`)!), `00-${T}-${P}-01`)
  assert.equal(formatTraceparent(parseTraceparent(`cc-${T}-${P}-09-x`)!), `00-${T}-${P}-09`)
  const invalid = [
    undefined,
    42,
    '',
    `00-${T}-${P}-01-`,
    `00-${T}-${P}-1`,
    `00-${T.toUpperCase()}-${P}-01`,
    `00-${'0'.repeat(32)}-${P}-01`,
    `00-${T}-${'0'.repeat(16)}-01`,
    `ff-${T}-${P}-01`,
    `0g-${T}-${P}-01`,
    `00_${T}-${P}-01`,
    `00-${T.slice(1)}-${P}0-01`,
    `00-${T}-${P}-0x`,
    `cc-${T}-${P}-01x`,
    `00-${T}-${P}-01, 00-${T}-${P}-01`,
    ` 00-${T}-${P}-01`,
  ]
  for (const header of invalid) assert.equal(parseTraceparent(header), undefined, String(header))
})

test('tracestate: kept when valid, dropped (not the traceparent) when not', () => {
  assert.equal(
    parseTracestate('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'),
    'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
  )
  assert.equal(parseTracestate('tenant@vendor=x'), 'tenant@vendor=x')
  for (const bad of ['', 'Upper=1', 'k=', 'k=a,b', '=v', 'k=v=w', 'k=v\u0001', 'x'.repeat(513)]) {
    assert.equal(parseTracestate(bad), undefined, bad)
  }
  const many = Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')
  assert.equal(parseTracestate(many), undefined)
  const kept = parseTraceparent(`00-${T}-${P}-01`, 'BAD STATE')
  assert.equal(kept?.traceId, T)
  assert.equal(kept?.state, undefined)
})
