import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient } from '@baton/client'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from './browser.js'
import { batonBin, call, repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const TOKEN = 'operator-token-for-the-dashboard-tests-0123456789'
const ARTIFACTS = path.join(repoRoot, 'artifacts/dashboard')
const SIZES = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const

type Body = Record<string, unknown> & { code?: string }

/** The little of the DOM the page functions below touch (the test compiles without the DOM lib). */
interface PageRect {
  left: number
  right: number
  top: number
  width: number
  height: number
}
interface PageElement {
  textContent: string | null
  innerText: string
  tagName: string
  id: string
  className: unknown
  title: string
  scrollWidth: number
  clientWidth: number
  parentElement: PageElement | null
  nextElementSibling: PageElement | null
  dataset: Record<string, string | undefined>
  getAttribute(name: string): string | null
  getBoundingClientRect(): PageRect
  closest(selector: string): PageElement | null
  matches(selector: string): boolean
  querySelector(selector: string): PageElement | null
  querySelectorAll(selector: string): PageElement[]
}
interface PageText {
  data: string
}
interface PageRange {
  setStart(node: PageText, offset: number): void
  setEnd(node: PageText, offset: number): void
  getClientRects(): PageRect[]
}
interface PageWindow {
  document: {
    documentElement: PageElement
    querySelector(selector: string): PageElement | null
    querySelectorAll(selector: string): PageElement[]
    getElementById(id: string): PageElement | null
    createRange(): PageRange
    createTreeWalker(root: PageElement, what: number): { nextNode(): PageText | null }
  }
  getComputedStyle(el: PageElement): {
    display: string
    visibility: string
    overflowX: string
    textOverflow: string
  }
  navigator: { clipboard: { readText(): Promise<string> } }
  location: { hash: string }
  marker?: number
}

/**
 * What breaks the layout at the current viewport: the page scrolling sideways, an element
 * outside the viewport horizontally (unless inside a box that scrolls sideways by design, such
 * as a table or the handoff machine), and a box whose content is wider than it: spilling out,
 * scrolling where only the machine and JSON may scroll, or clipped without an ellipsis and the
 * whole value in its title.
 */
function layoutProblems(): string[] {
  const w = globalThis as unknown as PageWindow
  const doc = w.document
  const problems: string[] = []
  const vw = doc.documentElement.clientWidth
  const describe = (el: PageElement) =>
    `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : ''} "${(el.textContent ?? '').trim().slice(0, 40)}"`
  if (doc.documentElement.scrollWidth > vw + 1) {
    problems.push(`the page scrolls sideways: ${doc.documentElement.scrollWidth} > ${vw}`)
  }
  const scrolls = (el: PageElement) => ['auto', 'scroll'].includes(w.getComputedStyle(el).overflowX)
  for (const el of doc.querySelectorAll('body *')) {
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue
    if (el.closest('.skip, .visually-hidden, dialog:not([open])')) continue
    const style = w.getComputedStyle(el)
    if (style.display === 'none' || style.visibility === 'hidden') continue
    const rect = el.getBoundingClientRect()
    if (rect.width === 0 && rect.height === 0) continue
    let box = el.parentElement
    while (box && !scrolls(box)) box = box.parentElement
    if (!box && (rect.left < -1 || rect.right > vw + 1)) {
      problems.push(`${describe(el)} is outside the viewport: ${rect.left}..${rect.right} of ${vw}`)
    }
    if (style.display === 'inline' || el.tagName.toLowerCase() === 'svg') continue
    if (el.scrollWidth <= el.clientWidth + 1) continue
    if (style.overflowX === 'visible') {
      problems.push(`${describe(el)} overflows its box: ${el.scrollWidth} > ${el.clientWidth}`)
    } else if (style.overflowX === 'hidden' || style.overflowX === 'clip') {
      if (!(style.textOverflow === 'ellipsis' && el.title)) {
        problems.push(`${describe(el)} is cut: ${el.scrollWidth} > ${el.clientWidth}`)
      }
    } else if (!el.matches('.machine, pre')) {
      problems.push(`${describe(el)} scrolls sideways: ${el.scrollWidth} > ${el.clientWidth}`)
    }
  }
  return problems
}

/**
 * On how many lines the first `prefix` in an element's text is drawn: the element `selector`
 * picks, or with a `term`, the `dd` after the `dt` of that text inside it.
 */
function linesOf([selector, prefix, term]: readonly [string, string, string?]): number {
  const doc = (globalThis as unknown as PageWindow).document
  const root = term
    ? ([...doc.querySelectorAll(`${selector} dt`)].find((d) => d.textContent === term)
        ?.nextElementSibling ?? null)
    : doc.querySelector(selector)
  if (!root) return -1
  // Text nodes in order with their offsets, so a prefix split over several spans is found too.
  const walker = doc.createTreeWalker(root, 4)
  const nodes: { node: PageText; start: number }[] = []
  let text = ''
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    nodes.push({ node: n, start: text.length })
    text += n.data
  }
  const at = text.indexOf(prefix)
  if (at < 0) return -1
  const point = (offset: number, end: boolean) => {
    const hit = nodes.findLast((n) =>
      end ? n.start < offset : n.start <= offset && offset < n.start + n.node.data.length,
    )!
    return [hit.node, offset - hit.start] as const
  }
  const range = doc.createRange()
  range.setStart(...point(at, false))
  range.setEnd(...point(at + prefix.length, true))
  return new Set(
    [...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)),
  ).size
}

