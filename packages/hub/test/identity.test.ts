import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import {
  contentDigest,
  createIdentity,
  defaultComponents,
  type Identity,
  SignedClient,
  signMessage,
} from '@baton/client'
import { type DiscoveryDocument, type MeView, parseDictionary } from '@baton/protocol'
import fc from 'fast-check'
import { ManualClock } from '../src/clock.js'
import { call, restartableHub, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN_TOKEN = 'op-secret-0123456789abcdefghijklmnopqrstuv'
const SIGNATURE_CODES = new Set([
  'signature_missing',
  'signature_malformed',
  'unknown_key',
  'signature_invalid',
  'digest_mismatch',
  'signature_stale',
  'signature_replayed',
])

interface Vector {
  name: string
  request: { method: string; path: string; body?: string }
  sign?: {
    nonce?: null
    alg?: string
    components?: string[]
    keyid?: string
    otherKey?: boolean
    createdOffsetSeconds?: number
    expiresOffsetSeconds?: number
  }
  mutate?: Record<string, unknown>[]
  status?: number
  code?: string
}
const vectors = (
  JSON.parse(
    readFileSync(path.join(import.meta.dirname, 'vectors/rfc9421-negative.json'), 'utf8'),
  ) as { vectors: Vector[] }
).vectors

/** A request on the wire: everything the sender controls, so tests can tamper with any part. */
interface WireRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: Buffer
}

/** Signs a request for a hub the way @baton/client does, with every option open to a test. */
function signFor(
  hub: { url: string },
  id: Identity,
  clock: ManualClock,
  req: { method: string; path: string; body?: string | Buffer },
  opts: Vector['sign'] = {},
): WireRequest {
  const body = req.body === undefined ? undefined : Buffer.from(req.body)
  const host = new URL(hub.url).host
  const headers: Record<string, string> = { host }
  if (body) {
    headers['content-type'] = 'application/json'
    headers['content-digest'] = contentDigest(body)
  }
  const now = Math.floor(clock.now() / 1000)
  const signer = opts.otherKey ? createIdentity('other').privateKey : id.privateKey
  const signed = signMessage(
    { method: req.method, targetUri: hub.url + req.path, headers },
    {
      privateKey: signer,
      keyid: opts.keyid ?? id.principal,
      components: opts.components ?? defaultComponents(body !== undefined),
      created: now + (opts.createdOffsetSeconds ?? 0),
      ...(opts.expiresOffsetSeconds !== undefined
        ? { expires: now + opts.expiresOffsetSeconds }
        : {}),
      ...(opts.nonce === null ? { nonce: null } : {}),
      ...(opts.alg !== undefined ? { alg: opts.alg } : {}),
    },
  )
  headers['signature-input'] = signed.signatureInput
  headers.signature = signed.signature
  return { method: req.method, path: req.path, headers, ...(body ? { body } : {}) }
}

/** Sends a request exactly as given (Host included) over node:http. */
function send(
  hub: { url: string },
  req: WireRequest,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Record<string, unknown> }> {
  const url = new URL(hub.url)
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers }
    if (req.body) headers['content-length'] = String(req.body.length)
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers,
        setHost: false,
        // A fresh connection each time: a pooled one may belong to a hub that has stopped.
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let body: Record<string, unknown> = {}
          try {
            body = text ? (JSON.parse(text) as Record<string, unknown>) : {}
          } catch {
            body = { text }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
        })
      },
    )
    r.on('error', reject)
    r.end(req.body)
  })
}

function applyMutations(req: WireRequest, mutations: Record<string, unknown>[] = []): WireRequest {
  const out: WireRequest = { ...req, headers: { ...req.headers } }
  for (const m of mutations) {
    if (typeof m.method === 'string') out.method = m.method
    if (typeof m.path === 'string') out.path = m.path
    if (typeof m.body === 'string') out.body = Buffer.from(m.body)
    if (m.flipSignature) {
      const sig = out.headers.signature!
      const bytes = Buffer.from(sig.slice(sig.indexOf(':') + 1, -1), 'base64')
      bytes[10]! ^= 0x01
      out.headers.signature = `sig1=:${bytes.toString('base64')}:`
    }
    if (typeof m.header === 'string') {
      const name = m.header
      if (m.value === null) delete out.headers[name]
      else if (typeof m.value === 'string') out.headers[name] = m.value
      else if (Array.isArray(m.replace)) {
        out.headers[name] = out.headers[name]!.replace(String(m.replace[0]), String(m.replace[1]))
      } else if (Array.isArray(m.replaceRegex)) {
        const re = new RegExp(String(m.replaceRegex[0]))
        out.headers[name] = out.headers[name]!.replace(re, String(m.replaceRegex[1]))
      }
    }
  }
  return out
}

