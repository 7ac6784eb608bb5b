import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isCanonicalB64u } from './b64.js'
import { parseJws, parseJwsElement, signJws, verifyJws } from './jws.js'
import { generateKeyPair, toPrivateKey, toPublicKey } from './keys.js'

const kp = generateKeyPair('EdDSA')
const key = toPrivateKey(kp.privateJwk)
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

describe('strict JWS parsing', () => {
  test('canonical base64url only', () => {
    assert.equal(isCanonicalB64u('QQ'), true)
    assert.equal(isCanonicalB64u('QR'), false)
    assert.equal(isCanonicalB64u('QQ=='), false)
    assert.equal(isCanonicalB64u('Q+Q'), false)
    assert.equal(isCanonicalB64u('Q'), false)
  })

  test('a payload of any size decodes to the octets signed, as UTF-8', () => {
    // around the 12 KiB the parser decodes in place, and far beyond it
    for (const octets of [0, 1, 2, 12 * 1024 - 1, 12 * 1024, 12 * 1024 + 1, 40_000]) {
      const text = 'é'.repeat(Math.max(0, (octets - 9) >> 1))
      const payload = Buffer.from(JSON.stringify({ t: text }), 'utf8')
      const jws = signJws({ alg: 'EdDSA', kid: 'k' }, payload, 'EdDSA', key)
      const parsed = parseJwsElement(jws)
      assert.deepEqual(parsed.payload, { t: text })
      assert.deepEqual(parseJws(jws).payload, payload)
      assert.equal(verifyJws(parseJws(jws), toPublicKey(kp.publicJwk)), true)
    }
  })

  test('exactly three parts', () => {
    const jws = signJws({ alg: 'EdDSA' }, Buffer.from('{}'), 'EdDSA', key)
    for (const bad of [
      jws.split('.').slice(0, 2).join('.'),
      `${jws}.x`,
      `.${jws}`,
      `${jws.split('.')[0]}..${jws.split('.')[2]}x`,
    ]) {
      assert.throws(() => parseJws(bad), { reason: 'bad-signature' })
    }
  })

  test('the algorithm allow-list: none and HMAC refused', () => {
    for (const alg of ['none', 'HS256', 'RS256', 'ES384', 'eddsa']) {
      assert.throws(() => parseJws(`${b64({ alg })}.${b64({})}.AAAA`), { reason: 'bad-signature' })
    }
  })

  test('crit refused, header must be an object, payload an object', () => {
    assert.throws(() => parseJws(`${b64({ alg: 'EdDSA', crit: ['b64'], b64: false })}.e30.AAAA`), {
      reason: 'bad-signature',
    })
    assert.throws(() => parseJws(`${b64(['EdDSA'])}.e30.AAAA`), { reason: 'bad-signature' })
    const arr = signJws({ alg: 'EdDSA', kid: 'k', typ: 't' }, Buffer.from('[1]'), 'EdDSA', key)
    assert.throws(() => parseJwsElement(arr), { reason: 'bad-signature' })
    const nokid = signJws({ alg: 'EdDSA', typ: 't' }, Buffer.from('{}'), 'EdDSA', key)
    assert.throws(() => parseJwsElement(nokid), { reason: 'bad-signature' })
  })

  test('ES256 signatures are raw r||s and verify', () => {
    const es = generateKeyPair('ES256')
    const jws = signJws({ alg: 'ES256' }, Buffer.from('x'), 'ES256', toPrivateKey(es.privateJwk))
    const p = parseJws(jws)
    assert.equal(p.signature.length, 64)
    assert.equal(verifyJws(p, toPublicKey(es.publicJwk)), true)
    assert.equal(verifyJws(p, toPublicKey(kp.publicJwk)), false)
  })

  test('a header alg that differs from the key is refused when signing', () => {
    assert.throws(() => signJws({ alg: 'ES256' }, Buffer.from('x'), 'EdDSA', key), {
      reason: 'invalid-input',
    })
  })
})
