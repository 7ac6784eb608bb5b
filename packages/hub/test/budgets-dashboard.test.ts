import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BudgetClient, HopClient } from '@baton/client'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, signIn } from './browser.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// The budget panels in a real browser (issue 28): on the hop page, each hop of a chain with its
// ledger, re-drawn live as spend arrives and a crossing is refused; on the transfer page, the
// budgets of hops whose offers reference the transfer. At 1280 and 390 px, nothing scrolls
// sideways.
const TOKEN = 'operator-token-for-the-budget-dashboard-tests-0123'
const SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
}

/** The little of the DOM the page functions below touch (the test compiles without the DOM lib). */
interface PageElement {
  textContent: string | null
  clientWidth: number
  scrollWidth: number
  getBoundingClientRect(): { left: number; right: number }
  querySelector(selector: string): PageElement | null
}
interface PageWindow {
  document: {
    documentElement: PageElement
    querySelector(selector: string): PageElement | null
    querySelectorAll(selector: string): ArrayLike<PageElement>
  }
}

for (const store of testStores) {
  describe(`the budget panels of the dashboard (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let page: Page
    const errors: string[] = []
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open', BATON_ADMIN_TOKEN: TOKEN })
      browser = await launchBrowser()
      page = await (await browser.newContext({ viewport: SIZES.desktop })).newPage()
      page.on('pageerror', (e) => errors.push(String(e)))
    })
    after(async () => {
      await browser.close()
      await hub.close()
    })

    /** The text of one figure of a hop's budget panel on the page. */
    const figure = (hop: string, name: string) =>
      page.evaluate(
        ([h, n]) =>
          (globalThis as unknown as PageWindow).document.querySelector(
            `[data-budget="${h}"] [data-figure="${n}"] strong`,
          )?.textContent ?? null,
        [hop, name] as const,
      )
    const untilFigure = (hop: string, name: string, text: string) =>
      page.waitForFunction(
        ([h, n, t]) =>
          (globalThis as unknown as PageWindow).document.querySelector(
            `[data-budget="${h}"] [data-figure="${n}"] strong`,
          )?.textContent === t,
        [hop, name, text] as const,
        { timeout: 15_000 },
      )
    /** Whether the page, or a budget panel inside its box, is wider than the window. */
    const overflows = () =>
      page.evaluate(() => {
        const doc = (globalThis as unknown as PageWindow).document
        const root = doc.documentElement
        const panels = Array.from(doc.querySelectorAll('.budget-panel'))
        return {
          page: root.scrollWidth > root.clientWidth + 1,
          panels: panels.filter((p) => p.getBoundingClientRect().right > root.clientWidth + 1)
            .length,
        }
      })
    const atBothSizes = async (check: () => Promise<void>) => {
      for (const viewport of Object.values(SIZES)) {
        await page.setViewportSize(viewport)
        await page.waitForFunction(
          (w) => (globalThis as unknown as PageWindow).document.documentElement.clientWidth <= w,
          viewport.width,
        )
        await check()
      }
      await page.setViewportSize(SIZES.desktop)
    }

    test('the hop page draws each ledger of the chain, live, and the transfer page its budgets', async () => {
      const assistant = await signedAgent(hub)
      const planner = await signedAgent(hub)
      const coder = await signedAgent(hub)
      // The planner's transfer, referenced by its offer to the coder.
      const staged = await planner.call<{ transferId: string; checksum: string }>(
        'POST',
        '/v1/transfers',
        { snapshot: { systemPrompt: 'p', messages: [{ role: 'user', content: 'budgets' }] } },
      )
      const first = await new HopClient(assistant).offer({
        to: planner.principal,
        dialog: 'ctx-budget-ui',
        budget: { unit: 'usd', amountMicros: 1_000_000 },
      })
      const second = await new HopClient(planner).offer({
        to: coder.principal,
        dialog: 'ctx-budget-ui',
        after: first.handoff,
        budget: { unit: 'usd', amountMicros: 600_000 },
        refs: [
          {
            kind: 'digest',
            digest: staged.checksum.slice('sha-256:'.length),
            transfer: staged.transferId,
          },
        ],
      })
      const h1 = first.signed.digest
      const h2 = second.signed.digest

      await signIn(page, hub.url, TOKEN)
      await page.goto(`${hub.url}/dashboard/#/hops/${h2}`)
      await page.waitForSelector(`[data-budget="${h2}"]`)
      assert.equal(await figure(h1, 'reserved'), '0.6 usd')
      assert.equal(await figure(h1, 'remaining'), '0.4 usd')
      assert.equal(await figure(h2, 'remaining'), '0.6 usd')

      // Spend arrives: both ledgers are drawn again from the bus event.
      const budgets = new BudgetClient(coder)
      await budgets.spend(h2, 100_000, { idempotencyKey: 'ui-1' })
      await untilFigure(h2, 'spent', '0.1 usd')
      await untilFigure(h1, 'reserved', '0.5 usd')
      assert.equal(await figure(h1, 'spent'), '0.1 usd')
      // A spend that would cross is refused: the panel counts it and lists it with its receipt.
      await assert.rejects(budgets.spend(h2, 600_000, { idempotencyKey: 'ui-2' }), {
        code: 'budget_exceeded',
      })
      await page.waitForSelector(`[data-budget="${h2}"] .ledger-entries .crossing .receipt`, {
        timeout: 15_000,
      })
      assert.equal(await figure(h2, 'spent'), '0.1 usd')
      await atBothSizes(async () => {
        assert.deepEqual(await overflows(), { page: false, panels: 0 })
      })

      // The transfer's page shows the budget of the hop that references it.
      await page.goto(`${hub.url}/dashboard/#/transfers/${staged.transferId}`)
      await page.waitForSelector(`#delegation-budgets [data-budget="${h2}"]`)
      assert.equal(await figure(h2, 'remaining'), '0.5 usd')
      await atBothSizes(async () => {
        assert.deepEqual(await overflows(), { page: false, panels: 0 })
      })
      // Cancel releases: the panel there shows the budget closed and what it released.
      await new HopClient(planner).answer(second.handoff.offer as string, 'canceled')
      await untilFigure(h2, 'released', '0.5 usd')
      assert.deepEqual(errors, [])
    })
  })
}
