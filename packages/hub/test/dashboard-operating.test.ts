import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { HopClient, type SignedClient } from '@baton/client'
import { DEFAULT_MACHINE } from '@baton/protocol'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, signIn } from './browser.js'
import {
  batonBin,
  call,
  exited,
  repoRoot,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
} from './support.js'

// What an operator needs to tell agents and work apart: labels beside every did:key, an A2A
// page, counts for A2A, compute and hops, and pages that hold their shape at 1280 and 390 px.
const TOKEN = 'operator-token-for-the-operating-dashboard-0123456'
const ARTIFACTS = path.join(repoRoot, 'artifacts/dashboard')
const SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const
const HOSTILE = '<img src=x onerror=alert(1)>'
type Body = Record<string, unknown>

/** The little of the DOM the page functions below touch (the test compiles without the DOM lib). */
interface Rect {
  left: number
  right: number
  top: number
  bottom: number
  width: number
  height: number
}
interface El {
  textContent: string | null
  title: string
  scrollWidth: number
  clientWidth: number
  placeholder: string
  children: ArrayLike<El>
  getAttribute(name: string): string | null
  getBoundingClientRect(): Rect
  querySelector(selector: string): El | null
  querySelectorAll(selector: string): ArrayLike<El>
}
interface Win {
  document: {
    documentElement: El
    querySelector(selector: string): El | null
    querySelectorAll(selector: string): ArrayLike<El>
    createElement(tag: string): {
      getContext(kind: string): { font: string; measureText(t: string): { width: number } }
    }
  }
  getComputedStyle(el: El): Record<string, string>
  alerted?: boolean
}

