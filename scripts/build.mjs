#!/usr/bin/env node
// Builds the four packages to their dist folders (tsc project references, incremental), then
// copies the files the hub reads at run time that are not TypeScript: the dashboard's assets
// and the guide sources.
// Plain JavaScript, so it runs from `npm ci` before anything else is built.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')
const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
const built = spawnSync(process.execPath, [tsc, '-b', path.join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
})
if (built.status !== 0) process.exit(built.status ?? 1)

const assets = path.join(root, 'packages/hub/src/web/assets')
const target = path.join(root, 'packages/hub/dist/web/assets')
rmSync(target, { recursive: true, force: true })
cpSync(assets, target, { recursive: true })

// The public guides the hub serves (the README and docs/*.md) ship inside the package, beside
// the module that reads them, so an installed hub serves them as a checkout does.
const guides = path.join(root, 'packages/hub/dist/guides/sources')
rmSync(guides, { recursive: true, force: true })
mkdirSync(path.join(guides, 'docs'), { recursive: true })
cpSync(path.join(root, 'README.md'), path.join(guides, 'README.md'))
for (const name of readdirSync(path.join(root, 'docs'))) {
  if (/^[a-z0-9-]+\.md$/.test(name)) {
    cpSync(path.join(root, 'docs', name), path.join(guides, 'docs', name))
  }
}

// `baton --help` reads the names of the generated commands from an index written here, so it
// does not load the operation registry and every schema in it.
const { writeCommandIndex } = await import('../packages/hub/dist/cli/command-index.js')
await writeCommandIndex()
