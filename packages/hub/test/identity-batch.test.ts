import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient, signRequest } from '@baton/client'
import { startTestHub, type TestHub, testStores } from './support.js'

// Signed requests that arrive together are admitted set-based (one statement for their nonces,
// one for their quota); these races check that path gives the answers one request at a time does.
for (const store of testStores) {
  describe(`signed requests arriving together (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_QUOTA_REQUESTS_PER_DAY: '5',
      })
    })
    after(() => hub.close())

    test('one signed request sent 20 times at once is admitted once; the rest are replays', async () => {
      const identity = createIdentity(hub.url)
      const signed = signRequest({
        method: 'GET',
        url: `${hub.url}/v1/me`,
        privateKey: identity.privateKey,
        keyid: identity.principal,
      })
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          fetch(signed.url, { method: signed.method, headers: signed.headers }).then(async (r) => ({
            status: r.status,
            body: (await r.json()) as { code?: string; principal?: string },
          })),
        ),
      )
      assert.equal(answers.filter((a) => a.status === 200).length, 1)
      const replays = answers.filter((a) => a.status === 401)
      assert.equal(replays.length, 19)
      for (const r of replays) assert.equal(r.body.code, 'signature_replayed')
    })

    test('a request quota is exact when many requests race for its last uses', async () => {
      const agent = await SignedClient.connect(
        `${hub.url}/.well-known/agent-net`,
        createIdentity(hub.url),
        { maxRetryWaitMs: 0 },
      )
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => agent.request('GET', '/v1/resources')),
      )
      assert.equal(answers.filter((a) => a.status === 200).length, 5)
      const refused = answers.filter((a) => a.status === 429)
      assert.equal(refused.length, 7)
      for (const r of refused) {
        assert.equal((r.body as { code: string }).code, 'rate_limited')
        assert.ok(Number(r.headers.get('retry-after')) > 0)
      }
      assert.equal((await agent.me()).principal, agent.principal, '/v1/me is exempt from the quota')
    })
  })
}
