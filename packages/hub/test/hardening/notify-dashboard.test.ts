import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { ManualClock } from '../../src/clock.js'
import { launchBrowser, signIn } from '../browser.js'
import { call, startTestHub, type TestHub, testStores } from '../support.js'

const TOKEN = 'operator-token-for-the-notify-dashboard-test-0123456789'

// The view reads the same route on both stores (covered by notify-outbox.test.ts); one is enough.
const store = testStores[0]!

describe(`dashboard Notify view in the browser (${store.name})`, () => {
  let hub: TestHub
  let browser: Browser
  let hits = 0
  const receiver = createServer((req, res) => {
    hits++
    req.resume()
    req.on('end', () => res.writeHead(503).end())
  })
  let origin = ''
  before(async () => {
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
    hub = await startTestHub(
      store,
      { BATON_ADMIN_TOKEN: TOKEN, BATON_NOTIFY_ALLOW_LOOPBACK: 'true' },
      { clock: new ManualClock() },
    )
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await hub?.close()
    await new Promise<void>((r) => receiver.close(() => r()))
  })

  test('shows the pending signal by its receiver origin, without the path', async () => {
    const created = await call(hub, 'POST', '/services/v1/handoff', {
      body: { payload: { t: 1 }, notify_url: `${origin}/private-path` },
    })
    const h = created.body as { handoff_id: string; receiver_token: string }
    const moved = await call(hub, 'POST', `/services/v1/handoff/${h.handoff_id}/accepted`, {
      token: h.receiver_token,
      body: { from: 'offered' },
    })
    assert.equal(moved.status, 200)
    await hub.ctx.notifier.drain()
    assert.equal(hits, 1)

    const page = await (await browser.newContext()).newPage()
    await signIn(page, hub.url, TOKEN)
    await page.goto(`${hub.url}/dashboard/#/notify`)
    await page.waitForSelector('[data-stat="Pending"]')
    assert.equal(await page.textContent('h1.page'), 'Notify queue')
    assert.equal(await page.textContent('[data-stat="Pending"]'), '1')
    assert.equal(await page.textContent('[data-stat="Dead"]'), '0')
    const content = (await page.textContent('#content')) ?? ''
    assert.ok(content.includes(origin))
    assert.ok(content.includes(h.handoff_id))
    assert.ok(!content.includes('private-path'))
  })
})