const admin = (token = ADMIN_TOKEN) => ({ authorization: `Bearer ${token}` })

for (const store of testStores) {
  describe(`identity and signed requests (${store.name})`, () => {
    const clock = new ManualClock()
    let open: TestHub
    before(async () => {
      open = await startTestHub(store, { BATON_ADMISSION: 'open' }, { clock })
    })
    after(async () => {
      await open?.close()
    })

    test('discovery describes the API base, signatures, admission, limits, quotas and hub key', async () => {
      const res = await call(open, 'GET', '/.well-known/agent-net')
      assert.equal(res.status, 200)
      const doc = res.body as unknown as DiscoveryDocument
      assert.equal(doc.apiBase, open.url)
      assert.equal(doc.openapi, `${open.url}/openapi.json`)
      assert.equal(doc.signatures.algorithm, 'ed25519')
      assert.equal(doc.signatures.skewSeconds, 60)
      assert.deepEqual(doc.signatures.components, ['@method', '@target-uri'])
      assert.equal(doc.admission.mode, 'open')
      assert.equal(doc.quotas.requestsPerDay, 10_000)
      assert.equal(doc.quotas.storedBytes, 10 * 1024 * 1024)
      assert.equal(doc.hubKey.kty, 'OKP')
      assert.equal(doc.hubKey.crv, 'Ed25519')
      assert.match(doc.hubKey.kid, /^[A-Za-z0-9_-]{43}$/)
      assert.equal((await call(open, 'GET', '/openapi.json')).status, 200)
    })

    test('every vector in rfc9421-negative.json answers as expected, and refusals change nothing', async () => {
      const refused: string[] = []
      for (const v of vectors) {
        const id = createIdentity('test')
        const req = applyMutations(signFor(open, id, clock, v.request, v.sign), v.mutate)
        const res = await send(open, req)
        if (v.code) {
          assert.equal(res.status, 401, `${v.name}: ${JSON.stringify(res.body)}`)
          assert.equal(res.body.code, v.code, v.name)
          refused.push(id.principal)
        } else {
          assert.equal(res.status, v.status, `${v.name}: ${JSON.stringify(res.body)}`)
        }
      }
      const { principals } = await open.ctx.identity.list({ limit: 500 })
      const enrolled = new Set(principals.map((p) => p.principal))
      for (const p of refused) assert.ok(!enrolled.has(p), 'a refused request enrolled its key')
    })

    test('a signed request is accepted once; the same request again is signature_replayed', async () => {
      const id = createIdentity('test')
      const req = signFor(open, id, clock, { method: 'GET', path: '/v1/me' })
      assert.equal((await send(open, req)).status, 200)
      const again = await send(open, req)
      assert.equal(again.status, 401)
      assert.equal(again.body.code, 'signature_replayed')
    })

    test('GET /v1/me answers the principal, its state, quotas and usage', async () => {
      const id = createIdentity('test')
      await send(open, signFor(open, id, clock, { method: 'GET', path: '/v1/none' }))
      const res = await send(open, signFor(open, id, clock, { method: 'GET', path: '/v1/me' }))
      assert.equal(res.status, 200)
      const me = res.body as unknown as MeView
      assert.equal(me.principal, id.principal)
      assert.equal(me.state, 'approved')
      assert.equal(me.quotas.requestsPerDay.used, 1)
      assert.equal(me.quotas.requestsPerDay.limit, 10_000)
      assert.deepEqual(me.quotas.storedBytes, { limit: 10 * 1024 * 1024, used: 0 })
      assert.equal(me.quotas.messagesPerDay.limit, 1000)
      assert.equal(me.quotas.messagesPerDay.used, 0)
      const home = {
        path: 'handoff/run/owner.json',
        expectedRevision: 0,
        content: '{"stage":"prepared"}',
      }
      const put = signFor(open, id, clock, {
        method: 'PUT',
        path: '/v1/home/file',
        body: JSON.stringify(home),
      })
      const wrote = await send(open, put)
      assert.ok(wrote.status < 300, JSON.stringify(wrote.body))
      const after = await send(open, signFor(open, id, clock, { method: 'GET', path: '/v1/me' }))
      const usage = (after.body as unknown as MeView).quotas.storedBytes.used
      assert.ok(usage >= home.content.length, `stored bytes ${usage}`)
    })

    test('any single-byte change to a signed request is refused with a signature code', async () => {
      const id = createIdentity('test')
      const visible = fc.integer({ min: 0x21, max: 0x7e })
      const urlChar = fc.constantFrom(...'ABCXYZabcxyz0189-._~'.split(''))
      type Part =
        | 'path'
        | 'query'
        | 'body'
        | 'signature-input'
        | 'signature'
        | 'content-digest'
        | 'content-type'
        | 'host'
      const part = fc.constantFrom<Part>(
        'path',
        'query',
        'body',
        'signature-input',
        'signature',
        'content-digest',
        'content-type',
        'host',
      )
      await fc.assert(
        fc.asyncProperty(part, fc.nat(), visible, urlChar, async (which, at, byte, ch) => {
          const req = signFor(open, id, clock, {
            method: 'POST',
            path: '/v1/none?after=0&limit=20',
            body: '{"recipient":"x","body":{"n":1}}',
          })
          const [p, q] = req.path.split('?') as [string, string]
          const change = (s: string, i: number, c: string) => {
            const k = i % s.length
            const next = s[k] === c ? (c === 'A' ? 'B' : 'A') : c
            return s.slice(0, k) + next + s.slice(k + 1)
          }
          const mutated = { ...req, headers: { ...req.headers } }
          if (which === 'path') mutated.path = `${change(p, 1 + (at % (p.length - 1)), ch)}?${q}`
          else if (which === 'query') mutated.path = `${p}?${change(q, at, ch)}`
          else if (which === 'body') {
            const b = Buffer.from(req.body!)
            const k = at % b.length
            b[k] = b[k] === byte ? (byte === 0x21 ? 0x22 : byte - 1) : byte
            mutated.body = b
          } else {
            const c = String.fromCharCode(byte)
            mutated.headers[which] = change(req.headers[which]!, at, c)
          }
          const res = await send(open, mutated)
          // A change to only the pad bits of the signature's last base64 character spells the
          // same bytes, which RFC 8941 4.2.7 tells parsers to accept: the very signature, so
          // the request is admitted and reaches the (missing) route.
          if (
            which === 'signature' &&
            sameValue(req.headers.signature!, mutated.headers.signature!)
          ) {
            assert.equal(res.status, 404, `${which}: ${JSON.stringify(res.body)}`)
            return
          }
          assert.equal(res.status, 401, `${which}: ${JSON.stringify(res.body)}`)
          assert.ok(SIGNATURE_CODES.has(String(res.body.code)), String(res.body.code))
        }),
        { numRuns: 60 },
      )
    })

    test('a signature spelled with non-zero pad bits is the same signature (RFC 8941 4.2.7)', async () => {
      const id = createIdentity('test')
      const req = signFor(open, id, clock, { method: 'GET', path: '/v1/me' })
      const signature = req.headers.signature!
      // An Ed25519 signature is 64 bytes: its base64 ends in one character carrying 2 data bits
      // and 4 pad bits, then "==". Setting every pad bit keeps the bytes.
      const at = signature.indexOf('==') - 1
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
      const padded = alphabet[alphabet.indexOf(signature[at]!) | 0b1111]!
      assert.notEqual(padded, signature[at], 'the test needs pad bits to set')
      const spelled = `${signature.slice(0, at)}${padded}${signature.slice(at + 1)}`
      assert.ok(sameValue(signature, spelled))
      const res = await send(open, { ...req, headers: { ...req.headers, signature: spelled } })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      // The nonce is the same too: the original spelling is now a replay.
      const again = await send(open, req)
      assert.equal(again.status, 401, JSON.stringify(again.body))
    })

    test('the request quota answers 429 rate_limited with Retry-After; /v1/me still answers', async () => {
      const hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_QUOTA_REQUESTS_PER_DAY: '2' },
        { clock },
      )
      try {
        const id = createIdentity('test')
        for (let i = 0; i < 2; i++) {
          const ok = await send(hub, signFor(hub, id, clock, { method: 'GET', path: '/v1/none' }))
          assert.equal(ok.status, 404)
        }
        const over = await send(hub, signFor(hub, id, clock, { method: 'GET', path: '/v1/none' }))
        assert.equal(over.status, 429)
        assert.equal(over.body.code, 'rate_limited')
        assert.ok(Number(over.headers['retry-after']) > 0)
        const me = await send(hub, signFor(hub, id, clock, { method: 'GET', path: '/v1/me' }))
        assert.equal(me.status, 200)
        assert.equal((me.body as unknown as MeView).quotas.requestsPerDay.limit, 2)
      } finally {
        await hub.close()
      }
    })

    test('SignedClient calls any route, and waits out a short Retry-After once', async () => {
      const day = 24 * 60 * 60 * 1000
      const hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_QUOTA_REQUESTS_PER_DAY: '1' },
        { clock },
      )
      try {
        const id = createIdentity(`${hub.url}/.well-known/agent-net`)
        // The client waits on the hub's clock: each wait moves it, and is seen here.
        const slept: number[] = []
        const client = await SignedClient.connect(id.hub, id, {
          now: () => Math.floor(clock.now() / 1000),
          sleep: async (ms) => {
            slept.push(ms)
            clock.advance(ms)
          },
        })
        assert.equal((await client.me()).principal, id.principal)
        // One second before UTC midnight the quota resets in 1 s: within the client's 5 s wait.
        clock.set(Math.ceil(clock.now() / day) * day - 1000)
        assert.equal((await client.request('GET', '/v1/none')).status, 404)
        const answer = await client.request('GET', '/v1/none')
        assert.equal(answer.status, 404, 'the retry after Retry-After went through')
        assert.deepEqual(slept, [1000], 'one wait, of the Retry-After the hub answered')
        // A Retry-After longer than 5 s is answered at once, not waited out.
        const over = await client.request('GET', '/v1/none')
        assert.equal(over.status, 429)
        assert.ok(Number(over.headers.get('retry-after')) * 1000 > 5000)
        assert.deepEqual(slept, [1000], 'no wait for a Retry-After over the limit')
        await assert.rejects(client.call('GET', '/v1/none'), { code: 'rate_limited' })
      } finally {
        await hub.close()
      }
    })

    test('admission: pending until approved, then rejected and suspended, each with its code', async () => {
      const hub = await startTestHub(store, { BATON_ADMIN_TOKEN: ADMIN_TOKEN }, { clock })
      try {
        const id = createIdentity('test')
        const get = (p: string) => send(hub, signFor(hub, id, clock, { method: 'GET', path: p }))
        const meFirst = await get('/v1/me')
        assert.equal(meFirst.status, 200)
        assert.equal(meFirst.body.state, 'pending')
        const pending = await get('/v1/none')
        assert.equal(pending.status, 403)
        assert.equal(pending.body.code, 'admission_pending')

        const list = await call(hub, 'GET', '/admin/v1/principals?state=pending', {
          headers: admin(),
        })
        assert.equal(list.status, 200)
        assert.deepEqual(
          (list.body.principals as { principal: string }[]).map((p) => p.principal),
          [id.principal],
        )
        const enc = encodeURIComponent(id.principal)
        const decide = (d: string) =>
          call(hub, 'POST', `/admin/v1/principals/${enc}/${d}`, { headers: admin() })

        assert.equal((await decide('approve')).body.state, 'approved')
        assert.equal((await get('/v1/none')).status, 404)

        assert.equal((await decide('suspend')).body.state, 'suspended')
        const suspended = await get('/v1/none')
        assert.equal(suspended.status, 403)
        assert.equal(suspended.body.code, 'principal_suspended')
        assert.equal((await get('/v1/me')).body.state, 'suspended')

        assert.equal((await decide('reject')).body.state, 'rejected')
        const rejected = await get('/v1/none')
        assert.equal(rejected.status, 403)
        assert.equal(rejected.body.code, 'admission_rejected')
        assert.equal((await get('/v1/me')).body.state, 'rejected')
      } finally {
        await hub.close()
      }
    })

    test('the admin API refuses a wrong token, unknown principals and decisions, and is off without a token', async () => {
      const hub = await startTestHub(store, { BATON_ADMIN_TOKEN: ADMIN_TOKEN }, { clock })
      try {
        const none = await call(hub, 'GET', '/admin/v1/principals')
        assert.equal(none.body.code, 'admin_token_invalid')
        const wrong = await call(hub, 'GET', '/admin/v1/principals', {
          headers: admin(`${ADMIN_TOKEN}x`),
        })
        assert.equal(wrong.status, 401)
        assert.equal(wrong.body.code, 'admin_token_invalid')
        const missing = createIdentity('x').principal
        const unknown = await call(hub, 'POST', `/admin/v1/principals/${missing}/approve`, {
          headers: admin(),
        })
        assert.equal(unknown.status, 404)
        assert.equal(unknown.body.code, 'principal_not_found')
        const bad = await call(hub, 'POST', `/admin/v1/principals/${missing}/promote`, {
          headers: admin(),
        })
        assert.equal(bad.body.code, 'invalid_request')
        const badState = await call(hub, 'GET', '/admin/v1/principals?state=odd', {
          headers: admin(),
        })
        assert.equal(badState.body.code, 'invalid_request')
      } finally {
        await hub.close()
      }
      const off = await call(open, 'GET', '/admin/v1/principals', { headers: admin() })
      assert.equal(off.status, 403)
      assert.equal(off.body.code, 'admin_disabled')
    })

    test('a nonce is remembered in the database: a replay after a restart is refused, and the hub key stays', async () => {
      const hubs = await restartableHub(store, { BATON_ADMISSION: 'open' }, clock)
      try {
        const first = await hubs.start()
        const id = createIdentity('test')
        const req = signFor(first, id, clock, { method: 'GET', path: '/v1/me' })
        assert.equal((await send(first, req)).status, 200)
        const key = (
          (await call(first, 'GET', '/.well-known/agent-net')).body as unknown as DiscoveryDocument
        ).hubKey
        await first.stop()

        // The same authority: a request signed for one hub is refused by another as signed
        // for someone else, before its nonce is looked at.
        const second = await hubs.start({ BATON_PORT: new URL(first.url).port })
        try {
          const replay = await send(second, req)
          assert.equal(replay.status, 401)
          assert.equal(replay.body.code, 'signature_replayed')
          const again = (
            (await call(second, 'GET', '/.well-known/agent-net'))
              .body as unknown as DiscoveryDocument
          ).hubKey
          assert.deepEqual(again, key)
        } finally {
          await second.stop()
        }
      } finally {
        await hubs.drop()
      }
    })

    test('two hub instances on one database share the nonce store and the hub key', async () => {
      // Instances behind one load balancer share its public URL, which requests are signed for.
      const hubs = await restartableHub(
        store,
        { BATON_ADMISSION: 'open', BATON_PUBLIC_URL: 'https://hub.example' },
        clock,
      )
      try {
        const a = await hubs.start()
        const b = await hubs.start()
        try {
          const id = createIdentity('test')
          const req = signFor({ url: 'https://hub.example' }, id, clock, {
            method: 'GET',
            path: '/v1/me',
          })
          assert.equal((await send(a, req)).status, 200)
          assert.equal((await send(b, req)).body.code, 'signature_replayed')
          const keyOf = async (h: { url: string }) =>
            ((await call(h, 'GET', '/.well-known/agent-net')).body as unknown as DiscoveryDocument)
              .hubKey
          assert.deepEqual(await keyOf(a), await keyOf(b))
        } finally {
          await Promise.all([a.stop(), b.stop()])
        }
      } finally {
        await hubs.drop()
      }
    })

    test('cleanup prunes nonces once their signatures can no longer be fresh', async () => {
      const id = createIdentity('test')
      const req = signFor(open, id, clock, { method: 'GET', path: '/v1/me' })
      assert.equal((await send(open, req)).status, 200)
      const count = async () =>
        Number(
          (
            await open.ctx.database.db
              .selectFrom('signature_nonces')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('keyid', '=', id.principal)
              .executeTakeFirstOrThrow()
          ).n,
        )
      assert.equal(await count(), 1)
      clock.advance(61_000)
      await open.ctx.runCleanup()
      assert.equal(await count(), 0)
      const stale = await send(open, req)
      assert.equal(stale.body.code, 'signature_stale')
    })

    test('BATON_PUBLIC_URL pins the origin of @target-uri and of discovery', async () => {
      const hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_PUBLIC_URL: 'https://hub.example' },
        { clock },
      )
      try {
        const doc = (await call(hub, 'GET', '/.well-known/agent-net'))
          .body as unknown as DiscoveryDocument
        assert.equal(doc.apiBase, 'https://hub.example')
        const id = createIdentity('test')
        const external = signFor({ url: 'https://hub.example' }, id, clock, {
          method: 'GET',
          path: '/v1/me',
        })
        external.headers.host = new URL(hub.url).host
        assert.equal((await send(hub, external)).status, 200)
        const local = await send(hub, signFor(hub, id, clock, { method: 'GET', path: '/v1/me' }))
        assert.equal(local.body.code, 'signature_invalid')
      } finally {
        await hub.close()
      }
    })
  })
}

/** Whether two structured-field dictionaries say the same (the same keys, bytes and parameters). */
function sameValue(a: string, b: string): boolean {
  try {
    return isDeepStrictEqual(parseDictionary(a), parseDictionary(b))
  } catch {
    return false
  }
}
