// The README promises Node 20.11 and later: `npm ci` installs nothing whose declared engine
// refuses it (no EBADENGINE warning on the machines' Node 20 either).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { repoRoot } from './support.js'

test('npm ci warns of no unsupported engine', () => {
  const run = spawnSync('npm', ['ci', '--dry-run', '--ignore-scripts', '--offline'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
  assert.equal(run.status, 0, run.stderr)
  assert.doesNotMatch(`${run.stdout}${run.stderr}`, /EBADENGINE/)
})
