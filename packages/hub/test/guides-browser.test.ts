// A real browser reads the walkthrough guide, anonymously, on a desktop and a phone width.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchBrowser } from './browser.js'
import { startTestHub, type TestHub, testStores } from './support.js'

/** Where screenshots go when a run asks for them, to look at the pages by eye. */
const SHOTS = process.env.BATON_TEST_SCREENSHOTS

interface Layout {
  scrollWidth: number
  innerWidth: number
  tables: number
  codeBlocks: number
  scrollablePre: boolean
  styled: boolean
  pipes: boolean
}

for (const store of testStores) {
  describe(`the walkthrough guide in a browser (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    before(async () => {
      hub = await startTestHub(store)
      browser = await launchBrowser()
    })
    after(async () => {
      await browser.close()
      await hub.close()
    })

    for (const [width, height] of [
      [1280, 900],
      [390, 844],
    ] as const) {
      test(`at ${width} px the walkthrough is rendered, styled and never wider than the page`, async () => {
        const context = await browser.newContext({ viewport: { width, height } })
        const page = await context.newPage()
        const violations: string[] = []
        page.on('console', (m) => {
          if (m.type() === 'error') violations.push(m.text())
        })
        try {
          for (const name of ['walkthrough', 'connect']) {
            const res = await page.goto(`${hub.url}/docs/${name}`)
            assert.equal(res?.status(), 200)
            const layout = (await page.evaluate(`(() => {
              const pre = document.querySelector('pre')
              return {
                scrollWidth: document.documentElement.scrollWidth,
                innerWidth: window.innerWidth,
                tables: document.querySelectorAll('article table').length,
                codeBlocks: document.querySelectorAll('article pre > code').length,
                scrollablePre: getComputedStyle(pre).overflowX === 'auto',
                styled: getComputedStyle(document.querySelector('header.top')).position === 'sticky',
                pipes: /^\\s*\\|.*\\|\\s*$/m.test(document.querySelector('article').innerText),
              }
            })()`)) as Layout
            assert.ok(layout.scrollWidth <= layout.innerWidth, `${name}: ${JSON.stringify(layout)}`)
            assert.ok(layout.codeBlocks > 5, name)
            assert.equal(layout.scrollablePre, true, name)
            assert.equal(layout.styled, true, `${name}: the stylesheet is loaded`)
            assert.equal(layout.pipes, false, name)
            if (name === 'connect') assert.equal(layout.tables, 1)
            if (SHOTS) {
              mkdirSync(SHOTS, { recursive: true })
              await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`) })
            }
          }
          assert.deepEqual(violations, [], 'the CSP blocks nothing the page needs')
        } finally {
          await context.close()
        }
      })
    }
  })
}
