import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createIdentity } from '@baton/client'
import type { Browser, Page } from 'playwright-core'
import { enrolPrincipals } from '../../src/identity/store.js'
import { launchBrowser, signIn } from '../browser.js'
import { signedAgent, startTestHub, type TestHub, testStores } from '../support.js'

const TOKEN = 'operator-token-for-the-admission-pages-0123456789'

interface PageDocument {
  querySelector(selector: string): { dataset: Record<string, string | undefined> } | null
}

for (const store of testStores) {
  describe(`the admission page reaches a key behind a flood, page by page (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let page: Page
    let genuine: string

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: TOKEN })
      const at = Date.now() - 60_000
      await enrolPrincipals(
        hub.ctx.database.db,
        Array.from({ length: 250 }, () => ({
          principal: createIdentity('flood').principal,
          public_key: randomBytes(32).toString('base64url'),
          state: 'pending',
          enrolled_at: at,
          decided_at: null,
        })),
      )
      genuine = (await signedAgent(hub)).principal
      browser = await launchBrowser()
      page = await (await browser.newContext()).newPage()
    })
    after(async () => {
      await browser?.close()
      await hub?.close()
    })

    const loaded = (p: Page) =>
      p.waitForFunction(
        () =>
          (globalThis as unknown as { document: PageDocument }).document.querySelector('#view')
            ?.dataset.loadedAt !== undefined,
      )

    test('Next page walks the queue to the genuine key; First page returns', async () => {
      await signIn(page, hub.url, TOKEN)
      await page.goto(`${hub.url}/dashboard/#/admission`)
      await loaded(page)
      const row = `tr[data-principal="${genuine}"]`
      let pages = 1
      while ((await page.locator(row).count()) === 0) {
        assert.ok(pages < 10, 'the genuine key is on some page')
        const next = page.locator('#next-page')
        assert.equal(await next.count(), 1, 'a page before the key offers the next one')
        // The page it leaves was loaded at this moment; the next one is another load.
        const shown = await page.evaluate(
          () =>
            (globalThis as unknown as { document: PageDocument }).document.querySelector('#view')
              ?.dataset.loadedAt,
        )
        await next.click()
        await page.waitForFunction(
          (before) =>
            (globalThis as unknown as { location: { hash: string } }).location.hash.includes(
              'cursor=',
            ) &&
            (globalThis as unknown as { document: PageDocument }).document.querySelector('#view')
              ?.dataset.loadedAt !== before,
          shown,
        )
        await page.waitForSelector('nav.pager a[data-focus-key="page:first"]')
        pages++
      }
      assert.equal(pages, 3, '100 keys a page: the 251st enrolment is on the third')
      assert.equal(await page.locator('#next-page').count(), 0, 'the last page offers no next')
      await page.click(`${row} button[data-decide=approve]`)
      await page.waitForSelector(row, { state: 'detached' })
      assert.equal((await hub.ctx.identity.get(genuine)).state, 'approved')
      await page.click('nav.pager a[data-focus-key="page:first"]')
      await page.waitForFunction(
        () =>
          !(globalThis as unknown as { location: { hash: string } }).location.hash.includes(
            'cursor=',
          ),
      )
      await page.waitForSelector('#next-page')
    })
  })
}
