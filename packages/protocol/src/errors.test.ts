import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { BatonError, ERRORS, isErrorCode } from './errors.js'

const doc = readFileSync(path.resolve(import.meta.dirname, '../../../docs/errors.md'), 'utf8')

test('docs/errors.md lists exactly the registered codes, each with its status', () => {
  const documented = new Map<string, number>()
  for (const m of doc.matchAll(/^- `([a-z][a-z0-9_]*)` \((\d{3})\): \S/gm)) {
    assert.ok(!documented.has(m[1]!), `${m[1]} is documented twice`)
    documented.set(m[1]!, Number(m[2]))
  }
  assert.deepEqual([...documented.keys()].sort(), Object.keys(ERRORS).sort())
  for (const [code, status] of documented) {
    assert.equal(status, ERRORS[code as keyof typeof ERRORS].status, code)
  }
})

test('every code has a 4xx or 5xx status and a fix', () => {
  for (const [code, { status, fix }] of Object.entries(ERRORS)) {
    assert.match(code, /^[a-z][a-z0-9_]*$/)
    assert.ok(status >= 400 && status < 600, code)
    assert.ok(fix.length > 10, code)
  }
})

test('the wire body round-trips through BatonError', () => {
  const e = new BatonError('state_conflict', 'Handoff is in state working, not offered', {
    state: 'working',
    version: 2,
    ended: false,
  })
  const body = e.toBody()
  assert.equal(body.code, 'state_conflict')
  assert.equal(body.fix, ERRORS.state_conflict.fix)
  const back = BatonError.fromBody(JSON.parse(JSON.stringify(body)))
  assert.equal(back.code, 'state_conflict')
  assert.equal(back.status, 409)
  assert.deepEqual(back.context, { state: 'working', version: 2, ended: false })
  assert.equal(BatonError.fromBody({ code: 'no_such_code' }).code, 'internal')
  assert.equal(isErrorCode('toString'), false)
})

test('a 429 or 503 carries Retry-After and retry_after together, however it was made', () => {
  const fromHeader = new BatonError('rate_limited', 'slow down', {}, { 'retry-after': '7' })
  assert.equal(fromHeader.toBody().retry_after, 7)
  const fromContext = new BatonError('unavailable', 'away', { retry_after: 2 })
  assert.equal(fromContext.headers['retry-after'], '2')
  const plain = new BatonError('invalid_request', 'bad', { retry_after: 3 })
  assert.equal(plain.headers['retry-after'], undefined, 'only refusals worth retrying get it')
})
