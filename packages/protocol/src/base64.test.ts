import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { fromBase64, fromBase64url, toBase64, toBase64url } from './base64.js'

test('base64 and base64url agree with RFC 4648 as Node encodes it, and round-trip', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
      const buf = Buffer.from(bytes)
      assert.equal(toBase64(bytes), buf.toString('base64'))
      assert.equal(toBase64url(bytes), buf.toString('base64url'))
      assert.deepEqual(fromBase64(toBase64(bytes)), bytes)
      assert.deepEqual(fromBase64url(toBase64url(bytes)), bytes)
    }),
  )
  // RFC 4648 §10 test vectors.
  const vectors = ['', 'Zg==', 'Zm8=', 'Zm9v', 'Zm9vYg==', 'Zm9vYmE=', 'Zm9vYmFy']
  for (const [i, v] of vectors.entries()) {
    assert.equal(toBase64(new TextEncoder().encode('foobar'.slice(0, i))), v)
  }
})

test('text outside the alphabet, or of an impossible length, does not decode', () => {
  for (const bad of ['A', 'AAAAA', 'AA*A', 'AA A', 'AA-A', 'é===']) {
    assert.equal(fromBase64(bad), undefined, bad)
  }
  for (const bad of ['AA+A', 'AA/A', 'AA==', 'A']) assert.equal(fromBase64url(bad), undefined, bad)
})
