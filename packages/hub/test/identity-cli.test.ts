import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { batonBin, PG_KEY_SECRET, startTestHub, type TestHub, testStores } from './support.js'

const ADMIN_TOKEN = 'op-secret-0123456789abcdefghijklmnopqrstuv'

interface Run {
  code: number
  stdout: string
  stderr: string
}

function baton(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [batonBin, ...args],
      {
        cwd,
        env: {
          ...process.env,
          ...(args.includes('--database-url') ? { BATON_HUB_KEY_SECRET: PG_KEY_SECRET } : {}),
          ...env,
        },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? 2) : 0
        resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
      },
    )
  })
}

for (const store of testStores) {
  describe(`baton identity, request and admin (${store.name})`, () => {
    let hub: TestHub
    let dir: string
    let discovery: string
    let principal: string
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: ADMIN_TOKEN })
      dir = await mkdtemp(path.join(tmpdir(), 'baton-cli-'))
      discovery = `${hub.url}/.well-known/agent-net`
    })
    after(async () => {
      await hub?.close()
      await rm(dir, { recursive: true, force: true })
    })

    test('identity init writes a 0600 identity file and never overwrites it', async () => {
      const run = await baton(
        ['identity', 'init', '--hub', discovery, '--out', 'agent.identity.json'],
        dir,
      )
      assert.equal(run.code, 0, run.stderr)
      principal = JSON.parse(run.stdout).principal
      assert.match(principal, /^did:key:z6Mk/)
      const file = path.join(dir, 'agent.identity.json')
      assert.equal((await stat(file)).mode & 0o777, 0o600)
      const saved = JSON.parse(await readFile(file, 'utf8'))
      assert.equal(saved.principal, principal)
      assert.equal(saved.hub, discovery)
      assert.equal(saved.privateKeyJwk.crv, 'Ed25519')

      const again = await baton(
        ['identity', 'init', '--hub', discovery, '--out', 'agent.identity.json'],
        dir,
      )
      assert.equal(again.code, 1)
      assert.match(again.stderr, /identity_file_exists/)
      assert.equal(JSON.parse(await readFile(file, 'utf8')).principal, principal)
    })

    test('request signs GET /v1/me: JSON on stdout, the status on stderr, pending until approved', async () => {
      const me = await baton(['request', discovery, 'agent.identity.json', 'GET', '/v1/me'], dir)
      assert.equal(me.code, 0, me.stderr)
      assert.match(me.stderr, /HTTP 200/)
      const body = JSON.parse(me.stdout)
      assert.equal(body.principal, principal)
      assert.equal(body.state, 'pending')

      const refused = await baton(
        ['request', discovery, 'agent.identity.json', 'GET', '/v1/messages?after=0&limit=20'],
        dir,
      )
      assert.equal(refused.code, 1)
      assert.match(refused.stderr, /HTTP 403/)
      assert.equal(JSON.parse(refused.stdout).code, 'admission_pending')
    })

    test('admin approves on the database directly and through the admin API', async () => {
      const target =
        store.name === 'sqlite'
          ? ['--data-dir', hub.config.dataDir]
          : ['--database-url', hub.config.databaseUrl!]
      const list = await baton(['admin', 'list', '--state', 'pending', ...target], dir)
      assert.equal(list.code, 0, list.stderr)
      assert.deepEqual(
        JSON.parse(list.stdout).principals.map((p: { principal: string }) => p.principal),
        [principal],
      )
      const approved = await baton(['admin', 'approve', principal, ...target], dir)
      assert.equal(approved.code, 0, approved.stderr)
      assert.equal(JSON.parse(approved.stdout).state, 'approved')

      const viaApi = await baton(['admin', 'show', principal, '--hub', hub.url], dir, {
        BATON_ADMIN_TOKEN: ADMIN_TOKEN,
      })
      assert.equal(viaApi.code, 0, viaApi.stderr)
      assert.equal(JSON.parse(viaApi.stdout).state, 'approved')
      const wrong = await baton(['admin', 'list', '--hub', hub.url, '--token', 'x'.repeat(40)], dir)
      assert.equal(wrong.code, 1)
      assert.match(wrong.stderr, /admin_token_invalid/)
    })

    test("the seed walkthrough's command shapes pass signature checks once approved", async () => {
      const task = path.join(dir, 'handoff-task.json')
      await writeFile(
        task,
        '{\n"namespace": "handoff-x-RUN",\n"kind": "net-task-handoff/v1",\n"data": {}\n}',
      )
      const commands = [
        ['POST', '/v1/resources', 'handoff-task.json'],
        ['GET', '/v1/home/file?path=handoff%2FRUN_ID%2Fowner.json'],
        ['GET', '/v1/resources?namespace=handoff-x-RUN&kind=net-task-handoff%2Fv1'],
        ['DELETE', '/v1/capabilities/GRANT_ID'],
      ]
      for (const c of commands) {
        const run = await baton(['request', discovery, 'agent.identity.json', ...c], dir)
        // Whatever the feature route answers, it is not a signature or admission refusal.
        const status = Number(/HTTP (\d{3})/.exec(run.stderr)?.[1])
        assert.ok(
          status >= 200 && status !== 401 && status !== 403,
          `${c.join(' ')}: ${run.stderr} ${run.stdout}`,
        )
        assert.equal(run.code, status < 300 ? 0 : status < 500 ? 1 : 2)
        assert.doesNotThrow(() => JSON.parse(run.stdout))
      }
      const me = await baton(['request', discovery, 'agent.identity.json', 'GET', '/v1/me'], dir)
      assert.equal(JSON.parse(me.stdout).state, 'approved')
    })

    test('request refuses an identity file readable by others, and bad arguments', async () => {
      const file = path.join(dir, 'agent.identity.json')
      await chmod(file, 0o644)
      try {
        const run = await baton(['request', discovery, 'agent.identity.json', 'GET', '/v1/me'], dir)
        assert.equal(run.code, 1)
        assert.match(run.stderr, /identity_file_insecure/)
      } finally {
        await chmod(file, 0o600)
      }
      const usage = await baton(['request', discovery, 'agent.identity.json', 'GET'], dir)
      assert.equal(usage.code, 64)
    })
  })
}
