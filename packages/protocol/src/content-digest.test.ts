import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import fc from 'fast-check'
import { createContentDigest, parseContentDigestField } from './content-digest.js'
import type { DigestBytes } from './platform.js'

const vector = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../test/vectors/rfc9421-ed25519.json'), 'utf8'),
)
const digest: DigestBytes = (alg, data) =>
  createHash(alg === 'sha-256' ? 'sha256' : 'sha512')
    .update(data)
    .digest()

test('the RFC 9421 example request names its body by sha-512', () => {
  const parsed = parseContentDigestField(vector.request.headers['content-digest'])
  assert.equal(parsed?.algorithm, 'sha-512')
  assert.deepEqual(
    parsed.digest,
    new Uint8Array(digest('sha-512', Buffer.from(vector.request.body))),
  )
})

test('a created Content-Digest parses back to the digest of the body', () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 200 }),
      fc.constantFrom('sha-256', 'sha-512'),
      (body, alg) => {
        const parsed = parseContentDigestField(createContentDigest(body, digest, alg))
        assert.deepEqual(parsed, { algorithm: alg, digest: new Uint8Array(digest(alg, body)) })
      },
    ),
  )
  assert.equal(
    createContentDigest(Buffer.from('{}'), digest),
    'sha-256=:RBNvo1WzZ4oRRq0W9+hknpT7T8If536DEMBg9hyq/4o=:',
  )
})

test('sha-256 is chosen over sha-512 when a field carries both', () => {
  const body = Buffer.from('x')
  const both = `${createContentDigest(body, digest, 'sha-512')}, ${createContentDigest(body, digest)}`
  assert.equal(parseContentDigestField(both)?.algorithm, 'sha-256')
})

test('a field with no usable digest answers undefined', () => {
  const b64 = (n: number) => Buffer.alloc(n).toString('base64')
  for (const bad of [
    '',
    'sha-256',
    'sha-256=abc',
    `sha-256=:${b64(31)}:`,
    `sha-256=:${b64(33)}:`,
    `sha-512=:${b64(32)}:`,
    `md5=:${b64(16)}:`,
    `unixsum=:${b64(4)}:`,
    `sha-256=:${b64(32)}:, junk`,
    `sha-256=:${b64(32).replace('A', '*')}:`,
    `SHA-256=:${b64(32)}:`,
    `sha-256=:A:`,
  ]) {
    assert.equal(parseContentDigestField(bad), undefined, bad)
  }
})
