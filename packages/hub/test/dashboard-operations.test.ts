import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { call, startTestHub, type TestHub, testStores } from './support.js'

// One read, two ways in: each page of the dashboard reads an operator operation, which the admin
// token reaches under /admin/v1/dashboard/ and the signed-in browser under /dashboard/api/.
const TOKEN = 'operator-token-for-the-dashboard-operations-test-7'

for (const store of testStores) {
  describe(`the dashboard's reads are operator operations (${store.name})`, () => {
    let hub: TestHub
    let cookie: string
    let handoff: string
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: TOKEN })
      const signIn = await call(hub, 'POST', '/dashboard/session', { body: { token: TOKEN } })
      assert.equal(signIn.status, 200)
      cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
      const created = await call(hub, 'POST', '/services/v1/handoff', {
        body: { payload: { step: 'operations' }, note: 'seen both ways' },
      })
      assert.equal(created.status, 201)
      handoff = String(created.body.handoff_id)
    })
    after(() => hub.close())

    /** The same read through the operation (admin token) and the page (session cookie). */
    async function both(admin: string, page: string) {
      const viaToken = await call(hub, 'GET', admin, { token: TOKEN })
      const viaPage = await call(hub, 'GET', page, { headers: { cookie } })
      assert.equal(viaToken.status, 200, `${admin}: ${JSON.stringify(viaToken.body)}`)
      assert.equal(viaPage.status, 200, `${page}: ${JSON.stringify(viaPage.body)}`)
      // The page adds the display labels of the did:keys it names; the data is the same.
      const { labels, ...shown } = viaPage.body
      return { viaToken: viaToken.body, shown, labels }
    }

    test('handoffs: the list, one handoff and its payload are the same data', async () => {
      const list = await both(
        '/admin/v1/dashboard/handoffs?state=open',
        '/dashboard/api/handoffs?state=open',
      )
      assert.deepEqual(list.viaToken, list.shown)
      const rows = list.viaToken.handoffs as { id: string; expired: boolean }[]
      assert.ok(rows.some((h) => h.id === handoff && h.expired === false))

      const one = await both(
        `/admin/v1/dashboard/handoffs/${handoff}`,
        `/dashboard/api/handoffs/${handoff}`,
      )
      assert.deepEqual(one.viaToken, one.shown)
      assert.equal(one.viaToken.note, 'seen both ways')
      assert.equal('payload' in one.viaToken, false, 'no payload unless asked')

      const admin = await call(hub, 'GET', `/admin/v1/dashboard/handoffs/${handoff}/payload`, {
        token: TOKEN,
      })
      const page = await call(hub, 'GET', `/dashboard/api/handoffs/${handoff}/payload`, {
        headers: { cookie },
      })
      assert.deepEqual(admin.body, { id: handoff, payload: { step: 'operations' } })
      assert.deepEqual(page.body, admin.body, 'revealed contents carry no labels')
    })

    test('the overview counts and the other pages agree between the two ways in', async () => {
      const overview = await both('/admin/v1/dashboard/overview', '/dashboard/api/overview')
      const { at: _a, activity: tokenActivity, ...tokenCounts } = overview.viaToken
      const { at: _b, activity: pageActivity, ...pageCounts } = overview.shown
      assert.deepEqual(tokenCounts, pageCounts)
      assert.ok((tokenCounts.handoffs as Record<string, number>).offered! >= 1)
      assert.deepEqual(
        (tokenActivity as { handoffMoves: number[] }).handoffMoves.length,
        (pageActivity as { handoffMoves: number[] }).handoffMoves.length,
      )
      for (const [admin, page] of [
        ['/admin/v1/dashboard/grants?status=live', '/dashboard/api/grants?status=live'],
        ['/admin/v1/dashboard/resources', '/dashboard/api/resources'],
        ['/admin/v1/dashboard/messages', '/dashboard/api/messages'],
        ['/admin/v1/dashboard/transfers', '/dashboard/api/transfers'],
        ['/admin/v1/dashboard/a2a', '/dashboard/api/a2a'],
        ['/admin/v1/dashboard/hops', '/dashboard/api/hops'],
        ['/admin/v1/principals', '/dashboard/api/principals'],
      ] as const) {
        const read = await both(admin, page)
        assert.deepEqual(read.viaToken, read.shown, admin)
      }
    })

    test('without the admin token the operations refuse; an unknown id is not_found', async () => {
      const anonymous = await call(hub, 'GET', '/admin/v1/dashboard/overview')
      assert.equal(anonymous.body.code, 'admin_token_invalid')
      const wrong = await call(hub, 'GET', '/admin/v1/dashboard/overview', { token: `${TOKEN}x` })
      assert.equal(wrong.body.code, 'admin_token_invalid')
      const missing = await call(hub, 'GET', '/admin/v1/dashboard/handoffs/ho_missing', {
        token: TOKEN,
      })
      assert.equal(missing.status, 404)
      assert.equal(missing.body.code, 'not_found')
      const page = await call(hub, 'GET', '/dashboard/api/handoffs/ho_missing', {
        headers: { cookie },
      })
      assert.equal(page.body.code, 'not_found')
    })

    test('the operations are in the OpenAPI document under their own tag', async () => {
      const doc = (await call(hub, 'GET', '/openapi.json')).body as {
        paths: Record<string, Record<string, { tags?: string[]; operationId?: string }>>
      }
      const entry = doc.paths['/admin/v1/dashboard/overview']?.get
      assert.equal(entry?.operationId, 'operatorOverview')
      assert.deepEqual(entry?.tags, ['dashboard'])
    })
  })
}
