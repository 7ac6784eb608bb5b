import { type Browser, chromium, type Page } from 'playwright-core'

/** Debian's chromium, installed by `.ci/run` when missing; never a downloaded browser. */
export const CHROMIUM_PATH = process.env.BATON_CHROMIUM ?? '/usr/bin/chromium'

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
]

/**
 * Launches headless chromium for browser tests. Playwright gives every launch a fresh temporary
 * profile directory and removes it on close.
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS, headless: true })
}

/**
 * Signs the page in to a hub's dashboard with the operator token and waits until the app has
 * drawn its first view. The sign-in page and the app share one URL, so waiting for the URL alone
 * can return before the form's navigation: a hash route taken then is lost to the app's load.
 */
export async function signIn(page: Page, hubUrl: string, token: string): Promise<void> {
  await page.goto(`${hubUrl}/dashboard/`)
  await page.fill('#token', token)
  await page.click('button[type=submit]')
  await page.waitForSelector('[data-nav][aria-current="page"]')
}