/** Runs the `baton` command as a separate process and answers its exit code and output. */
function baton(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [batonBin, ...args], { cwd: repoRoot })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => {
      stdout += d
    })
    child.stderr.on('data', (d) => {
      stderr += d
    })
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }))
  })
}

for (const store of testStores) {
  describe(`dashboard (${store.name})`, () => {
    let hub: TestHub
    let browser: Browser
    let context: BrowserContext
    let page: Page
    const shots = store.name === 'sqlite'
    const cspViolations: string[] = []
    const pageErrors: string[] = []

    const agent = async () => {
      const client = await SignedClient.connect(
        `${hub.url}/.well-known/agent-net`,
        createIdentity(hub.url),
      )
      assert.equal((await client.request('GET', '/v1/me')).status, 200)
      return client
    }
    const admitted = async () => {
      const client = await agent()
      await hub.ctx.identity.decide(client.principal, 'approve')
      return client
    }
    const signed = async (client: SignedClient, method: string, p: string, body?: unknown) => {
      const res = await client.request<Body>(method, p, body as object)
      return { status: res.status, body: res.body ?? {} }
    }
    /** Waits until the page's text in `selector` includes `text`, without reloading. */
    const waitText = (selector: string, text: string, timeout = 15_000) =>
      page.waitForFunction(
        ([s, t]) =>
          (globalThis as unknown as PageWindow).document
            .querySelector(s!)
            ?.textContent?.includes(t!) === true,
        [selector, text] as const,
        { timeout },
      )
    const settled = () =>
      page.waitForFunction(
        () =>
          (globalThis as unknown as PageWindow).document.getElementById('view')?.dataset
            .loadedAt !== undefined,
      )
    const go = async (hash: string) => {
      await page.evaluate(() => {
        delete (globalThis as unknown as PageWindow).document.getElementById('view')!.dataset
          .loadedAt
      })
      await page.evaluate((h) => {
        ;(globalThis as unknown as PageWindow).location.hash = h
      }, hash)
      await settled()
    }
    /**
     * Looks at the page at each size: its layout must hold (nothing outside the viewport, no box
     * overflowing), and on SQLite a full-page screenshot is kept under `artifacts/dashboard/`.
     */
    const shoot = async (name: string) => {
      for (const [size, viewport] of Object.entries(SIZES)) {
        await page.setViewportSize(viewport)
        await page.waitForFunction(
          (width) =>
            (globalThis as unknown as PageWindow).document.documentElement.clientWidth <= width,
          viewport.width,
        )
        assert.deepEqual(await page.evaluate(layoutProblems), [], `${name} at ${size}`)
        if (shots) {
          await page.screenshot({
            path: path.join(ARTIFACTS, `${name}-${size}.png`),
            fullPage: true,
          })
        }
      }
      await page.setViewportSize(SIZES.desktop)
    }
    const atSize = async <T>(size: keyof typeof SIZES, run: () => Promise<T>): Promise<T> => {
      await page.setViewportSize(SIZES[size])
      try {
        return await run()
      } finally {
        await page.setViewportSize(SIZES.desktop)
      }
    }

    before(async () => {
      mkdirSync(ARTIFACTS, { recursive: true })
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: TOKEN })
      browser = await launchBrowser()
      context = await browser.newContext({ viewport: SIZES.desktop })
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.url })
      // tsx keeps function names by wrapping them in `__name(…)`; the page functions below are
      // sent to the browser as their source, so the page gets a `__name` that does nothing.
      await context.addInitScript('globalThis.__name = (fn) => fn')
      page = await context.newPage()
      page.on('pageerror', (e) => {
        pageErrors.push(e.message)
      })
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) {
          cspViolations.push(m.text())
        }
      })
    })
    after(async () => {
      await browser?.close()
      await hub?.close()
    })

    test('without a session, nothing but the sign-in page is served', async () => {
      const root = await fetch(`${hub.url}/`)
      assert.equal(root.status, 200)
      const html = await root.text()
      assert.match(html, /<form id="signin-form" method="post" action="\/dashboard\/session">/)
      assert.match(root.headers.get('content-security-policy') ?? '', /default-src 'self'/)
      assert.doesNotMatch(root.headers.get('content-security-policy') ?? '', /unsafe-inline/)
      assert.equal(root.headers.get('x-frame-options'), 'DENY')
      assert.equal(root.headers.get('referrer-policy'), 'no-referrer')
      for (const p of ['/dashboard', '/dashboard/', '/dashboard/handoffs/ho_x']) {
        const res = await fetch(hub.url + p)
        assert.equal(res.status, 401, p)
        assert.equal(await res.text(), html, `${p} answers only the sign-in page`)
      }
      for (const p of [
        '/dashboard/api/overview',
        '/dashboard/api/principals',
        '/dashboard/api/handoffs',
        '/dashboard/api/resources',
        '/dashboard/api/messages',
        '/dashboard/api/transfers',
        '/dashboard/api/session',
        '/dashboard/events',
        '/dashboard/assets/app.js',
      ]) {
        const res = await call(hub, 'GET', p)
        assert.equal(res.status, 401, p)
        assert.equal(res.body.code, 'dashboard_signin_required', p)
        assert.equal(
          res.headers.get('www-authenticate'),
          'Cookie realm="baton-dashboard", form-action="/dashboard/session", cookie-name="baton_session"',
          p,
        )
      }
      const forged = await call(hub, 'GET', '/dashboard/api/overview', {
        headers: { cookie: 'baton_session=v1.99999999999999.abc.def' },
      })
      assert.equal(forged.status, 401)
      const decide = await call(hub, 'POST', '/dashboard/api/principals/did:key:zX/approve')
      assert.equal(decide.status, 401)
      const wrong = await call(hub, 'POST', '/dashboard/session', {
        body: { token: 'x'.repeat(40) },
      })
      assert.equal(wrong.status, 401)
      assert.equal(wrong.body.code, 'admin_token_invalid')
      assert.equal(wrong.headers.get('set-cookie'), null)
    })

    test('a form sign-in sets an HttpOnly SameSite=Strict cookie and redirects', async () => {
      const res = await fetch(`${hub.url}/dashboard/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: TOKEN }).toString(),
        redirect: 'manual',
      })
      assert.equal(res.status, 303)
      assert.equal(res.headers.get('location'), '/dashboard/')
      const cookie = res.headers.get('set-cookie') ?? ''
      assert.match(cookie, /^baton_session=v1\./)
      assert.match(cookie, /HttpOnly/)
      assert.match(cookie, /SameSite=Strict/)
      assert.doesNotMatch(cookie, /Secure/, 'plain http on loopback')
      const value = cookie.split(';')[0]!
      const overview = await call(hub, 'GET', '/dashboard/api/overview', {
        headers: { cookie: value },
      })
      assert.equal(overview.status, 200)
      const tampered = `${value.slice(0, -2)}xx`
      assert.equal(
        (await call(hub, 'GET', '/dashboard/api/overview', { headers: { cookie: tampered } }))
          .status,
        401,
      )
    })

    test('in the browser: a wrong token is refused in place, the right one opens the overview', async () => {
      await page.goto(`${hub.url}/dashboard/`)
      assert.ok(await page.locator('#signin-form').isVisible(), 'the sign-in page, not the app')
      await shoot('signin')
      await page.fill('#token', 'w'.repeat(40))
      await page.click('button[type=submit]')
      await waitText('#signin-error', 'wrong')
      await page.fill('#token', TOKEN)
      await Promise.all([
        page.waitForURL(`${hub.url}/dashboard/`),
        page.click('button[type=submit]'),
      ])
      await settled()
      await waitText('h1.page', 'Overview')
      await page.waitForFunction(
        () =>
          (globalThis as unknown as PageWindow).document.getElementById('live')?.dataset.state ===
          'live',
        undefined,
        { timeout: 10_000 },
      )
      const cookies = await context.cookies()
      const session = cookies.find((c) => c.name === 'baton_session')
      assert.ok(session?.httpOnly)
      assert.equal(session?.sameSite, 'Strict')
    })

    test('a decision without the CSRF header is refused, and changes nothing', async () => {
      const pending = await agent()
      const res = await page.evaluate(async (p) => {
        const r = await fetch(`/dashboard/api/principals/${encodeURIComponent(p)}/approve`, {
          method: 'POST',
        })
        return { status: r.status, body: (await r.json()) as { code?: string } }
      }, pending.principal)
      assert.equal(res.status, 403)
      assert.equal(res.body.code, 'csrf_token_invalid')
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'pending')
      await hub.ctx.identity.decide(pending.principal, 'reject')
    })

    test('at 390 px each principal shows its own end, with the whole value and a copy button', async () => {
      const rows = [await agent(), await agent()]
      await go('#/admission')
      for (const c of rows) await page.waitForSelector(`tr[data-principal="${c.principal}"]`)
      const shown = await atSize('phone', () =>
        page.evaluate(
          (principals) =>
            principals.map((p) => {
              const el = (globalThis as unknown as PageWindow).document.querySelector(
                `tr[data-principal="${p}"] td .id`,
              )
              return {
                // biome-ignore lint/performance/useDomNodeTextContent: the text as drawn, without what CSS hides
                text: el?.innerText ?? '',
                title: el?.title ?? '',
                cut: el ? el.scrollWidth > el.clientWidth : true,
              }
            }),
          rows.map((c) => c.principal),
        ),
      )
      for (const [i, c] of rows.entries()) {
        assert.equal(shown[i]!.cut, false, 'the shown text is not cut off')
        assert.ok(shown[i]!.text.startsWith('did:key:'), shown[i]!.text)
        assert.ok(shown[i]!.text.endsWith(c.principal.slice(-4)), 'the distinguishing end shows')
        assert.equal(shown[i]!.title, c.principal, 'the whole value is in the title')
      }
      assert.notEqual(shown[0]!.text, shown[1]!.text, 'rows can be told apart')
      await page.click(`tr[data-principal="${rows[1]!.principal}"] button[data-copy]`)
      assert.equal(
        await page.evaluate(() =>
          (globalThis as unknown as PageWindow).navigator.clipboard.readText(),
        ),
        rows[1]!.principal,
      )
      for (const c of rows) await hub.ctx.identity.decide(c.principal, 'reject')
    })

    test('Reject and Suspend ask first; cancelling changes nothing', async () => {
      const pending = await agent()
      await go('#/admission')
      const row = `tr[data-principal="${pending.principal}"]`
      await page.waitForSelector(row)
      await page.click(`${row} button[data-decide=reject]`)
      await page.waitForSelector('dialog#confirm[open]', { timeout: 5_000 })
      await shoot('admission-confirm')
      await page.click('#confirm-cancel')
      await page.waitForSelector('dialog#confirm', { state: 'hidden' })
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'pending')
      // Escape closes the question as Cancel does.
      await page.click(`${row} button[data-decide=reject]`)
      await page.waitForSelector('dialog#confirm[open]')
      await page.keyboard.press('Escape')
      await page.waitForSelector('dialog#confirm', { state: 'hidden' })
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'pending')
      await page.click(`${row} button[data-decide=reject]`)
      await page.click('dialog#confirm[open] #confirm-ok')
      await page.waitForSelector(row, { state: 'detached' })
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'rejected')
    })

    test('approve a pending principal in the admission queue and see it admitted', async () => {
      const pending = await agent()
      assert.equal((await signed(pending, 'GET', '/v1/resources')).body.code, 'admission_pending')
      await go('#/admission')
      const row = `tr[data-principal="${pending.principal}"]`
      await page.waitForSelector(row)
      await shoot('admission')
      await page.click(`${row} button[data-decide=approve]`)
      await page.waitForFunction(
        (p) =>
          !(globalThis as unknown as PageWindow).document.querySelector(
            `tr[data-principal="${p}"]`,
          ),
        pending.principal,
      )
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'approved')
      assert.equal((await signed(pending, 'GET', '/v1/resources')).status, 200)
      await page.selectOption('#f-state', 'all')
      await waitText(row, 'approved')
      // Keyboard: the decision buttons and the question they ask work without a mouse; the
      // question opens on Cancel, so a second Enter does not suspend by accident.
      await page.focus(`${row} button[data-decide=suspend]`)
      await page.keyboard.press('Enter')
      await page.waitForSelector('dialog#confirm[open]')
      assert.equal(
        await page.evaluate(
          () => (globalThis as unknown as PageWindow).document.querySelector(':focus')?.id,
        ),
        'confirm-cancel',
      )
      await page.keyboard.press('Tab')
      assert.equal(
        await page.evaluate(
          () => (globalThis as unknown as PageWindow).document.querySelector(':focus')?.id,
        ),
        'confirm-ok',
      )
      await page.keyboard.press('Enter')
      await waitText(row, 'suspended')
      assert.equal((await hub.ctx.identity.get(pending.principal)).state, 'suspended')
    })

    test('a handoff moves live in the page while another process advances it', async () => {
      const created = await call(hub, 'POST', '/services/v1/handoff', {
        body: { payload: { task: 'summarise', secret: 'not shown by default' }, note: 'demo' },
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const { handoff_id: id, receiver_token: token } = created.body as {
        handoff_id: string
        receiver_token: string
      }
      await go(`#/handoffs/${id}`)
      await waitText('#handoff-state', 'offered')
      assert.ok(!(await page.content()).includes('not shown by default'), 'payload hidden')
      await page.evaluate(() => {
        ;(globalThis as unknown as PageWindow).marker = 42
      })
      for (const [from, to] of [
        ['offered', 'accepted'],
        ['accepted', 'working'],
      ] as const) {
        const cli = await baton([
          'handoff',
          'advance',
          id,
          to,
          '--from',
          from,
          '--token',
          token,
          '--hub',
          hub.url,
        ])
        assert.equal(cli.code, 0, cli.stderr)
        await waitText('#handoff-state', to)
        await page.waitForSelector(`#machine .node.current[data-state="${to}"]`)
      }
      assert.equal(
        await page.evaluate(() => (globalThis as unknown as PageWindow).marker),
        42,
        'the page was not reloaded',
      )
      assert.equal(await page.locator('#machine path.edge.taken').count(), 2)
      await shoot('handoff')
      await page.click('button[data-reveal]')
      await waitText('#reveal-box', 'not shown by default')
      await go('#/handoffs')
      await page.waitForSelector(`a[href="#/handoffs/${id}"]`)
      // The state filter takes any state name (custom machines have their own), open or expired.
      await page.fill('#f-state', 'done')
      await page.press('#f-state', 'Enter')
      await page.waitForSelector(`a[href="#/handoffs/${id}"]`, { state: 'detached' })
      await page.fill('#f-state', 'working')
      await page.press('#f-state', 'Enter')
      await page.waitForSelector(`a[href="#/handoffs/${id}"]`)
      await shoot('handoffs')
    })

    test('a resource shows its versions and the diffs between them', async () => {
      const owner = await admitted()
      const peer = await admitted()
      const made = await signed(owner, 'POST', '/v1/resources', {
        namespace: 'dashboard-demo',
        kind: 'task/v1',
        data: { status: 'open', title: 'Write the report', tags: ['a'] },
      })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const id = made.body.id as string
      const v2 = await signed(owner, 'PATCH', `/v1/resources/${id}`, {
        expectedVersion: 1,
        data: { status: 'working', title: 'Write the report', tags: ['a', 'b'] },
      })
      assert.equal(v2.status, 200, JSON.stringify(v2.body))
      const grant = await signed(owner, 'POST', '/v1/capabilities', {
        resourceId: id,
        subject: peer.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: new Date(Date.now() + 3600_000).toISOString(),
      })
      assert.equal(grant.status, 201, JSON.stringify(grant.body))
      await go('#/resources')
      await page.waitForSelector(`a[href="#/resources/${id}"]`)
      await page.click('button[data-ns="dashboard-demo"]')
      await page.waitForSelector('button[data-ns="dashboard-demo"][aria-pressed=true]')
      await shoot('resources')
      await page.click(`a[href="#/resources/${id}"]`)
      await page.waitForSelector('article[data-version="2"]')
      const diff = (await page.locator('article[data-version="2"] .diff').textContent()) ?? ''
      assert.match(diff, /\$\.status: "open" → "working"/)
      assert.match(diff, /\+ \$\.tags\[1\]: "b"/)
      // Live: a third version appears while the page is open.
      const v3 = await signed(owner, 'PATCH', `/v1/resources/${id}`, {
        expectedVersion: 2,
        data: { status: 'done', title: 'Write the report', tags: ['a', 'b'] },
      })
      assert.equal(v3.status, 200)
      await page.waitForSelector('article[data-version="3"]')
      assert.match(
        (await page.locator('article[data-version="3"] .diff').textContent()) ?? '',
        /"working" → "done"/,
      )
      await shoot('resource')
    })

    test('messages show sequence and acknowledgement per principal; a body only on request', async () => {
      const sender = await admitted()
      const recipient = await admitted()
      for (const n of [1, 2, 3]) {
        const sent = await signed(sender, 'POST', '/v1/messages', {
          recipient: recipient.principal,
          body: { n, text: `private body ${n}` },
          idempotencyKey: `k${n}`,
        })
        assert.equal(sent.status, 201, JSON.stringify(sent.body))
      }
      await go('#/messages')
      await page.waitForSelector(`a[href="#/messages/${encodeURIComponent(recipient.principal)}"]`)
      await shoot('messages')
      await go(`#/messages/${encodeURIComponent(recipient.principal)}`)
      await page.waitForSelector('tr[data-message]')
      assert.equal(await page.locator('tr[data-message]').count(), 3)
      assert.ok(!(await page.content()).includes('private body'), 'bodies are hidden')
      await page.locator('tr[data-message] button[data-reveal]').first().click()
      await waitText('tr.reveal-row', 'private body 3')
      await shoot('messages-principal')
    })

    test('the overview counts what is happening, with activity charts', async () => {
      await go('#/overview')
      const pending = (await page.locator('[data-stat="Pending admissions"]').textContent()) ?? ''
      assert.equal(pending, '0')
      const unacked = (await page.locator('[data-stat="Unacked messages"]').textContent()) ?? ''
      assert.equal(unacked, '3')
      assert.equal(await page.locator('.chart svg').count(), 4)
      // A new enrolment shows in the overview without a reload (events and a periodic re-read).
      await agent()
      await waitText('[data-stat="Pending admissions"]', '1', 20_000)
      await shoot('overview')
    })

    test("a transfer's budget bar fills as its runtime reports usage", async () => {
      const owner = await admitted()
      const runtime = await admitted()
      const admin = { authorization: `Bearer ${TOKEN}` }
      const mint = async (id: string, body: Record<string, unknown>) => {
        const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
          body,
          headers: admin,
        })
        assert.equal(res.status, 201, JSON.stringify(res.body))
        return res.body.token as string
      }
      const snapshot = {
        systemPrompt: 'You are a careful agent.',
        messages: [{ role: 'user', content: 'Translate the secret report' }],
      }
      const staged = await signed(owner, 'POST', '/v1/transfers', { snapshot })
      assert.equal(staged.status, 201, JSON.stringify(staged.body))
      const id = staged.body.transferId as string
      const params = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }
      const provisioned = await signed(owner, 'POST', `/v1/transfers/${id}/provision`, {
        ...params,
        token: await mint(id, { scope: 'provision', ...params }),
      })
      assert.equal(provisioned.status, 200, JSON.stringify(provisioned.body))
      assert.equal((await signed(runtime, 'POST', `/v1/transfers/${id}/claim`)).status, 200)
      const pushed = await signed(runtime, 'POST', `/v1/transfers/${id}/push`, {
        checksum: staged.body.checksum,
      })
      assert.equal(pushed.status, 200, JSON.stringify(pushed.body))
      const active = await signed(owner, 'POST', `/v1/transfers/${id}/activate`, {
        token: await mint(id, { scope: 'activate' }),
      })
      assert.equal(active.status, 200, JSON.stringify(active.body))

      await go(`#/transfers/${id}`)
      await waitText('#transfer-state', 'active')
      assert.ok(!(await page.content()).includes('secret report'), 'snapshot hidden by default')
      const ratio = () =>
        page.evaluate(() =>
          Number(
            (globalThis as unknown as PageWindow).document
              .querySelector('#budget .budget')
              ?.getAttribute('data-ratio'),
          ),
        )
      assert.equal(await ratio(), 0)
      for (const [n, expected] of [
        [1, 0.25],
        [2, 0.5],
        [3, 0.75],
      ] as const) {
        const used = await signed(runtime, 'POST', `/v1/transfers/${id}/usage`, {
          idempotencyKey: `u${n}`,
          amountMicros: 250_000,
        })
        assert.equal(used.status, 200, JSON.stringify(used.body))
        await page.waitForFunction(
          (r) =>
            Number(
              (globalThis as unknown as PageWindow).document
                .querySelector('#budget .budget')
                ?.getAttribute('data-ratio'),
            ) === r,
          expected,
          { timeout: 10_000 },
        )
      }
      await shoot('transfer')
      // At 390 px the checksum's algorithm stays on one line, in the details and the timeline.
      const checksumLines = await atSize('phone', async () => [
        await page.evaluate(linesOf, ['#timeline', 'sha-256:'] as const),
        await page.evaluate(linesOf, ['.meta', 'sha-256:', 'Checksum'] as const),
      ])
      assert.deepEqual(checksumLines, [1, 1])
      const last = await signed(runtime, 'POST', `/v1/transfers/${id}/usage`, {
        idempotencyKey: 'u4',
        amountMicros: 300_000,
      })
      assert.equal(last.body.stop, true)
      await waitText('#transfer-state', 'insolvent')
      await page.waitForSelector('#budget .budget.bad')
      await waitText('.grace', 'grace ends')
      assert.equal(await ratio(), 1)
      await waitText('#timeline', 'insolvent')
      await shoot('transfer-insolvent')
      await page.click('button[data-reveal]')
      await waitText('#reveal-box', 'secret report')
      await go('#/transfers')
      await page.waitForSelector(`a[href="#/transfers/${id}"]`)
      await shoot('transfers')
    })

    test('an unknown route shows a page saying so, with a link home', async () => {
      for (const hash of ['#/no-such-page', '#/overview/extra', '#/handoffs/ho_nothing_here']) {
        await go(hash)
        assert.equal(
          await page.evaluate(
            () =>
              (globalThis as unknown as PageWindow).document.getElementById('view')?.dataset.view,
          ),
          'not-found',
          hash,
        )
        assert.equal(await page.locator('#not-found a[href="#/overview"]').count(), 1, hash)
      }
      await shoot('not-found')
      await page.click('#not-found a[href="#/overview"]')
      await waitText('h1.page', 'Overview')
    })

    // A handoff that is done and a transfer that is terminated, for the two tests below.
    const ended = { handoffId: '', transferId: '' }

    test('an ended transfer or handoff counts nothing down: it shows when it ended', async () => {
      const owner = await admitted()
      // A handoff that is done, and one still open.
      const made = []
      for (const note of ['finished', 'still open']) {
        const created = await call(hub, 'POST', '/services/v1/handoff', {
          body: { payload: { n: 1 }, note },
        })
        assert.equal(created.status, 201, JSON.stringify(created.body))
        made.push(created.body as { handoff_id: string; receiver_token: string })
      }
      const done = await call(hub, 'POST', `/services/v1/handoff/${made[0]!.handoff_id}/done`, {
        token: made[0]!.receiver_token,
        body: { from: 'offered' },
      })
      assert.equal(done.status, 200, JSON.stringify(done.body))
      // A transfer the operator terminated.
      const staged = await signed(owner, 'POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'p', messages: [] },
      })
      assert.equal(staged.status, 201, JSON.stringify(staged.body))
      const transferId = staged.body.transferId as string
      const terminated = await call(hub, 'POST', `/admin/v1/transfers/${transferId}/terminate`, {
        body: {},
        headers: { authorization: `Bearer ${TOKEN}` },
      })
      assert.equal(terminated.status, 200, JSON.stringify(terminated.body))
      ended.handoffId = made[0]!.handoff_id
      ended.transferId = transferId

      const future = () =>
        page.evaluate(() =>
          [
            ...(globalThis as unknown as PageWindow).document.querySelectorAll(
              '#content time[datetime], #content [data-countdown]',
            ),
          ]
            .map((t) => t.getAttribute('datetime') ?? t.getAttribute('data-countdown') ?? '')
            .filter((at) => Date.parse(at) > Date.now()),
        )
      await go(`#/transfers/${transferId}`)
      await waitText('#transfer-state', 'terminated')
      assert.deepEqual(await future(), [], 'an ended transfer counts nothing down')
      assert.equal(await page.locator('#ended time[datetime]').count(), 1, 'it says when it ended')
      await shoot('transfer-terminated')
      await go(`#/handoffs/${made[0]!.handoff_id}`)
      await waitText('#handoff-state', 'done')
      assert.deepEqual(await future(), [], 'an ended handoff counts nothing down')
      assert.equal(await page.locator('#ended time[datetime]').count(), 1)
    })

    test("the overview's open and running cards list only what they count", async () => {
      assert.ok(ended.handoffId && ended.transferId, 'the test above made them')
      await go('#/overview')
      const cards = await page.evaluate(() => {
        const doc = (globalThis as unknown as PageWindow).document
        return ['Open handoffs', 'Running transfers'].map((label) => {
          const value = doc.querySelector(`[data-stat="${label}"]`)
          const chips = [...(value?.parentElement?.querySelectorAll('.breakdown .chip') ?? [])]
          return {
            value: Number((value?.textContent ?? '').replaceAll(',', '')),
            chips: chips.map((c) => {
              const words = (c.textContent ?? '').split(' ')
              return { state: words.slice(0, -1).join(' '), n: Number(words.at(-1)) }
            }),
          }
        })
      })
      const overview = (await page.evaluate(async () =>
        (await fetch('/dashboard/api/overview')).json(),
      )) as { handoffs: Record<string, number>; transfers: Record<string, number> }
      assert.ok((overview.handoffs.done ?? 0) > 0 && (overview.transfers.terminated ?? 0) > 0)
      const [handoffs, transfers] = cards
      for (const card of cards) {
        assert.equal(
          card!.chips.reduce((a, c) => a + c.n, 0),
          card!.value,
          'the chips add up to the card',
        )
      }
      for (const c of handoffs!.chips) {
        assert.ok(!['done', 'failed', 'returned', 'expired'].includes(c.state), c.state)
      }
      assert.ok(handoffs!.chips.some((c) => c.state === 'offered'))
      for (const c of transfers!.chips)
        assert.ok(['active', 'insolvent'].includes(c.state), c.state)
      await shoot('overview-ended')
    })

    test('sign-out ends the session', async () => {
      await Promise.all([page.waitForURL(`${hub.url}/`), page.click('#signout')])
      assert.ok(await page.locator('#signin-form').isVisible())
      const res = await page.evaluate(async () => (await fetch('/dashboard/api/overview')).status)
      assert.equal(res, 401)
      assert.deepEqual(cspViolations, [], 'no page broke the Content-Security-Policy')
      assert.deepEqual(pageErrors, [], 'no uncaught error in the pages')
    })
  })
}

describe('dashboard without an operator token', () => {
  test('every dashboard path shows only a page saying it is disabled', async () => {
    const hub = await startTestHub(testStores[0]!)
    try {
      const root = await fetch(`${hub.url}/`)
      assert.equal(root.status, 403)
      assert.match(await root.text(), /dashboard is disabled/)
      const page = await fetch(`${hub.url}/dashboard/`)
      assert.match(await page.text(), /dashboard is disabled/)
      const signIn = await call(hub, 'POST', '/dashboard/session', { body: { token: TOKEN } })
      assert.equal(signIn.status, 403)
      assert.equal(signIn.body.code, 'admin_disabled')
      const api = await call(hub, 'GET', '/dashboard/api/overview')
      assert.equal(api.body.code, 'admin_disabled')
    } finally {
      await hub.close()
    }
  })
})