for (const store of testStores) {
  describe(`the dashboard for operating Baton (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let page: Page
    let planner: SignedClient
    let coder: SignedClient
    let hostile: SignedClient
    let hopDigest = ''
    let taskId = ''
    let transferId = ''
    let resourceId = ''
    const errors: string[] = []
    const shots = store.name === 'sqlite'

    before(async () => {
      mkdirSync(ARTIFACTS, { recursive: true })
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: TOKEN,
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
      })
      planner = await signedAgent(hub)
      coder = await signedAgent(hub)
      hostile = await signedAgent(hub)
      await planner.setLabel('planner')
      await coder.setLabel('coder')
      await hostile.setLabel(HOSTILE)

      // A hop the coder accepted: a chain to draw.
      const offer = await new HopClient(planner).offer({ to: coder.principal, dialog: 'ops-ui' })
      hopDigest = offer.signed.digest
      await new HopClient(coder).answer(offer.handoff.offer as string, 'accepted')

      // An A2A task from the hostile-labelled agent to the coder, with a second event.
      const sent = await hub.ctx.a2a.send(hostile.principal, {
        tenant: coder.principal,
        message: { messageId: 'ops-ui-1', role: 'ROLE_USER', parts: [{ text: 'secret words' }] },
        configuration: { returnImmediately: true },
      })
      taskId = sent.task.id
      await hub.ctx.a2a.cancel(hostile.principal, { id: taskId })

      // A compute job that succeeded.
      await coder.request('POST', '/v1/compute/runtimes', {
        runtimeId: 'ops-runtime-0001',
        languages: ['json-expr-v1'],
      })
      const job = await planner.request<Body>('POST', '/v1/compute/jobs', {
        language: 'json-expr-v1',
        program: { '+': [1, 2] },
        idempotencyKey: 'ops-job-0001',
      })
      const claim = await coder.request<Body>('POST', '/v1/compute/runtimes/ops-runtime-0001/claim')
      await coder.request('POST', `/v1/compute/jobs/${job.body.jobId}/result`, {
        leaseId: (claim.body.job as Body).leaseId,
        ok: true,
        output: 3,
        steps: 3,
      })

      // A transfer over its budget, with a rate.
      const admin = { authorization: `Bearer ${TOKEN}` }
      const mint = async (id: string, body: Body) =>
        (await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, { body, headers: admin })).body
          .token as string
      const staged = await planner.request<Body>('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'Plan.', messages: [] },
      })
      transferId = staged.body.transferId as string
      const params = { tier: 'standard', budgetMicros: 2_000_000, rateMicrosPerSecond: 10_000 }
      await planner.request('POST', `/v1/transfers/${transferId}/provision`, {
        ...params,
        token: await mint(transferId, { scope: 'provision', ...params }),
      })
      await coder.request('POST', `/v1/transfers/${transferId}/claim`)
      await coder.request('POST', `/v1/transfers/${transferId}/push`, {
        checksum: staged.body.checksum,
      })
      await planner.request('POST', `/v1/transfers/${transferId}/activate`, {
        token: await mint(transferId, { scope: 'activate' }),
      })
      await coder.request('POST', `/v1/transfers/${transferId}/usage`, {
        idempotencyKey: 'ops-u1',
        amountMicros: 2_008_680,
      })

      // A handoff to list.
      await call(hub, 'POST', '/services/v1/handoff', { body: { payload: { step: 1 } } })

      // A message from the planner to the coder, and the planner's resource granted to the coder.
      await planner.request('POST', '/v1/messages', {
        recipient: coder.principal,
        body: { step: 1 },
        idempotencyKey: 'ops-message-1',
      })
      const resource = await planner.request<Body>('POST', '/v1/resources', {
        namespace: 'ops',
        kind: 'note/v1',
        data: { text: 'plan' },
      })
      resourceId = resource.body.id as string
      await planner.request('POST', '/v1/capabilities', {
        resourceId,
        subject: coder.principal,
        actions: ['resource:read'],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      })

      browser = await launchBrowser()
      const context = await browser.newContext({ viewport: SIZES.desktop })
      await context.addInitScript(
        'globalThis.__name = (fn) => fn; globalThis.alert = () => { globalThis.alerted = true }',
      )
      page = await context.newPage()
      page.on('pageerror', (e) => errors.push(String(e)))
      await signIn(page, hub.url, TOKEN)
    })
    after(async () => {
      await browser?.close()
      await hub?.close()
    })

    const go = async (hash: string, selector: string) => {
      await page.goto(`${hub.url}/dashboard/${hash}`)
      await page.waitForSelector(selector)
    }
    /** Runs `check` at both sizes, keeping a screenshot of each on SQLite. */
    const atBothSizes = async (name: string, check: (size: string) => Promise<void>) => {
      for (const [size, viewport] of Object.entries(SIZES)) {
        await page.setViewportSize(viewport)
        await page.waitForFunction(
          (w) => (globalThis as unknown as Win).document.documentElement.clientWidth <= w,
          viewport.width,
        )
        if (shots) {
          await page.screenshot({
            path: path.join(ARTIFACTS, `ops-${name}-${size}.png`),
            fullPage: true,
          })
        }
        await check(size)
      }
      await page.setViewportSize(SIZES.desktop)
    }
    const pageScrollsSideways = () =>
      page.evaluate(() => {
        const d = (globalThis as unknown as Win).document.documentElement
        return d.scrollWidth > d.clientWidth + 1
      })

    test('labels sit beside the did:key everywhere, escaped, the did:key in the title', async () => {
      await go('#/admission?state=all', `[data-label="planner"]`)
      await atBothSizes('labels', async (size) => {
        const seen = await page.evaluate(
          ([p, h]) => {
            const doc = (globalThis as unknown as Win).document
            const row = (principal: string) =>
              doc.querySelector(`tr[data-principal="${principal}"]`)
            const label = (principal: string) => row(principal)?.querySelector('.who-label')
            const id = row(p!)?.querySelector('.id.who')
            return {
              planner: label(p!)?.textContent,
              plannerTitle: id?.title,
              idText:
                (globalThis as unknown as Win).getComputedStyle(id!.querySelector('.tail')!)
                  .display !== 'none'
                  ? id?.querySelector('.tail')?.textContent
                  : id?.querySelector('.full')?.textContent,
              hostile: label(h!)?.textContent,
              images: doc.querySelectorAll('#view img').length,
            }
          },
          [planner.principal, hostile.principal],
        )
        assert.equal(seen.planner, 'planner', size)
        assert.equal(seen.plannerTitle, planner.principal, size)
        assert.equal(
          seen.idText,
          size === 'phone' ? `did:key:…${planner.principal.slice(-4)}` : planner.principal,
        )
        assert.equal(seen.hostile, HOSTILE, 'the label is shown as text')
        assert.equal(seen.images, 0, 'the label made no element')
        assert.equal(await pageScrollsSideways(), false, size)
      })
      assert.equal(
        await page.evaluate(() => (globalThis as unknown as Win).alerted ?? false),
        false,
      )
      // The same labels in listings of other pages: the A2A task's owner and the hop's parties.
      await go('#/a2a', `[data-task="${taskId}"]`)
      assert.equal(await page.textContent(`[data-task="${taskId}"] .who-label`), HOSTILE)
      await go(`#/hops/${hopDigest}`, '#hop-chain [data-hop]')
      const parties = await page.$$eval('#hop-chain .meta .who-label', (els) =>
        els.map((e) => e.textContent),
      )
      assert.deepEqual(parties, ['planner', 'coder'])
      assert.deepEqual(errors, [])
    })

    /** The labels drawn where a person sees them (not in a column hidden at this size), each with the did:key beside it. */
    const visibleLabels = () =>
      page.evaluate(() => {
        const doc = (globalThis as unknown as Win).document
        const shown = (el: El) => el.getBoundingClientRect().width > 0
        return [...(doc.querySelectorAll('#view .who-label') as unknown as El[])]
          .filter(shown)
          .map((label) => {
            const id = (label as unknown as { nextElementSibling: El | null }).nextElementSibling
            return [label.textContent ?? '', id?.title ?? ''] as const
          })
      })

    test('labels sit beside the did:key on the messages, grants, resources, transfers and compute pages', async () => {
      const p = planner.principal
      const c = coder.principal
      // Each page, and the labels a person sees on it at each size: a column hidden on a phone
      // (an owner in a listing) hides its label with it, never the did:key alone.
      const pages: [string, string, string, Record<'desktop' | 'phone', [string, string][]>][] = [
        [
          'messages',
          '#/messages',
          `[data-label="coder"]`,
          { desktop: [['coder', c]], phone: [['coder', c]] },
        ],
        [
          'messages-of',
          `#/messages/${encodeURIComponent(c)}`,
          '[data-message]',
          {
            desktop: [
              ['coder', c],
              ['planner', p],
            ],
            phone: [
              ['coder', c],
              ['planner', p],
            ],
          },
        ],
        [
          'resources-grants',
          '#/resources',
          `[data-label="coder"]`,
          {
            desktop: [
              ['planner', p],
              ['coder', c],
            ],
            phone: [['coder', c]],
          },
        ],
        [
          'resource',
          `#/resources/${resourceId}`,
          '.version',
          {
            desktop: [
              ['planner', p],
              ['coder', c],
            ],
            phone: [
              ['planner', p],
              ['coder', c],
            ],
          },
        ],
        [
          'transfers',
          '#/transfers',
          `[data-label="planner"]`,
          { desktop: [['planner', p]], phone: [] },
        ],
        [
          'transfer',
          `#/transfers/${transferId}`,
          '#spent',
          {
            desktop: [
              ['planner', p],
              ['coder', c],
            ],
            phone: [
              ['planner', p],
              ['coder', c],
            ],
          },
        ],
        [
          'compute',
          '#/compute',
          '[data-job]',
          {
            desktop: [
              ['coder', c],
              ['planner', p],
            ],
            phone: [],
          },
        ],
      ]
      for (const [name, hash, ready, want] of pages) {
        await go(hash, ready)
        await atBothSizes(`labels-${name}`, async (size) => {
          const seen = await visibleLabels()
          for (const pair of want[size as 'desktop' | 'phone']) {
            assert.ok(
              seen.some(([label, id]) => label === pair[0] && id === pair[1]),
              `${name} at ${size}: ${pair[0]} beside ${pair[1]} in ${JSON.stringify(seen)}`,
            )
          }
          // A label is never drawn without its did:key beside it.
          for (const [label, id] of seen) assert.match(id, /^did:key:z/, `${name}: ${label}`)
          assert.equal(await pageScrollsSideways(), false, `${name} at ${size}`)
        })
      }
      assert.deepEqual(errors, [])
    })

    test('the A2A page lists tasks and shows one task with its events', async () => {
      await go('#/a2a', `[data-task="${taskId}"]`)
      await atBothSizes('a2a', async (size) => {
        const cells = await page.$$eval(`[data-task="${taskId}"] td`, (tds) =>
          tds.map((td) => td.textContent),
        )
        assert.equal(cells[1], 'canceled', size)
        assert.equal(await pageScrollsSideways(), false, size)
      })
      await go(`#/a2a/${taskId}`, '#a2a-events li[data-generation]')
      await atBothSizes('a2a-task', async (size) => {
        const events = await page.$$eval('#a2a-events li[data-generation]', (lis) =>
          lis.map((li) => [
            li.getAttribute('data-generation'),
            li.querySelector('strong')?.textContent,
          ]),
        )
        assert.deepEqual(events[0], ['1', 'created'], size)
        assert.equal(events.at(-1)?.[1], 'status', size)
        assert.equal(await page.textContent('#a2a-state'), 'canceled')
        assert.equal((await page.content()).includes('secret words'), false, 'contents stay hidden')
        assert.equal(await pageScrollsSideways(), false, size)
      })
    })

    test('the overview counts A2A tasks, compute jobs and hops', async () => {
      await go('#/overview', '[data-stat="Hops"]')
      await atBothSizes('overview', async () => {
        assert.equal(await page.textContent('[data-stat="A2A tasks"]'), '1')
        assert.equal(await page.textContent('[data-stat="Compute jobs"]'), '1')
        assert.equal(await page.textContent('[data-stat="Hops"]'), '1')
        assert.equal(await pageScrollsSideways(), false)
      })
    })

    test("a hop's status row does not overlap and its receipt is one line", async () => {
      await go(`#/hops/${hopDigest}`, '#hop-chain .hop-status')
      await atBothSizes('hop', async (size) => {
        const g = await page.evaluate(() => {
          const w = globalThis as unknown as Win
          const li = w.document.querySelector('#hop-chain .timeline li')!
          const badge = li.querySelector('.badge')!.getBoundingClientRect()
          const by = li.querySelector('.by')!.getBoundingClientRect()
          const receipt = li.querySelector('.receipt')!
          const r = receipt.getBoundingClientRect()
          const lineHeight = Number.parseFloat(w.getComputedStyle(receipt).lineHeight ?? '') || 20
          const overlap = !(
            badge.right <= by.left ||
            by.right <= badge.left ||
            badge.bottom <= by.top ||
            by.bottom <= badge.top
          )
          const tails = [
            ...(w.document.querySelectorAll('#hop-chain .meta .id.who') as unknown as El[]),
          ].map((el) => {
            const tail = el.querySelector('.tail')!
            const shown =
              w.getComputedStyle(tail).display === 'none'
                ? (el.querySelector('.full')?.textContent ?? '')
                : (tail.textContent ?? '')
            // Narrow, the method and the key's end are drawn whole, never cut.
            return shown.startsWith('did:key:…') && el.scrollWidth > el.clientWidth + 1
              ? `cut: ${shown}`
              : shown
          })
          const labelsCut = [
            ...(w.document.querySelectorAll('#hop-chain .who-label') as unknown as El[]),
          ].filter((el) => el.scrollWidth > el.clientWidth + 1).length
          return {
            overlap,
            receiptLines: Math.round(r.height / lineHeight),
            receiptWidth: r.width,
            receiptTitle: receipt.title,
            receiptText: receipt.textContent,
            clipped: receipt.scrollWidth > receipt.clientWidth,
            ellipsis: w.getComputedStyle(receipt).textOverflow,
            tails,
            labelsCut,
          }
        })
        assert.equal(g.overlap, false, `${size}: the state overlaps "by"`)
        assert.equal(g.receiptLines, 1, `${size}: the receipt is one line`)
        assert.ok(g.receiptWidth > 100, `${size}: the receipt has room (${g.receiptWidth}px)`)
        assert.equal(g.receiptTitle, g.receiptText, 'the whole receipt is in the title')
        if (g.clipped) assert.equal(g.ellipsis, 'ellipsis')
        assert.equal(g.labelsCut, 0, `${size}: a short label is drawn whole`)
        for (const shown of g.tails) {
          if (size === 'phone') assert.match(shown, /^did:key:…[1-9A-HJ-NP-Za-km-z]{4}$/)
          else assert.match(shown, /^did:key:z6Mk/)
        }
        assert.equal(await pageScrollsSideways(), false, size)
      })
    })

    test('the handoffs list draws each machine as steps and its filter placeholder fits', async () => {
      await go('#/handoffs', '#content table')
      await atBothSizes('handoffs', async (size) => {
        const f = await page.evaluate(() => {
          const w = globalThis as unknown as Win
          const input = w.document.querySelector('#f-state')!
          const style = w.getComputedStyle(input)
          const ctx = w.document.createElement('canvas').getContext('2d')
          ctx.font = style.font!
          const room =
            input.clientWidth -
            Number.parseFloat(style.paddingLeft!) -
            Number.parseFloat(style.paddingRight!)
          return { needs: ctx.measureText(input.placeholder).width, room }
        })
        assert.ok(f.needs <= f.room, `${size}: the placeholder needs ${f.needs}px of ${f.room}px`)
      })
      await atBothSizes('handoffs-machine', async (size) => {
        const steps = await page.$$eval(
          '#content tbody tr:first-child .mini-machine .step',
          (els) => els.map((e) => [e.textContent, e.classList.contains('current')]),
        )
        assert.deepEqual(
          steps.slice(0, 2),
          [
            ['offered', true],
            ['accepted', false],
          ],
          size,
        )
        const rows = await page.$$eval('.mini-machine', (ols) =>
          ols.map((ol) => {
            const steps = [...ol.children]
            const tops = new Set(steps.map((li) => Math.round(li.getBoundingClientRect().top)))
            return {
              steps: steps.length,
              lines: tops.size,
              cut: steps.filter((li) => li.scrollWidth > li.clientWidth + 1).length,
              overflow: ol.scrollWidth > ol.clientWidth + 1,
            }
          }),
        )
        assert.ok(rows.length > 0, size)
        for (const r of rows) {
          // Steps, not a line of text: one chip per state, each whole; wide, the default
          // machine's chips fit on one line, and narrow they wrap onto lines of their own.
          assert.equal(r.steps, DEFAULT_MACHINE.states.length, size)
          assert.equal(r.cut, 0, `${size}: a step is cut`)
          assert.equal(r.overflow, false, `${size}: the steps stay in their cell`)
          if (size === 'desktop') assert.equal(r.lines, 1, `${size}: ${r.lines} lines`)
          else assert.ok(r.lines > 1 && r.lines <= r.steps, `${size}: ${r.lines} lines`)
        }
        // The list holds its shape: no column pushed out of the table's own width.
        const table = await page.$eval('#content .table-wrap', (el) => {
          const wrap = el as unknown as El
          return { scroll: wrap.scrollWidth, width: wrap.clientWidth }
        })
        assert.ok(table.scroll <= table.width + 1, `${size}: ${JSON.stringify(table)}`)
      })
    })

    test('amounts carry their unit', async () => {
      await go(`#/transfers/${transferId}`, '#spent')
      await atBothSizes('transfer', async (size) => {
        const text = (await page.textContent('.budget-numbers'))!.replace(/\s+/g, ' ')
        assert.match(text, /spent 2\.01 units of 2\.00 units allocated/, size)
        assert.match(text, /rate 0\.01 units \/ s/, size)
        assert.match((await page.getAttribute('#spent .amount', 'title'))!, /2\.00868 units/)
        assert.equal(await pageScrollsSideways(), false, size)
      })
    })

    test("compute's succeeded badge is green like other successes, at both sizes", async () => {
      await go('#/compute', '.job-state .badge')
      await atBothSizes('compute-badge', async (size) => {
        const [succeeded, approved, failed] = await Promise.all([
          page.$eval(
            '.job-state .badge.s-succeeded',
            (el) =>
              (globalThis as unknown as Win).getComputedStyle(el as unknown as El).color ?? '',
          ),
          ...['approved', 'failed'].map((state) =>
            page.evaluate((s) => {
              const w = globalThis as unknown as Win & {
                document: { body: { appendChild(e: unknown): void } }
              }
              const probe = w.document.createElement('span') as unknown as { className: string }
              probe.className = `badge s-${s}`
              w.document.body.appendChild(probe)
              return w.getComputedStyle(probe as unknown as El).color
            }, state),
          ),
        ])
        assert.equal(succeeded, approved, size)
        assert.notEqual(succeeded, failed, `${size}: the success colour is not the failure's`)
        const visible = await page.$eval(
          '.job-state .badge.s-succeeded',
          (el) => (el as unknown as El).getBoundingClientRect().width > 0,
        )
        assert.equal(visible, true, `${size}: the badge is drawn`)
      })
    })

    test('under open admission the admission page says so', async () => {
      await go('#/admission', '#admission-open')
      await atBothSizes('admission-open', async (size) => {
        const note = await page.textContent('#admission-open')
        assert.match(note ?? '', /Admission is open/, size)
        assert.equal(await pageScrollsSideways(), false, size)
      })
    })
  })
}

