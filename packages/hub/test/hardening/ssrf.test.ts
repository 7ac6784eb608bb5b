import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { checkNotifyUrl, postSignal } from '../../src/handoffs/notify.js'
import { isPublicAddress, resolvePublic, specialBlockOf } from '../../src/net/ssrf.js'
import { call, startTestHub, type TestHub, testStores } from '../support.js'

interface Vectors {
  refused: { url: string; why: string }[]
  accepted: { url: string; why: string }[]
  allowLoopback: { url: string; accepted: boolean; why: string }[]
}

const vectors = JSON.parse(
  readFileSync(path.join(import.meta.dirname, '../vectors/ssrf-urls.json'), 'utf8'),
) as Vectors

const accepts = (url: string, allowLoopback = false) => {
  try {
    checkNotifyUrl(url, allowLoopback)
    return true
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'invalid_notify_url', url)
    return false
  }
}

describe('notify_url SSRF vectors', () => {
  test('negative vectors outnumber positive ones', () => {
    assert.ok(vectors.refused.length > vectors.accepted.length)
  })

  for (const v of vectors.refused) {
    test(`refused: ${v.url} (${v.why})`, () => assert.equal(accepts(v.url), false))
  }
  for (const v of vectors.accepted) {
    test(`accepted: ${v.url} (${v.why})`, () => assert.equal(accepts(v.url), true))
  }
  for (const v of vectors.allowLoopback) {
    test(`with loopback allowed, ${v.url}: ${v.accepted} (${v.why})`, () =>
      assert.equal(accepts(v.url, true), v.accepted))
  }
})

const v4 = (a: number, b: number, c: number, d: number) => `${a}.${b}.${c}.${d}`
const hex = (n: number) => n.toString(16)
/** The IPv6 forms that carry an IPv4 address: mapped, NAT64 well-known and 6to4. */
const carriers = (a: number, b: number, c: number, d: number) => [
  `::ffff:${v4(a, b, c, d)}`,
  `64:ff9b::${hex((a << 8) | b)}:${hex((c << 8) | d)}`,
  `2002:${hex((a << 8) | b)}:${hex((c << 8) | d)}::1`,
]
const octet = fc.integer({ min: 0, max: 255 })

describe('addresses that carry an IPv4 address are judged by it', () => {
  test('a carried private or loopback address is refused in every form', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(10, 127),
        octet,
        octet,
        octet,
        (a, b, c, d) =>
          !isPublicAddress(v4(a, b, c, d)) &&
          carriers(a, b, c, d).every((addr) => !isPublicAddress(addr)),
      ),
    )
  })

  test('a carried public address is as public as itself', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), octet, octet, octet, (a, b, c, d) =>
        carriers(a, b, c, d).every((addr) => isPublicAddress(addr)),
      ),
    )
  })

  test('any string is answered, never thrown on', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.webUrl(),
          fc.string(),
          fc.ipV6().map((a) => `http://[${a}]/`),
        ),
        (raw) => {
          accepts(raw)
          return true
        },
      ),
    )
  })

  test('each refusal names its registry block', () => {
    assert.equal(specialBlockOf('192.88.99.1')?.source, 'RFC 7526')
    assert.equal(specialBlockOf('64:ff9b:1::7f00:1')?.source, 'RFC 8215')
    assert.equal(specialBlockOf('2002:7f00:1::')?.name, '6to4')
    assert.equal(specialBlockOf('::7f00:1')?.name, 'IPv4-compatible (deprecated)')
    assert.equal(specialBlockOf('8.8.8.8'), undefined)
  })
})

describe('at delivery, every resolved address is checked', () => {
  let hits = 0
  let url = ''
  const server = createServer((req, res) => {
    hits++
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://rebind.example.com:${(server.address() as AddressInfo).port}/hook`
  })
  after(() => new Promise<void>((r) => server.close(() => r())))

  test('one special answer among public ones refuses the name', async () => {
    const answers = [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]
    assert.equal(await resolvePublic(new URL(url), false, async () => answers), undefined)
    const outcome = await postSignal(url, '{}', {
      allowLoopback: false,
      timeoutMs: 1000,
      resolve: async () => answers,
    })
    assert.equal(outcome, 'refused-address')
    assert.equal(hits, 0)
  })

  test('a name resolving to NAT64 or 6to4 forms of loopback is refused', async () => {
    for (const address of ['64:ff9b::7f00:1', '2002:7f00:1::', '::ffff:127.0.0.1']) {
      const outcome = await postSignal(url, '{}', {
        allowLoopback: true,
        timeoutMs: 1000,
        resolve: async () => [{ address, family: 6 }],
      })
      assert.equal(outcome, 'refused-address', address)
    }
    assert.equal(hits, 0)
  })

  test('the connection goes to the checked address: a second, rebinding answer is never asked for', async () => {
    const answers = [
      [{ address: '127.0.0.1', family: 4 }],
      [{ address: '169.254.169.254', family: 4 }],
    ]
    let lookups = 0
    const outcome = await postSignal(url, '{}', {
      allowLoopback: true,
      timeoutMs: 2000,
      resolve: async () => answers[lookups++]!,
    })
    assert.equal(outcome, 'delivered')
    assert.equal(lookups, 1)
    assert.equal(hits, 1)
  })
})

for (const store of testStores) {
  describe(`notify_url refused at create time (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store)
    })
    after(() => hub.close())

    test('the issue vectors answer 400 invalid_notify_url and create nothing', async () => {
      for (const notify_url of [
        'http://[::127.0.0.1]/',
        'http://[64:ff9b:1::7f00:1]/',
        'http://[2002:7f00:1::]/',
        'http://192.88.99.1/',
        'http://localhost./',
        'http://2130706433/',
        'http://0x7f.1/',
        'http://user:pw@example.com/',
      ]) {
        const res = await call(hub, 'POST', '/services/v1/handoff', {
          body: { payload: { t: 1 }, notify_url },
        })
        assert.equal(res.status, 400, notify_url)
        assert.equal(res.body.code, 'invalid_notify_url', notify_url)
        assert.equal(res.body.field, 'notify_url')
        assert.equal(typeof res.body.fix, 'string')
      }
      const rows = await hub.ctx.database.db.selectFrom('handoffs').select('id').execute()
      assert.equal(rows.length, 0)
    })
  })
}
