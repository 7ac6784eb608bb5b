// The signed-request conformance vectors (conformance/signed-requests.json) run by this client:
// it signs each signing vector to the same fields and base, byte for byte, and its verifier
// (`verifySignedRequest`, the hub's rules) accepts or refuses each verification vector with its
// code. The file is also regenerated from its generator and compared, so it cannot drift.
import assert from 'node:assert/strict'
import { createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { document as generated } from '../../../conformance/generate-signed-requests.js'
import { signRequest } from './signing.js'
import { verifySignedRequest } from './verify.js'

interface Request {
  method: string
  url: string
  headers: Record<string, string>
  body: string | null
}
interface Vectors {
  keys: Record<string, { privateKeyJwk: object; principal: string; thumbprint: string }>
  verifier: { origin: string; now: number; skewSeconds: number; enrolled: string[] }
  signing: {
    name: string
    key: string
    profile: 'baton' | 'web-bot-auth'
    request: Request
    created: number
    nonce: string
    expires?: number
    expected: {
      headers: Record<string, string>
      signatureBase: string
      signatureInput: string
      signature: string
    }
  }[]
  verification: {
    name: string
    request: Request
    verifier?: { now?: number; seenNonces?: { key: string; nonce: string }[] }
    verdict: { accept: true; principal: string } | { code: string; reason?: string }
  }[]
}

const file = path.resolve(import.meta.dirname, '../../../conformance/signed-requests.json')
const vectors = JSON.parse(readFileSync(file, 'utf8')) as Vectors

/** The URI the verifier rebuilds: its own origin, then the path and query as sent. */
export function targetAt(origin: string, url: string): string {
  return origin + url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '')
}

describe('signed-request conformance vectors', () => {
  test('the file is what its generator writes', () => {
    assert.deepEqual(vectors, JSON.parse(JSON.stringify(generated)))
  })

  test('refusals outnumber acceptances, and every code is the hub’s', () => {
    const refused = vectors.verification.filter((v) => 'code' in v.verdict)
    assert.ok(refused.length > vectors.verification.length - refused.length)
  })

  for (const v of vectors.signing) {
    test(`signs: ${v.name}`, () => {
      const key = vectors.keys[v.key]!
      const signed = signRequest({
        method: v.request.method,
        url: v.request.url,
        body: v.request.body === null ? undefined : Buffer.from(v.request.body),
        headers: v.request.headers,
        privateKey: createPrivateKey({ key: key.privateKeyJwk as never, format: 'jwk' }),
        keyid: key.principal,
        created: v.created,
        nonce: v.nonce,
        profile: v.profile,
        ...(v.expires !== undefined ? { lifetimeS: v.expires - v.created } : {}),
      })
      const { signature, 'signature-input': input, ...headers } = signed.headers
      assert.deepEqual(headers, v.expected.headers)
      assert.equal(input, v.expected.signatureInput)
      assert.equal(signature, v.expected.signature)
    })
  }

  for (const v of vectors.verification) {
    test(`verifies: ${v.name}`, () => {
      const enrolled = new Map(
        vectors.verifier.enrolled.map((n) => [
          vectors.keys[n]!.thumbprint,
          vectors.keys[n]!.principal,
        ]),
      )
      const seen = new Set(
        (v.verifier?.seenNonces ?? []).map((s) => `${vectors.keys[s.key]!.principal} ${s.nonce}`),
      )
      const run = () =>
        verifySignedRequest(
          {
            method: v.request.method,
            targetUri: targetAt(vectors.verifier.origin, v.request.url),
            headers: v.request.headers,
          },
          v.request.body === null ? new Uint8Array() : Buffer.from(v.request.body),
          {
            now: (v.verifier?.now ?? vectors.verifier.now) * 1000,
            skewSeconds: vectors.verifier.skewSeconds,
            enrolled,
            seenNonces: seen,
          },
        )
      if ('accept' in v.verdict) {
        assert.equal(run().principal, v.verdict.principal)
        return
      }
      const { code, reason } = v.verdict
      assert.throws(run, (error: unknown) => {
        assert.ok(error instanceof BatonError, String(error))
        assert.equal(error.code, code)
        if (reason !== undefined) assert.equal(error.context.reason, reason)
        return true
      })
    })
  }
})
