import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { HopClient } from '@baton/client'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, signIn } from './browser.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// The Hops page in a real browser: a delegation chain drawn hop by hop, with each hop's state,
// re-drawn live when a status arrives.
const TOKEN = 'operator-token-for-the-hop-dashboard-tests-012345'

/** The little of the DOM the page functions below touch (the test compiles without the DOM lib). */
interface PageElement {
  textContent: string | null
  getAttribute(name: string): string | null
  querySelector(selector: string): PageElement | null
}
interface PageWindow {
  document: { querySelectorAll(selector: string): ArrayLike<PageElement> }
}

for (const store of testStores) {
  describe(`the Hops dashboard page (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let page: Page
    const errors: string[] = []
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: TOKEN })
      browser = await launchBrowser()
      page = await (await browser.newContext()).newPage()
      page.on('pageerror', (e) => errors.push(String(e)))
    })
    after(async () => {
      await browser.close()
      await hub.close()
    })

    const hopsOnPage = () =>
      page.evaluate(() =>
        Array.from(
          (globalThis as unknown as PageWindow).document.querySelectorAll('[data-hop]'),
        ).map((el) => [el.getAttribute('data-hop'), el.querySelector('.hop-state')?.textContent]),
      )

    test('a chain of two hops, each with its state, updated live', async () => {
      const assistant = new HopClient(await signedAgent(hub))
      const plannerClient = await signedAgent(hub)
      const planner = new HopClient(plannerClient)
      const coderClient = await signedAgent(hub)
      const coder = new HopClient(coderClient)
      const first = await assistant.offer({ to: plannerClient.principal, dialog: 'ctx-ui' })
      const second = await planner.offer({
        to: coderClient.principal,
        dialog: 'ctx-ui',
        after: first.handoff,
      })

      await signIn(page, hub.url, TOKEN)
      await page.goto(`${hub.url}/dashboard/#/hops/${second.signed.digest}`)
      await page.waitForSelector('#hop-chain [data-hop]')
      assert.deepEqual(await hopsOnPage(), [
        [first.signed.digest, 'offered'],
        [second.signed.digest, 'offered'],
      ])
      await coder.answer(second.handoff.offer as string, 'accepted')
      await page.waitForFunction(
        (digest) =>
          Array.from(
            (globalThis as unknown as PageWindow).document.querySelectorAll(
              `[data-hop="${digest}"] .hop-state`,
            ),
          ).some((el) => el.textContent === 'accepted'),
        second.signed.digest,
        { timeout: 15_000 },
      )
      // A cancel raced by a late completion: the hop reads canceled, the outcome beside it.
      await planner.answer(second.handoff.offer as string, 'canceled')
      await coder.answer(second.handoff.offer as string, 'completed')
      await page.waitForFunction(
        (digest) =>
          (globalThis as unknown as PageWindow).document
            .querySelectorAll(`[data-hop="${digest}"] .hop-outcome`)[0]
            ?.textContent?.includes('completed') === true,
        second.signed.digest,
        { timeout: 15_000 },
      )
      assert.deepEqual((await hopsOnPage())[1], [second.signed.digest, 'canceled'])
      await page.goto(`${hub.url}/dashboard/#/hops`)
      await page.waitForSelector(`a[href="#/hops/${second.signed.digest}"]`)
      assert.deepEqual(errors, [])
    })
  })
}
