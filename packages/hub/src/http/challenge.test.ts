import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BatonError, ERRORS, type ErrorCode } from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import { challengeHeaders } from './challenge.js'

const request = (headers: Record<string, string> = {}) => ({ headers }) as unknown as FastifyRequest

// RFC 9110 §11.6.1: a challenge is an auth-scheme (a token) with optional auth-params.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
const PARAM = `${TOKEN}=(?:${TOKEN}|"(?:[^"\\\\]|\\\\.)*")`
const CHALLENGE = new RegExp(`^${TOKEN}(?: ${PARAM}(?:, ${PARAM})*)?$`)

test('every 401 of the registry carries a WWW-Authenticate challenge', () => {
  const unauthorized = (Object.keys(ERRORS) as ErrorCode[]).filter(
    (code) => ERRORS[code].status === 401,
  )
  assert.ok(unauthorized.length >= 14)
  for (const code of unauthorized) {
    const headers = challengeHeaders(new BatonError(code, 'refused'), request())
    const challenge = headers['www-authenticate']
    assert.ok(challenge, `${code} has no challenge`)
    assert.match(challenge, CHALLENGE, code)
    assert.match(challenge, /realm="baton(-dashboard)?"/, code)
  }
})

test('each credential has its own scheme; a refused credential names its code', () => {
  const of = (code: ErrorCode, req = request()) =>
    challengeHeaders(new BatonError(code, 'refused'), req)
  assert.equal(of('signature_missing')['www-authenticate'], 'Signature realm="baton"')
  assert.equal(
    of('signature_stale')['www-authenticate'],
    'Signature realm="baton", error="signature_stale"',
  )
  assert.equal(
    of('signature_invalid', request({ 'content-length': '2' }))['accept-signature'],
    'sig1=("@method" "@target-uri" "content-digest" "content-type");created;alg="ed25519"',
  )
  assert.equal(of('token_missing')['www-authenticate'], 'Bearer realm="baton"')
  assert.equal(
    of('admin_token_invalid')['www-authenticate'],
    'Bearer realm="baton", error="admin_token_invalid"',
  )
  assert.equal(
    of('transfer_token_expired')['www-authenticate'],
    'TransferToken realm="baton", error="transfer_token_expired"',
  )
  assert.equal(
    of('dashboard_signin_required')['www-authenticate'],
    'Cookie realm="baton-dashboard", form-action="/dashboard/session", cookie-name="baton_session"',
  )
  // Only a 401 challenges.
  assert.deepEqual(of('admission_pending'), {})
  assert.deepEqual(of('transfer_token_replayed'), {})
})
