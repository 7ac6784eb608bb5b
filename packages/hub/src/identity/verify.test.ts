import assert from 'node:assert/strict'
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import type { HttpMessage } from '@baton/protocol'
import {
  BodyDigest,
  didKeyResolver,
  VerifyPlacement,
  type VerifyPolicy,
  verifySignedHeadersAsync,
  verifySignedRequest,
} from './verify.js'

const vector = JSON.parse(
  readFileSync(
    path.resolve(import.meta.dirname, '../../../protocol/test/vectors/rfc9421-ed25519.json'),
    'utf8',
  ),
)
const testKey = createPublicKey({ key: vector.key.publicKeyJwk, format: 'jwk' })

// The RFC example is old and covers neither a nonce nor @target-uri, so it is checked under a
// policy that requires nothing beyond a valid signature, at the example's own time.
const rfcPolicy = (extra = true): VerifyPolicy => ({
  now: vector.params.created * 1000,
  skewMs: 60_000,
  components: [],
  bodyComponents: [],
  requireNonce: false,
  resolveKey: didKeyResolver(extra ? new Map([['test-key-ed25519', testKey]]) : undefined),
})

function rfcMessage(): HttpMessage {
  return {
    method: vector.request.method,
    targetUri: vector.request.targetUri,
    headers: {
      ...vector.request.headers,
      'signature-input': vector.signatureInput,
      signature: vector.signature,
    },
  }
}
const body = Buffer.from(vector.request.body)

describe('the hub verifier on RFC 9421 Appendix B.2.6', () => {
  test('accepts the example request signed with test-key-ed25519', () => {
    const v = verifySignedRequest(rfcMessage(), body, rfcPolicy())
    assert.equal(v.keyid, 'test-key-ed25519')
    assert.equal(v.label, 'sig-b26')
    assert.equal(v.base, vector.signatureBase)
  })

  test('without the test key registered, test-key-ed25519 is an unknown key', () => {
    assert.throws(() => verifySignedRequest(rfcMessage(), body, rfcPolicy(false)), {
      code: 'unknown_key',
    })
  })

  const tampered: [string, (m: HttpMessage) => void, string][] = [
    [
      'method',
      (m) => {
        m.method = 'PUT'
      },
      'signature_invalid',
    ],
    [
      'path',
      (m) => {
        m.targetUri = 'https://example.com/fo0?param=Value&Pet=dog'
      },
      'signature_invalid',
    ],
    [
      'authority',
      (m) => {
        m.targetUri = 'https://example.org/foo?param=Value&Pet=dog'
      },
      'signature_invalid',
    ],
    [
      'date',
      (m) => {
        m.headers.date = 'Tue, 20 Apr 2021 02:07:56 GMT'
      },
      'signature_invalid',
    ],
    [
      'content-type',
      (m) => {
        m.headers['content-type'] = 'application/jsoN'
      },
      'signature_invalid',
    ],
    [
      'content-length',
      (m) => {
        m.headers['content-length'] = '19'
      },
      'signature_invalid',
    ],
    [
      'covered field removed',
      (m) => {
        delete m.headers.date
      },
      'signature_invalid',
    ],
    [
      'created',
      (m) => {
        m.headers['signature-input'] = vector.signatureInput.replace('1618884473', '1618884474')
      },
      'signature_invalid',
    ],
    [
      'signature byte',
      (m) => {
        m.headers.signature = vector.signature.replace(':wqc', ':wqd')
      },
      'signature_invalid',
    ],
    [
      'content digest',
      (m) => {
        m.headers['content-digest'] = m.headers['content-digest']!.toString().replace('WZD', 'WZE')
      },
      'digest_mismatch',
    ],
    [
      'signature missing',
      (m) => {
        delete m.headers.signature
      },
      'signature_missing',
    ],
    [
      'input missing',
      (m) => {
        delete m.headers['signature-input']
      },
      'signature_missing',
    ],
    [
      'labels differ',
      (m) => {
        m.headers.signature = vector.signature.replace('sig-b26', 'sig-b27')
      },
      'signature_malformed',
    ],
    [
      'alg not ed25519',
      (m) => {
        m.headers['signature-input'] = `${vector.signatureInput};alg="rsa-pss-sha512"`
      },
      'signature_malformed',
    ],
    [
      'short signature',
      (m) => {
        m.headers.signature = 'sig-b26=:AAAA:'
      },
      'signature_malformed',
    ],
    [
      'syntax',
      (m) => {
        m.headers['signature-input'] = vector.signatureInput.replace(')', '')
      },
      'signature_malformed',
    ],
  ]
  for (const [name, mutate, code] of tampered) {
    test(`refuses a changed ${name} with ${code}`, () => {
      const m = rfcMessage()
      mutate(m)
      assert.throws(() => verifySignedRequest(m, body, rfcPolicy()), { code })
    })
  }

  test('refuses the example as stale an hour later, and early by more than the skew', () => {
    for (const offset of [3_600_000, -61_000, 61_000]) {
      const policy = { ...rfcPolicy(), now: vector.params.created * 1000 + offset }
      assert.throws(() => verifySignedRequest(rfcMessage(), body, policy), {
        code: 'signature_stale',
      })
    }
  })

  test('refuses a request carrying a present-when-sent field its signature does not cover', () => {
    const m = rfcMessage()
    m.headers['idempotency-key'] = 'added-after-signing'
    const policy = { ...rfcPolicy(), presentComponents: ['idempotency-key'] }
    assert.throws(() => verifySignedRequest(m, body, policy), {
      code: 'signature_malformed',
      context: { reason: 'components', missing: ['idempotency-key'] },
    })
  })

  test('the streaming digest check accepts the body in any chunking and refuses any other', () => {
    const digest = String(rfcMessage().headers['content-digest'])
    const whole = new BodyDigest(digest)
    for (let i = 0; i < body.length; i += 7) whole.update(body.subarray(i, i + 7))
    whole.assertMatches()
    const short = new BodyDigest(digest)
    short.update(body.subarray(1))
    assert.throws(() => short.assertMatches(), { code: 'digest_mismatch' })
    // No digest vouches for no byte: an empty body passes, any byte does not.
    new BodyDigest(undefined).assertMatches()
    const stray = new BodyDigest(undefined)
    stray.update(Buffer.from('x'))
    assert.throws(() => stray.assertMatches(), { code: 'digest_mismatch' })
  })

  test("refuses the example under Baton's own policy: it covers no @target-uri and has no nonce", () => {
    const policy = {
      ...rfcPolicy(),
      components: ['@method', '@target-uri'],
      bodyComponents: ['content-digest'],
      requireNonce: true,
    }
    assert.throws(() => verifySignedRequest(rfcMessage(), body, policy), {
      code: 'signature_malformed',
    })
  })
})

