#!/usr/bin/env node
// Builds the four packages to their dist folders (tsc project references, incremental), then
// copies the files the hub reads at run time that are not TypeScript: the dashboard's assets.
// Plain JavaScript, so it runs from `npm ci` before anything else is built.
import { spawnSync } from 'node:child_process'
import { cpSync, rmSync } from 'node:fs'
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

// `baton --help` reads the names of the generated commands from an index written here, so it
// does not load the operation registry and every schema in it.
const { writeCommandIndex } = await import('../packages/hub/dist/cli/command-index.js')
await writeCommandIndex()
