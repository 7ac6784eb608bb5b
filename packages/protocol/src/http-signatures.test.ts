import assert from 'node:assert/strict'
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  createSignature,
  defaultComponents,
  type HttpMessage,
  parseSignatureFields,
  signatureBase,
} from './http-signatures.js'
import { parseDictionary, type SfInnerList } from './structured-fields.js'

const vector = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../test/vectors/rfc9421-ed25519.json'), 'utf8'),
)
const privateKey = createPrivateKey({ key: vector.key.privateKeyJwk, format: 'jwk' })
const publicKey = createPublicKey(privateKey)
const message: HttpMessage = {
  method: vector.request.method,
  targetUri: vector.request.targetUri,
  headers: vector.request.headers,
}
const signBytes = (data: Uint8Array) => sign(null, data, privateKey)

describe('RFC 9421 Appendix B.2.6 (ed25519)', () => {
  test('createSignature reproduces the signature base, Signature-Input and Signature exactly', () => {
    const signed = createSignature(
      message,
      {
        keyid: vector.params.keyid,
        components: vector.components,
        created: vector.params.created,
        alg: null,
        label: vector.label,
      },
      signBytes,
    )
    assert.equal(signed.base, vector.signatureBase)
    assert.equal(signed.signatureInput, vector.signatureInput)
    assert.equal(signed.signature, vector.signature)
  })

  test('the RFC Signature-Input parses and rebuilds the same base', () => {
    const dict = parseDictionary(vector.signatureInput)
    assert.equal(dict.length, 1)
    const [label, list] = dict[0]!
    assert.equal(label, vector.label)
    assert.equal(signatureBase(message, list as SfInnerList), vector.signatureBase)
  })

  test('parseSignatureFields reads the RFC signature and its parameters', () => {
    const parsed = parseSignatureFields(vector.signatureInput, vector.signature)
    assert.equal(parsed.label, vector.label)
    assert.equal(parsed.created, vector.params.created)
    assert.equal(parsed.keyid, vector.params.keyid)
    assert.equal(parsed.nonce, undefined)
    assert.equal(parsed.alg, undefined)
    assert.equal(signatureBase(message, parsed.input), vector.signatureBase)
    assert.ok(verify(null, Buffer.from(vector.signatureBase), publicKey, parsed.signature))
  })
})

describe('creating and reading Baton signatures', () => {
  const { privateKey: key, publicKey: pub } = generateKeyPairSync('ed25519')
  const nonce = fc.stringMatching(/^[\x21-\x7e]{1,128}$/).filter((n) => !/["\\]/.test(n))

  test('a created signature parses back to its parameters and verifies over the same base', () => {
    fc.assert(
      fc.property(fc.boolean(), nonce, fc.integer({ min: 0, max: 2 ** 40 }), (body, n, created) => {
        const headers: HttpMessage['headers'] = body
          ? { 'content-digest': 'sha-256=:AA==:', 'content-type': 'application/json' }
          : {}
        const msg = { method: 'POST', targetUri: 'https://hub.example/v1/x?a=1', headers }
        const signed = createSignature(msg, { keyid: 'did:key:z6Mk', created, nonce: n }, (d) =>
          sign(null, d, key),
        )
        const parsed = parseSignatureFields(signed.signatureInput, signed.signature)
        assert.deepEqual(
          parsed.input.items.map((i) => i.value),
          defaultComponents(body, headers),
        )
        assert.equal(parsed.created, created)
        assert.equal(parsed.nonce, n)
        assert.equal(parsed.alg, 'ed25519')
        assert.equal(signatureBase(msg, parsed.input), signed.base)
        assert.ok(verify(null, Buffer.from(signed.base), pub, parsed.signature))
      }),
      { numRuns: 50 },
    )
  })

  test('a base that cannot be built is refused with its code', () => {
    const cases: [readonly string[], string][] = [
      [['content-digest'], 'signature_invalid'],
      [['@method', '@method'], 'signature_malformed'],
      [['@status'], 'signature_malformed'],
      [['Content-Type'], 'signature_malformed'],
    ]
    for (const [components, code] of cases) {
      assert.throws(
        () =>
          createSignature(
            { method: 'GET', targetUri: 'https://h/v1/me', headers: {} },
            { keyid: 'k', created: 1, components },
            (d) => sign(null, d, key),
          ),
        { code },
        components.join(' '),
      )
    }
  })

  test('malformed Signature-Input and Signature fields are refused with their reason', () => {
    const sig = `sig1=:${Buffer.alloc(64).toString('base64')}:`
    const input = (params: string) => `sig1=("@method" "@target-uri")${params}`
    const ok = ';created=1;keyid="k"'
    const cases: [string, string, string][] = [
      ['sig1=(', sig, 'syntax'],
      [input(ok), 'sig1=:AA', 'syntax'],
      ['a=("@method");created=1;keyid="k", b=("@method");created=1;keyid="k"', sig, 'label'],
      ['sig1=1', sig, 'syntax'],
      [input(ok), 'sig2=:AA==:', 'label'],
      [input(ok), 'sig1="AA=="', 'label'],
      [input(ok), 'sig1=(:AA==:)', 'label'],
      [input(ok), `sig1=:${Buffer.alloc(63).toString('base64')}:`, 'signature_length'],
      [input(ok), `sig1=:${Buffer.alloc(65).toString('base64')}:`, 'signature_length'],
      [input(';keyid="k"'), sig, 'created'],
      [input(';created="1";keyid="k"'), sig, 'created'],
      [input(';created=1'), sig, 'keyid'],
      [input(';created=1;keyid=k'), sig, 'keyid'],
      [input(`${ok};nonce=""`), sig, 'nonce'],
      [input(`${ok};nonce=7`), sig, 'nonce'],
      [input(`${ok};nonce="${'n'.repeat(129)}"`), sig, 'nonce'],
      [input(`${ok};nonce="a b"`), sig, 'nonce'],
      [input(`${ok};alg="rsa-pss-sha512"`), sig, 'alg'],
      [input(`${ok};alg=ed25519`), sig, 'alg'],
      [input(`${ok};expires="2"`), sig, 'expires'],
    ]
    for (const [i, s, reason] of cases) {
      assert.throws(
        () => parseSignatureFields(i, s),
        { code: 'signature_malformed', context: { reason } },
        i,
      )
    }
  })

  test('Baton label wins when several signatures are sent', () => {
    const sig = `:${Buffer.alloc(64, 1).toString('base64')}:`
    const parsed = parseSignatureFields(
      'other=("@method");created=2;keyid="x", sig1=("@method");created=1;keyid="k"',
      `other=${sig}, sig1=${sig}`,
    )
    assert.equal(parsed.label, 'sig1')
    assert.equal(parsed.keyid, 'k')
  })
})
