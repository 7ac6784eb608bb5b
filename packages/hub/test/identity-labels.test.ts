import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { AgentLabel } from '@baton/protocol'
import {
  batonBin,
  call,
  PG_KEY_SECRET,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
} from './support.js'

const ADMIN_TOKEN = 'op-secret-0123456789abcdefghijklmnopqrstuv'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

function baton(args: string[], cwd: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [batonBin, ...args],
      { cwd, env: { ...process.env, BATON_HUB_KEY_SECRET: PG_KEY_SECRET }, timeout: 60_000 },
      (error, stdout) => {
        const code = error ? ((error as { code?: number }).code ?? 2) : 0
        resolve({ code: typeof code === 'number' ? code : 2, stdout })
      },
    )
  })
}

test('a label is 1 to 64 printable characters with no space at either end', () => {
  for (const ok of [
    'planner',
    'code reviewer',
    'Prüfer 2',
    '計画',
    '<img src=x onerror=alert(1)>',
  ]) {
    assert.equal(AgentLabel.safeParse(ok).success, true, ok)
  }
  assert.equal(AgentLabel.safeParse('x'.repeat(64)).success, true)
  for (const bad of ['', ' planner', 'planner ', 'x'.repeat(65), 'a\nb', 'a\u0000b', 'a\u202eb']) {
    assert.equal(AgentLabel.safeParse(bad).success, false, JSON.stringify(bad))
  }
})

for (const store of testStores) {
  describe(`agent labels (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMIN_TOKEN: ADMIN_TOKEN,
        BATON_ADMISSION: 'open',
      })
    })
    after(() => hub?.close())

    test('an agent labels itself; /v1/me and the admin list show it; a new label replaces it', async () => {
      const agent = await signedAgent(hub)
      assert.equal((await agent.me()).label, null)
      const set = await agent.setLabel('planner')
      assert.equal(set.label, 'planner')
      assert.equal(set.principal, agent.principal)
      assert.equal((await agent.me()).label, 'planner')
      const list = await call(hub, 'GET', '/admin/v1/principals', { headers: admin })
      const principals = list.body.principals as { principal: string; label: string | null }[]
      assert.equal(principals.find((p) => p.principal === agent.principal)?.label, 'planner')
      assert.equal((await agent.setLabel('coder')).label, 'coder')
      assert.equal((await agent.me()).label, 'coder')
    })

    test('a label outside its shape is refused by the schema and nothing changes', async () => {
      const agent = await signedAgent(hub)
      await agent.setLabel('coder')
      for (const label of ['', 'a\u0007b', 'y'.repeat(65), 7, null]) {
        const answer = await agent.request('PUT', '/v1/me/label', { label })
        assert.equal(answer.status, 400, JSON.stringify(label))
        assert.equal((answer.body as { code: string }).code, 'invalid_request')
      }
      assert.equal((await agent.me()).label, 'coder')
    })

    test('the operator labels any principal; an unknown one is principal_not_found', async () => {
      const agent = await signedAgent(hub)
      const target = encodeURIComponent(agent.principal)
      const set = await call(hub, 'PUT', `/admin/v1/principals/${target}/label`, {
        headers: admin,
        body: { label: 'reviewer' },
      })
      assert.equal(set.status, 200)
      assert.equal(set.body.label, 'reviewer')
      assert.equal((await agent.me()).label, 'reviewer')
      const read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
      assert.equal(read.body.label, 'reviewer')
      const missing = await call(
        hub,
        'PUT',
        '/admin/v1/principals/did%3Akey%3Az6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK/label',
        { headers: admin, body: { label: 'nobody' } },
      )
      assert.equal(missing.body.code, 'principal_not_found')
    })

    test('identity init --name keeps the name; baton me label sets it on the hub', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'baton-label-'))
      try {
        const discovery = `${hub.url}/.well-known/agent-net`
        const bad = await baton(
          ['identity', 'init', '--hub', discovery, '--out', 'x.json', '--name', ' '],
          dir,
        )
        assert.notEqual(bad.code, 0)
        const init = await baton(
          ['identity', 'init', '--hub', discovery, '--out', 'a.json', '--name', 'planner'],
          dir,
        )
        assert.equal(init.code, 0)
        const shown = JSON.parse(init.stdout) as { principal: string; setName: string }
        const saved = JSON.parse(await readFile(path.join(dir, 'a.json'), 'utf8'))
        assert.equal(saved.name, 'planner')
        assert.equal(shown.setName, "baton me label --identity a.json --label 'planner'")
        const set = await baton(
          ['me', 'label', '--identity', 'a.json', '--label', 'planner', '--hub', hub.url, '--json'],
          dir,
        )
        assert.equal(set.code, 0, set.stdout)
        assert.equal(JSON.parse(set.stdout).label, 'planner')
        const target = encodeURIComponent(shown.principal)
        const read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
        assert.equal(read.body.label, 'planner')
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
}
