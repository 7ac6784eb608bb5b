import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as protocol from '@baton/protocol'
import * as client from './index.js'

// The RFC 8785, 8941 and 9421 and did:key primitives moved to @baton/protocol; the SDK's public
// API keeps every name it had, as the same function.
test('the SDK still exports the shared primitives, as protocol defines them', () => {
  const sdk: Record<string, unknown> = { ...client }
  const shared: Record<string, unknown> = { ...protocol }
  for (const name of [
    'base58btcDecode',
    'base58btcEncode',
    'canonicalJson',
    'componentValue',
    'defaultComponents',
    'parseDictionary',
    'principalOf',
    'publicKeyOfPrincipal',
    'serializeInnerList',
    'signatureBase',
    'StructuredFieldError',
  ]) {
    assert.equal(sdk[name], shared[name], name)
  }
  for (const name of [
    'contentDigest',
    'matchContentDigest',
    'messageBodyDigest',
    'newNonce',
    'parseContentDigest',
    'publicKeyFromRaw',
    'signMessage',
    'signMessageReceipt',
    'signRequest',
    'verifyMessageReceipt',
  ]) {
    assert.equal(typeof sdk[name], 'function', name)
  }
})

test('the SDK wrappers answer what the protocol primitives do with node:crypto', () => {
  const body = new TextEncoder().encode('{"hello": "world"}')
  const value = client.contentDigest(body)
  assert.equal(value, 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:')
  const parsed = client.parseContentDigest(value)
  assert.equal(parsed?.algorithm, 'sha256')
  assert.ok(Buffer.isBuffer(parsed.digest))
  assert.deepEqual(new Uint8Array(parsed.digest), protocol.parseContentDigestField(value)?.digest)
  assert.equal(client.matchContentDigest(value, body), true)
  assert.equal(client.matchContentDigest(value, new Uint8Array()), false)
})
