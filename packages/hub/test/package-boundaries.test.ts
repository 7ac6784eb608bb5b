import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { sourcesOf } from './sources.js'

// STYLE: dependencies point one way, protocol <- context <- client <- hub, and the hub's server
// imports no SDK code. Only the CLI, which is a client of a hub, may use @baton/client
// (packages/hub/README.md).
const packages = path.resolve(import.meta.dirname, '../..')
const WORKSPACES = ['protocol', 'context', 'client', 'hub'] as const

/** The module specifiers a source file imports or re-exports, static and dynamic. */
function specifiersOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [
    ...text.matchAll(/^(?:import|export)\s[^']*?\sfrom\s+'([^']+)'/gm),
    ...text.matchAll(/^import\s+'([^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map((m) => m[1]!)
}

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!

function externalImports(pkg: string): Set<string> {
  const used = new Set<string>()
  for (const file of sourcesOf(path.join(packages, pkg, 'src'))) {
    for (const s of specifiersOf(file)) {
      if (!s.startsWith('.') && !s.startsWith('node:')) used.add(packageOf(s))
    }
  }
  return used
}

describe('package boundaries', () => {
  test("each package's dependencies are exactly what its shipped code imports", () => {
    for (const pkg of WORKSPACES) {
      const manifest = JSON.parse(readFileSync(path.join(packages, pkg, 'package.json'), 'utf8'))
      assert.deepEqual(
        Object.keys(manifest.dependencies ?? {}).sort(),
        [...externalImports(pkg)].sort(),
        pkg,
      )
    }
  })

  test('workspace dependencies point one way: protocol <- context <- client <- hub', () => {
    const allowed: Record<(typeof WORKSPACES)[number], string[]> = {
      protocol: [],
      context: ['@baton/protocol'],
      client: ['@baton/protocol', '@baton/context'],
      hub: ['@baton/protocol', '@baton/context', '@baton/client'],
    }
    for (const pkg of WORKSPACES) {
      const workspaces = [...externalImports(pkg)].filter((s) => s.startsWith('@baton/'))
      assert.deepEqual(
        workspaces.filter((s) => !allowed[pkg].includes(s)),
        [],
        pkg,
      )
    }
  })

  test('no hub server module reaches @baton/client, directly or through the modules it imports', () => {
    const src = path.join(packages, 'hub/src')
    const cli = path.join(src, 'cli') + path.sep
    const server = sourcesOf(src).filter((f) => !f.startsWith(cli))
    // Test files beside server code check it as the server sees it, so they are held to it too.
    const serverTests = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => path.join(src, f))
      .filter((f) => !f.startsWith(cli))
    const offenders: string[] = []
    const seen = new Set<string>()
    const visit = (file: string, chain: string[]) => {
      if (seen.has(file)) return
      seen.add(file)
      for (const s of specifiersOf(file)) {
        if (packageOf(s) === '@baton/client') {
          offenders.push([...chain, file].map((f) => path.relative(src, f)).join(' -> '))
        } else if (s.startsWith('.')) {
          const target = path.resolve(path.dirname(file), s).replace(/\.js$/, '.ts')
          // The shared test harness (test/) plays the agents, so it is a client and is not followed.
          if (target.startsWith(src + path.sep) && existsSync(target))
            visit(target, [...chain, file])
        }
      }
    }
    for (const file of [...server, ...serverTests]) visit(file, [])
    assert.ok(server.length > 50)
    assert.deepEqual(offenders, [])
  })
})
