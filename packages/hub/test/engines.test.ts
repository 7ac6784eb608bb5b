// The README promises Node 20.19 and later on the 20 line, 22.12 and later on the 22 line, and 24:
// every package.json says so, `npm ci` installs nothing whose declared engine refuses it (no
// EBADENGINE warning on the machines' Node 20), and no locked package refuses any Node the
// promise names, not only the one running the test.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from './support.js'

/** The part of the semver package (npm's own range logic) this test uses. */
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean
  validRange(range: string): string | null
}

const PROMISED = '^20.19 || >=22.12'
/** The lines the README names, each checked at the first version of it the promise admits. */
const LINES = [20, 22, 24]

const readJson = (file: string) =>
  JSON.parse(readFileSync(path.join(repoRoot, file), 'utf8')) as Record<string, unknown>

/** The first version of a major line the promised range admits: its minimum on that line. */
function firstPromised(major: number): string {
  for (let minor = 0; minor < 100; minor++) {
    const version = `${major}.${minor}.0`
    if (semver.satisfies(version, PROMISED)) return version
  }
  assert.fail(`the promise ${PROMISED} admits no Node ${major}`)
}

test('every package.json and README promises the same Node versions', () => {
  const manifests = [
    'package.json',
    ...(readJson('package.json').workspaces as string[]).map((w) => `${w}/package.json`),
  ]
  for (const file of manifests) {
    const engines = readJson(file).engines as { node?: string } | undefined
    assert.equal(engines?.node, PROMISED, file)
  }
  assert.match(
    readFileSync(path.join(repoRoot, 'README.md'), 'utf8'),
    /Node\.js 20 \(20\.19 or later\), 22 \(22\.12 or later\) or 24/,
  )
})

test('no locked package refuses the first Node of any line the promise names', () => {
  const lock = readJson('package-lock.json') as {
    packages: Record<string, { engines?: { node?: string } | string[] }>
  }
  const minimums = LINES.map(firstPromised)
  assert.deepEqual(minimums, ['20.19.0', '22.12.0', '24.0.0'])
  const refusals: string[] = []
  for (const [where, entry] of Object.entries(lock.packages)) {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node
    if (range === undefined) continue
    assert.ok(semver.validRange(range), `${where} declares node ${range}`)
    for (const version of minimums) {
      if (!semver.satisfies(version, range)) refusals.push(`${where} (${range}) refuses ${version}`)
    }
  }
  assert.deepEqual(refusals, [])
})

test('npm ci warns of no unsupported engine', () => {
  const run = spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts', '--offline'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
  assert.equal(run.status, 0, run.stderr)
  assert.doesNotMatch(`${run.stdout}${run.stderr}`, /EBADENGINE/)
})
