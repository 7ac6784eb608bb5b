import assert from 'node:assert/strict'
import { createHash, generateKeyPairSync, sign, verify } from 'node:crypto'
import { test } from 'node:test'
import fc from 'fast-check'
import { type MessageReceiptPayload, RECEIPT_TYPE, RECEIPT_VERSION } from './messages.js'
import type { DigestBytes } from './platform.js'
import { createMessageBodyDigest, createMessageReceipt } from './receipts.js'

const digest: DigestBytes = (alg, data) =>
  createHash(alg === 'sha-256' ? 'sha256' : 'sha512')
    .update(data)
    .digest()

test('a receipt is a compact EdDSA JWS over its header and payload, with the header in order', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const payload: MessageReceiptPayload = {
    v: RECEIPT_VERSION,
    messageId: 'msg_1',
    sequence: 7,
    sender: 'did:key:z6MkA',
    recipient: 'did:key:z6MkB',
    bodyDigest: createMessageBodyDigest({ a: 1 }, digest),
    createdAt: '2026-01-01T00:00:00.000Z',
  }
  const jws = createMessageReceipt(payload, {
    kid: 'hub-1',
    sign: (d) => sign(null, d, privateKey),
  })
  const [h, p, s] = jws.split('.') as [string, string, string]
  assert.equal(
    Buffer.from(h, 'base64url').toString(),
    JSON.stringify({ alg: 'EdDSA', kid: 'hub-1', typ: RECEIPT_TYPE }),
  )
  assert.deepEqual(JSON.parse(Buffer.from(p, 'base64url').toString()), payload)
  assert.ok(verify(null, Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url')))
  assert.doesNotMatch(jws, /[=+/]/)
})

test('the body digest is the sha-256 of the canonical JSON, whatever the member order', () => {
  assert.equal(
    createMessageBodyDigest({ b: [1, 'é'], a: null }, digest),
    `sha-256:${createHash('sha256').update('{"a":null,"b":[1,"é"]}').digest('base64url')}`,
  )
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
      const reversed = Object.fromEntries(Object.entries(obj).reverse())
      assert.equal(createMessageBodyDigest(reversed, digest), createMessageBodyDigest(obj, digest))
    }),
  )
})
