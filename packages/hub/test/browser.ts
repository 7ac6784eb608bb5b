import { type Browser, chromium } from 'playwright-core'

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