describe('where a verify runs', () => {
  test('on the event loop while it has room, on the pool once it is busy, with a gap between', () => {
    const placement = new VerifyPlacement(0.8, 0.6)
    try {
      assert.equal(placement.onPool, false)
      placement.observe(0.7)
      assert.equal(placement.onPool, false)
      placement.observe(0.85)
      assert.equal(placement.onPool, true)
      // Between the two marks it stays where it is, so the place does not flap.
      placement.observe(0.7)
      assert.equal(placement.onPool, true)
      placement.observe(0.5)
      assert.equal(placement.onPool, false)
    } finally {
      placement.stop()
    }
  })

  test('a signature verifies the same on the loop and on the pool, and a bad one fails on both', async () => {
    // The RFC example covers its body's digest; judged from its headers alone, as the hub does.
    for (const busy of [0, 1]) {
      const placement = new VerifyPlacement(0.8, 0.6)
      placement.observe(busy)
      try {
        assert.equal(placement.onPool, busy === 1)
        const ok = await verifySignedHeadersAsync(rfcMessage(), true, rfcPolicy(), placement)
        assert.equal(ok.keyid, 'test-key-ed25519')
        const bad = rfcMessage()
        // One byte of the signature changed (a character inside its base64).
        const sig = String(bad.headers.signature)
        const at = sig.indexOf(':') + 3
        bad.headers.signature = sig.slice(0, at) + (sig[at] === 'A' ? 'B' : 'A') + sig.slice(at + 1)
        await assert.rejects(verifySignedHeadersAsync(bad, true, rfcPolicy(), placement), {
          code: 'signature_invalid',
        })
      } finally {
        placement.stop()
      }
    }
  })
})
