import assert from 'node:assert/strict'
import { createPrivateKey, type createPublicKey, verify } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { contentDigest, matchContentDigest } from './content-digest.js'
import { createIdentity } from './identity.js'
import { defaultComponents, type HttpMessage, signMessage, signRequest } from './signing.js'

const vector = JSON.parse(
  readFileSync(
    path.resolve(import.meta.dirname, '../../protocol/test/vectors/rfc9421-ed25519.json'),
    'utf8',
  ),
)

/**
 * An independent RFC 9421 verifier written from the RFC text with node:crypto only: it parses the
 * one Signature-Input member by hand, rebuilds the base for `@method`, `@target-uri` and plain
 * fields (§2.5), and verifies Ed25519 over it (§3.3.6).
 */
function independentVerify(
  req: { method: string; url: string; headers: Record<string, string> },
  publicKey: ReturnType<typeof createPublicKey>,
): boolean {
  const input = req.headers['signature-input']!
  const eq = input.indexOf('=')
  const label = input.slice(0, eq)
  const paramsText = input.slice(eq + 1)
  const close = paramsText.indexOf(')')
  const names = paramsText
    .slice(1, close)
    .split(' ')
    .map((n) => JSON.parse(n) as string)
  const lines = names.map((n) => {
    if (n === '@method') return `"@method": ${req.method}`
    if (n === '@target-uri') return `"@target-uri": ${req.url}`
    return `"${n}": ${req.headers[n]!.trim()}`
  })
  lines.push(`"@signature-params": ${paramsText}`)
  const sigField = req.headers.signature!
  assert.ok(sigField.startsWith(`${label}=:`))
  const sig = Buffer.from(sigField.slice(label.length + 2, -1), 'base64')
  return verify(null, Buffer.from(lines.join('\n')), publicKey, sig)
}

describe('RFC 9421 Appendix B.2.6 (ed25519)', () => {
  const privateKey = createPrivateKey({ key: vector.key.privateKeyJwk, format: 'jwk' })
  const message: HttpMessage = {
    method: vector.request.method,
    targetUri: vector.request.targetUri,
    headers: vector.request.headers,
  }

  test('the client reproduces the signature base, Signature-Input and Signature exactly', () => {
    const signed = signMessage(message, {
      privateKey,
      keyid: vector.params.keyid,
      components: vector.components,
      created: vector.params.created,
      nonce: null,
      alg: null,
      label: vector.label,
    })
    assert.equal(signed.base, vector.signatureBase)
    assert.equal(signed.signatureInput, vector.signatureInput)
    assert.equal(signed.signature, vector.signature)
  })

  test('the RFC request content digest (sha-512) matches its body', () => {
    const body = Buffer.from(vector.request.body)
    assert.equal(matchContentDigest(vector.request.headers['content-digest'], body), true)
    assert.equal(
      matchContentDigest(vector.request.headers['content-digest'], Buffer.from('{}')),
      false,
    )
  })
})

describe('Baton request signing', () => {
  test('an independent verifier accepts the client signatures, with and without a body', () => {
    const id = createIdentity('https://hub.example/.well-known/agent-net')
    for (const body of [undefined, Buffer.from('{"a":1}')]) {
      const req = signRequest({
        method: body ? 'POST' : 'GET',
        url: 'https://hub.example/v1/home/file?path=handoff%2Frun%2Fowner.json',
        body,
        privateKey: id.privateKey,
        keyid: id.principal,
      })
      assert.ok(independentVerify(req, id.publicKey))
      assert.match(req.headers['signature-input']!, /^sig1=\("@method" "@target-uri"/)
      assert.match(
        req.headers['signature-input']!,
        /;created=\d+;nonce="[A-Za-z0-9_-]{22}";keyid="did:key:z6Mk/,
      )
      if (body) assert.equal(req.headers['content-digest'], contentDigest(body))
    }
  })

  test('every signature is fresh: two signings of one request differ in nonce and signature', () => {
    const id = createIdentity('h')
    const a = signRequest({
      method: 'GET',
      url: 'https://h/v1/me',
      privateKey: id.privateKey,
      keyid: id.principal,
    })
    const b = signRequest({
      method: 'GET',
      url: 'https://h/v1/me',
      privateKey: id.privateKey,
      keyid: id.principal,
    })
    assert.notEqual(a.headers.signature, b.headers.signature)
  })

  test('an Idempotency-Key header is covered by the signature, after the default components', () => {
    const id = createIdentity('h')
    const signed = signRequest({
      method: 'POST',
      url: 'https://h/v1/resources',
      body: Buffer.from('{}'),
      headers: { 'Idempotency-Key': 'key-00000001' },
      privateKey: id.privateKey,
      keyid: id.principal,
    })
    assert.match(
      signed.headers['signature-input']!,
      /^sig1=\("@method" "@target-uri" "content-digest" "content-type" "idempotency-key"\);/,
    )
    assert.deepEqual(defaultComponents(false), ['@method', '@target-uri'])
  })

  test('a covered field the message lacks cannot be signed', () => {
    const id = createIdentity('h')
    assert.throws(
      () =>
        signMessage(
          { method: 'GET', targetUri: 'https://h/v1/me', headers: {} },
          { privateKey: id.privateKey, keyid: id.principal, components: ['content-digest'] },
        ),
      { code: 'signature_invalid' },
    )
  })
})
