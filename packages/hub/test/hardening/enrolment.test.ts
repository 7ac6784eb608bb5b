import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, type Identity, signRequest } from '@baton/client'
import { ManualClock } from '../../src/clock.js'
import { startTestHub, type TestHub, testStores } from '../support.js'

const LIMIT = 3
const HOUR_MS = 60 * 60 * 1000

for (const store of testStores) {
  describe(`new keys per client address are rate-limited (${store.name})`, () => {
    let hub: TestHub
    // The middle of an hour, so a window boundary falls where the test puts it.
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 9, 30))
    before(async () => {
      hub = await startTestHub(
        store,
        {
          BATON_ENROL_PER_ADDRESS_PER_HOUR: String(LIMIT),
          // Client addresses come through a trusted proxy, which serves the hub's public URL.
          BATON_TRUST_PROXY: '127.0.0.1',
          BATON_PUBLIC_URL: 'http://hub.test',
        },
        { clock },
      )
    })
    after(() => hub.close())

    /** A signed `GET /v1/me` by `id`, from `address` as the trusted proxy tells it. */
    async function me(id: Identity, address: string) {
      const signed = signRequest({
        method: 'GET',
        url: 'http://hub.test/v1/me',
        privateKey: id.privateKey,
        keyid: id.principal,
        created: Math.floor(clock.now() / 1000),
      })
      const res = await fetch(`${hub.url}/v1/me`, {
        headers: { ...signed.headers, 'x-forwarded-for': address },
      })
      return { id, status: res.status, headers: res.headers, body: (await res.json()) as never }
    }

    /** A fresh key's first signed request, from `address`. */
    const enrol = (address: string) => me(createIdentity('test'), address)

    const enrolled = async () => (await hub.ctx.identity.list({ limit: 500 })).principals.length

    test('past the limit a new key is refused 429 with Retry-After and no principal; known keys go on', async () => {
      const before = await enrolled()
      const first = []
      for (let i = 0; i < LIMIT; i++) {
        const r = await enrol('198.51.100.7')
        assert.equal(r.status, 200, JSON.stringify(r.body))
        first.push(r.id)
      }
      const over = await enrol('198.51.100.7')
      assert.equal(over.status, 429)
      assert.equal((over.body as { code: string }).code, 'rate_limited')
      const retryAfter = Number(over.headers.get('retry-after'))
      assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`)
      assert.equal(await enrolled(), before + LIMIT)
      const list = (await hub.ctx.identity.list({ limit: 500 })).principals
      assert.ok(!list.some((p) => p.principal === over.id.principal))

      // A key already enrolled is not a new key; another address has its own count.
      assert.equal((await me(first[0]!, '198.51.100.7')).status, 200)
      assert.equal((await enrol('198.51.100.8')).status, 200)

      // The next hour the address may enrol again.
      clock.advance(HOUR_MS)
      assert.equal((await enrol('198.51.100.7')).status, 200)
    })

    test('concurrent first requests from one address enrol exactly the limit', async () => {
      const before = await enrolled()
      const results = await Promise.all(
        Array.from({ length: LIMIT * 4 }, () => enrol('203.0.113.50')),
      )
      const ok = results.filter((r) => r.status === 200).length
      const limited = results.filter(
        (r) => r.status === 429 && (r.body as { code: string }).code === 'rate_limited',
      ).length
      assert.equal(ok, LIMIT)
      assert.equal(limited, LIMIT * 3)
      assert.equal(await enrolled(), before + LIMIT)
    })
  })
}
