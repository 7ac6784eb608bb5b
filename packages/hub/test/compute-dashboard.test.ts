import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, signIn } from './browser.js'
import { signedAgent, startTestHub, type TestHub, testStores } from './support.js'

// The Compute page in a real browser: the queue, the live runtimes and the recent jobs,
// re-drawn live as a job is queued, claimed and ended.
const TOKEN = 'operator-token-for-the-compute-dashboard-tests-0123'

/** The little of the DOM the page functions below touch (the test compiles without the DOM lib). */
interface PageElement {
  textContent: string | null
}
interface PageWindow {
  document: { querySelector(selector: string): PageElement | null }
}

type Body = Record<string, unknown>

for (const store of testStores) {
  describe(`the Compute dashboard page (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let page: Page
    let alice: SignedClient
    let runtime: SignedClient
    const errors: string[] = []
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: TOKEN,
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
      })
      alice = await signedAgent(hub)
      runtime = await signedAgent(hub)
      browser = await launchBrowser()
      page = await (await browser.newContext()).newPage()
      page.on('pageerror', (e) => errors.push(String(e)))
    })
    after(async () => {
      await browser.close()
      await hub.close()
    })

    const textOf = (selector: string) =>
      page.evaluate(
        (s) => (globalThis as unknown as PageWindow).document.querySelector(s)?.textContent ?? null,
        selector,
      )
    const until = (selector: string, text: string) =>
      page.waitForFunction(
        ([s, t]) =>
          (globalThis as unknown as PageWindow).document.querySelector(s!)?.textContent === t,
        [selector, text],
        { timeout: 15_000 },
      )

    test('queue, live runtimes and a job moving from queued to succeeded, live', async () => {
      const beat = await runtime.request('POST', '/v1/compute/runtimes', {
        runtimeId: 'dash-runtime-0001',
        languages: ['json-expr-v1'],
      })
      assert.equal(beat.status, 200)

      await signIn(page, hub.url, TOKEN)
      await page.goto(`${hub.url}/dashboard/#/compute`)
      await page.waitForSelector('[data-worker="dash-runtime-0001"]')
      assert.equal(await textOf('[data-queue="json-expr-v1"] .queued'), '0')

      const sub = await alice.request<Body>('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { '+': [1, 2] },
        idempotencyKey: 'dashboard-job-0001',
      })
      assert.equal(sub.status, 201)
      const jobId = sub.body.jobId as string
      await until(`[data-job="${jobId}"] .job-state`, 'queued')
      await until('[data-queue="json-expr-v1"] .queued', '1')

      const claim = await runtime.request<Body>(
        'POST',
        '/v1/compute/runtimes/dash-runtime-0001/claim',
      )
      const job = claim.body.job as Body
      await until(`[data-job="${jobId}"] .job-state`, 'running')
      await until('[data-queue="json-expr-v1"] .running', '1')
      const done = await runtime.request<Body>('POST', `/v1/compute/jobs/${jobId}/result`, {
        leaseId: job.leaseId,
        ok: true,
        output: 3,
        steps: 3,
      })
      assert.equal(done.status, 200)
      await until(`[data-job="${jobId}"] .job-state`, 'succeeded')
      await until('[data-queue="json-expr-v1"] .running', '0')

      // a failed job shows its code; a stopped runtime leaves the page
      const bad = await alice.request<Body>('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: 1,
        idempotencyKey: 'dashboard-job-0002',
      })
      const badId = bad.body.jobId as string
      const second = (
        await runtime.request<Body>('POST', '/v1/compute/runtimes/dash-runtime-0001/claim')
      ).body.job as Body
      await runtime.request('POST', `/v1/compute/jobs/${badId}/result`, {
        leaseId: second.leaseId,
        ok: false,
        error: { code: 'compute_timeout', message: 'ran too long' },
      })
      await until(`[data-job="${badId}"] .job-error`, 'compute_timeout')
      await runtime.request('DELETE', '/v1/compute/runtimes/dash-runtime-0001')
      await page.reload()
      await page.waitForSelector('#content h2')
      assert.equal(await page.$('[data-worker="dash-runtime-0001"]'), null)
      assert.deepEqual(errors, [])
    })
  })
}