// `baton dev`'s one-time sign-in link, as a person meets it: the first browser is signed in, a
// second use of the same link lands on the sign-in page saying it was used, and a forged one
// says it is not valid, at both sizes.
describe('the one-time sign-in link of baton dev', () => {
  let child: ReturnType<typeof spawn>
  let browser: Browser
  let link = ''
  before(async () => {
    child = spawn(process.execPath, [batonBin, 'dev', '--port', '0'], {
      cwd: repoRoot,
      env: { ...process.env, BATON_HOST: '127.0.0.1', DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    link = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout!.on('data', (chunk) => {
        out += chunk
        const m = /^\s+dashboard\s+(\S+)/m.exec(out)
        if (m && /^\s+data\s/m.test(out)) resolve(m[1]!)
      })
      child.once('exit', (code) => reject(new Error(`baton dev exited ${code}: ${out}`)))
    })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    child.kill('SIGTERM')
    await exited(child)
  })

  test('used once it signs in; used again, or forged, the sign-in page says why', async () => {
    const first = await browser.newPage({ viewport: SIZES.desktop })
    await first.goto(link)
    await first.waitForSelector('[data-nav][aria-current="page"]')
    await first.close()
    for (const [size, viewport] of Object.entries(SIZES)) {
      const again = await browser.newPage({ viewport })
      try {
        await again.goto(link)
        await again.waitForSelector('#signin-error')
        assert.equal(new URL(again.url()).search, '?link=used', size)
        assert.equal(
          await again.textContent('#signin-error'),
          'This sign-in link was already used; sign in with the operator token.',
          size,
        )
        assert.equal(await again.isVisible('#signin-error'), true, size)
        assert.equal(await again.isVisible('#token'), true, `${size}: the token form is there`)
        const forged = link.replace(/[A-Za-z0-9_-]{32}$/, 'A'.repeat(32))
        await again.goto(forged)
        await again.waitForSelector('#signin-error')
        assert.equal(
          await again.textContent('#signin-error'),
          'This sign-in link is not valid; sign in with the operator token.',
          size,
        )
        // Anything else in ?link= says nothing, and is never drawn as markup.
        await again.goto(`${new URL(link).origin}/dashboard/?link=<b>x</b>`)
        await again.waitForSelector('#token')
        assert.equal(await again.isVisible('#signin-error'), false, size)
      } finally {
        await again.close()
      }
    }
  })
})
