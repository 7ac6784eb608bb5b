import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'

// A network command (`baton hub health`, `baton me show`) is a process that starts, sends a
// request or two and exits, so what it loads is most of what it costs: the schemas of every
// contract, the operation registry and the server's libraries took it to 1.2-1.8 s. Timings
// belong in bench/cli.ts; this holds what makes them.
const packages = path.resolve(import.meta.dirname, '../..')

/** Where a workspace package's entry is in the sources. */
const ENTRIES: Record<string, string> = {
  '@baton/protocol': 'protocol/src/index.ts',
  '@baton/protocol/primitives': 'protocol/src/primitives.ts',
  '@baton/context': 'context/src/index.ts',
  '@baton/client': 'client/src/index.ts',
  '@baton/client/requests': 'client/src/requests.ts',
}

/** What a module loads as it is evaluated: its static imports and re-exports, not types. */
function loadedBy(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^(?:import|export)\s(?!type\s)[^']*?\sfrom\s+'([^']+)'/gm)].map(
    (m) => m[1]!,
  )
}

/** Every module, and every package outside the workspace, that loading `roots` loads. */
function closure(roots: string[]): { modules: Set<string>; packages: Set<string> } {
  const modules = new Set<string>()
  const external = new Set<string>()
  const visit = (file: string) => {
    if (modules.has(file)) return
    modules.add(file)
    for (const s of loadedBy(file)) {
      if (s.startsWith('.')) {
        const target = path.resolve(path.dirname(file), s).replace(/\.js$/, '.ts')
        assert.ok(existsSync(target), `${file} imports ${s}`)
        visit(target)
      } else if (ENTRIES[s]) visit(path.join(packages, ENTRIES[s]))
      else if (!s.startsWith('node:')) external.add(s)
    }
  }
  for (const root of roots) visit(path.join(packages, root))
  return { modules, packages: external }
}

const relative = (files: Set<string>) => [...files].map((f) => path.relative(packages, f))

test('a generated command runs over HTTP loading no schema, registry or server library', () => {
  // What main.ts imports to find and run a generated command (command-index.ts and
  // run-command.ts), and what `baton request` runs.
  const { modules, packages: used } = closure([
    'hub/src/cli/main.ts',
    'hub/src/cli/command-index.ts',
    'hub/src/cli/run-command.ts',
    'hub/src/cli/request-command.ts',
  ])
  assert.deepEqual([...used], [], 'no package outside the workspace')
  const loaded = relative(modules)
  for (const heavy of [
    'protocol/src/index.ts',
    'protocol/src/contract.ts',
    'client/src/index.ts',
    'context/src/index.ts',
    'hub/src/cli/generated.ts',
    'hub/src/ops/registry.ts',
    'hub/src/ops/operation.ts',
    'hub/src/app.ts',
    'hub/src/config.ts',
  ]) {
    assert.ok(!loaded.includes(heavy), `a network command loads ${heavy}`)
  }
  assert.ok(loaded.includes('client/src/transport.ts') && loaded.includes('hub/src/ops/remote.ts'))
})
