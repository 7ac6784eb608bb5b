// The signed-request conformance vectors (conformance/signed-requests.json) run by the hub
// itself, in process: each request is injected into a hub on each store whose clock reads the
// vectors' time and whose public URL is their origin, through the whole signature hook (fields,
// key, enrolment, nonces, admission, the body against its digest). An accepted vector is
// answered by its route; a refused one is a 401 with the vector's code (and reason), and enrols
// nothing.
import assert from 'node:assert/strict'
import { createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { signRequest } from '@baton/client'
import { ManualClock } from '../src/clock.js'
import { repoRoot, startTestHub, type TestHub, testStores } from './support.js'

interface Request {
  method: string
  url: string
  headers: Record<string, string>
  body: string | null
}
interface Vectors {
  keys: Record<string, { privateKeyJwk: object; principal: string; thumbprint: string }>
  verifier: { origin: string; now: number; skewSeconds: number; enrolled: string[] }
  verification: {
    name: string
    request: Request
    verifier?: { now?: number; seenNonces?: { key: string; nonce: string }[] }
    verdict: { accept: true; principal: string } | { code: string; reason?: string }
  }[]
}

const vectors = JSON.parse(
  readFileSync(path.join(repoRoot, 'conformance/signed-requests.json'), 'utf8'),
) as Vectors
const { origin, now } = vectors.verifier

for (const store of testStores) {
  describe(`the hub's verifier on the signed-request vectors (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(now * 1000)

    /** A request signed by the harness itself, at the vectors' time, to the hub's origin. */
    const inject = (r: Request) =>
      hub.app.inject({
        method: r.method as 'GET',
        url: r.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, ''),
        headers: { host: new URL(origin).host, ...r.headers },
        ...(r.body === null ? {} : { payload: r.body }),
      })
    const primer = (name: string, nonce: string) => {
      const key = vectors.keys[name]!
      const signed = signRequest({
        method: 'GET',
        url: `${origin}/v1/me`,
        privateKey: createPrivateKey({ key: key.privateKeyJwk as never, format: 'jwk' }),
        keyid: key.principal,
        created: now,
        nonce,
      })
      return inject({ method: 'GET', url: signed.url, headers: signed.headers, body: null })
    }

    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_PUBLIC_URL: origin },
        { clock },
      )
      // The enrolled keys enrol as any key does: by a request signed with their did:key.
      for (const name of vectors.verifier.enrolled) {
        assert.equal((await primer(name, `enrol-${name}`)).statusCode, 200)
      }
    })
    after(() => hub?.close())

    for (const v of vectors.verification) {
      test(v.name, async () => {
        clock.set((v.verifier?.now ?? now) * 1000)
        for (const seen of v.verifier?.seenNonces ?? []) {
          assert.equal((await primer(seen.key, seen.nonce)).statusCode, 200)
        }
        const res = await inject(v.request)
        const body = res.json() as Record<string, unknown>
        if ('accept' in v.verdict) {
          assert.ok(res.statusCode < 300, `${res.statusCode} ${res.body}`)
          if (v.request.url.endsWith('/v1/me')) assert.equal(body.principal, v.verdict.principal)
          return
        }
        assert.equal(res.statusCode, 401, res.body)
        assert.equal(body.code, v.verdict.code, res.body)
        if (v.verdict.reason !== undefined) assert.equal(body.reason, v.verdict.reason, res.body)
      })
    }

    test('no refused vector enrolled its key', async () => {
      const { principals } = await hub.ctx.identity.list({ limit: 500 })
      const known = new Set(vectors.verifier.enrolled.map((n) => vectors.keys[n]!.principal))
      assert.deepEqual(
        principals.map((p) => p.principal).filter((p) => !known.has(p)),
        [],
      )
    })
  })
}
