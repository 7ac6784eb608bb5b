import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { base58btcDecode, base58btcEncode, principalOf, publicKeyOfPrincipal } from './did-key.js'

test('base58btc round-trips, leading zeros included', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
      assert.deepEqual(base58btcDecode(base58btcEncode(bytes)), bytes)
    }),
  )
  assert.equal(base58btcEncode(new Uint8Array([0, 0, 1])), '112')
  assert.equal(base58btcDecode('0OIl'), undefined)
})

test('a did:key principal names exactly one Ed25519 key and starts with z6Mk', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (key) => {
      const p = principalOf(key)
      assert.match(p, /^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]+$/)
      assert.deepEqual(publicKeyOfPrincipal(p), key)
    }),
  )
  for (const bad of [
    'did:key:z',
    'did:key:zz',
    'did:web:example.com',
    'test-key-ed25519',
    'did:key:z6LS',
  ]) {
    assert.equal(publicKeyOfPrincipal(bad), undefined, bad)
  }
})
