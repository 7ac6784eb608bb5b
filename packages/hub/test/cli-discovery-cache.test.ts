import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createIdentity, saveIdentity } from '@baton/client'
import { DISCOVERY_PATH } from '@baton/protocol'
import { discoveryCache } from '../src/cli/discovery-cache.js'
import { batonBin, startTestHub, type TestHub, testStores } from './support.js'

/** Runs the built `baton` as its own process, so nothing is kept but what it keeps on disk. */
function baton(
  argv: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [batonBin, ...argv], { env }, (error, stdout, stderr) => {
      const code = error ? (error as { code?: number }).code : 0
      resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
    })
  })
}

for (const store of testStores) {
  describe(`baton keeps discovery between commands as the hub allows (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    let env: NodeJS.ProcessEnv
    let identityFile: string
    let url: string
    /** Each discovery request the hub answered: what it was asked with, and its status. */
    const asked: { ifNoneMatch: string | undefined; status: number }[] = []

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMISSION: 'open' })
      hub.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        if (!req.url?.startsWith(DISCOVERY_PATH)) return
        res.once('finish', () =>
          asked.push({ ifNoneMatch: req.headers['if-none-match'], status: res.statusCode }),
        )
      })
      dir = await mkdtemp(path.join(tmpdir(), 'baton-cli-cache-'))
      env = { ...process.env, BATON_CACHE_DIR: path.join(dir, 'cache') }
      url = `${hub.url}${DISCOVERY_PATH}`
      identityFile = path.join(dir, 'agent.identity.json')
      await saveIdentity(identityFile, createIdentity(url))
    })
    after(async () => {
      await hub.close()
      await rm(dir, { recursive: true, force: true })
    })

    /** Sets until when the kept document is fresh, as if the hub had said so that long ago. */
    async function freshUntil(at: number): Promise<void> {
      const cache = discoveryCache(env.BATON_CACHE_DIR)
      const kept = await cache.get(url)
      assert.ok(kept, 'a document is kept')
      await cache.set(url, { ...kept, freshUntil: at })
    }

    test('the first command asks; while fresh, no command asks again', async () => {
      asked.length = 0
      const first = await baton(['me', 'show', '--identity', identityFile, '--json'], env)
      assert.equal(first.code, 0)
      assert.deepEqual(asked, [{ ifNoneMatch: undefined, status: 200 }])
      await freshUntil(Date.now() + 3_600_000)
      for (const argv of [
        ['me', 'show', '--identity', identityFile],
        ['resource', 'list', '--identity', identityFile],
        ['request', url, identityFile, 'GET', '/v1/me'],
      ]) {
        const run = await baton(argv, env)
        assert.equal(run.code, 0, `${argv.join(' ')}: ${run.stderr}`)
      }
      assert.equal(asked.length, 1)
    })

    test('once stale, it is revalidated with its ETag: 304, and kept fresh again', async () => {
      await freshUntil(0)
      asked.length = 0
      assert.equal((await baton(['me', 'show', '--identity', identityFile], env)).code, 0)
      assert.equal(asked.length, 1)
      assert.equal(asked[0]!.status, 304)
      assert.match(asked[0]!.ifNoneMatch ?? '', /^"/)
      const kept = await discoveryCache(env.BATON_CACHE_DIR).get(url)
      assert.ok(kept && kept.freshUntil > Date.now())
    })

    test('a compute run revalidates it however fresh: availability is live', async () => {
      await freshUntil(Date.now() + 3_600_000)
      asked.length = 0
      // No runtime serves this test hub: the submit is refused, after discovery was asked.
      const run = await baton(
        [
          'compute',
          'run',
          '--language',
          'json-expr-v1',
          '--program',
          '{"+":[1,2]}',
          '--idempotency-key',
          'cache-test-1',
          '--identity',
          identityFile,
          '--json',
        ],
        env,
      )
      assert.equal(JSON.parse(run.stdout).code, 'compute_unavailable')
      assert.equal(run.code, 2)
      assert.deepEqual(
        asked.map((a) => a.status),
        [304],
      )
    })

    test('a kept file that is no discovery document is not used: the hub is asked', async () => {
      await discoveryCache(env.BATON_CACHE_DIR).set(url, {
        document: { apiBase: 'http://127.0.0.1:9' } as never,
        freshUntil: Date.now() + 3_600_000,
      })
      asked.length = 0
      assert.equal((await baton(['me', 'show', '--identity', identityFile], env)).code, 0)
      assert.deepEqual(asked, [{ ifNoneMatch: undefined, status: 200 }])
    })
  })
}
