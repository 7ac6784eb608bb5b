import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createSigner, signOffer, toHandoff, toHandoffJson } from '@baton/context'
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

    test('identity init --name names the key on the hub at once; baton me label renames it', async () => {
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
        const shown = JSON.parse(init.stdout) as { principal: string; labelSet: boolean }
        assert.equal(shown.labelSet, true)
        const saved = JSON.parse(await readFile(path.join(dir, 'a.json'), 'utf8'))
        assert.equal(saved.name, 'planner')
        const target = encodeURIComponent(shown.principal)
        let read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
        assert.equal(read.body.label, 'planner')
        assert.equal(read.body.agentLabel, 'planner')
        const set = await baton(
          ['me', 'label', '--identity', 'a.json', '--label', 'coder', '--hub', hub.url, '--json'],
          dir,
        )
        assert.equal(set.code, 0, set.stdout)
        assert.equal(JSON.parse(set.stdout).label, 'coder')
        read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
        assert.equal(read.body.label, 'coder')
        // A hub that cannot be reached: the file is kept, and it says how to set the name later.
        const away = await baton(
          [
            'identity',
            'init',
            '--hub',
            'http://127.0.0.1:1/.well-known/agent-net',
            '--out',
            'b.json',
            '--name',
            'reviewer',
          ],
          dir,
        )
        assert.equal(away.code, 0)
        const later = JSON.parse(away.stdout) as { labelSet: boolean; setName: string }
        assert.equal(later.labelSet, false)
        assert.equal(later.setName, "baton me label --identity b.json --label 'reviewer'")
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })

    test("the agent's label and the operator's are kept apart; the operator's is shown", async () => {
      const agent = await signedAgent(hub)
      const target = encodeURIComponent(agent.principal)
      await agent.setLabel('planner')
      const set = await call(hub, 'PUT', `/admin/v1/principals/${target}/label`, {
        headers: admin,
        body: { label: 'planner (prod)' },
      })
      assert.equal(set.status, 200)
      // The agent renames itself: its own label changes, the operator's stays and is shown.
      await agent.setLabel('boss')
      const me = await agent.me()
      assert.deepEqual(
        { label: me.label, agentLabel: me.agentLabel, operatorLabel: me.operatorLabel },
        { label: 'planner (prod)', agentLabel: 'boss', operatorLabel: 'planner (prod)' },
      )
      const read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
      assert.equal(read.body.label, 'planner (prod)')
      assert.equal(read.body.agentLabel, 'boss')
      const other = await signedAgent(hub)
      const labels = await other.request<{ labels: Record<string, string> }>(
        'GET',
        `/v1/labels?principals=${agent.principal},${other.principal}`,
      )
      assert.equal(labels.status, 200)
      assert.deepEqual(labels.body.labels, { [agent.principal]: 'planner (prod)' })
    })

    test('a rejected or suspended key may not name itself', async () => {
      const agent = await signedAgent(hub)
      const target = encodeURIComponent(agent.principal)
      for (const [decision, code] of [
        ['suspend', 'principal_suspended'],
        ['reject', 'admission_rejected'],
      ] as const) {
        await call(hub, 'POST', `/admin/v1/principals/${target}/${decision}`, { headers: admin })
        const refused = await agent.request('PUT', '/v1/me/label', { label: 'sneaky' })
        assert.equal((refused.body as { code: string }).code, code)
      }
      const read = await call(hub, 'GET', `/admin/v1/principals/${target}`, { headers: admin })
      assert.equal(read.body.agentLabel, null)
    })

    test('labels never decide authorization: two agents with one label are two principals', async () => {
      const owner = await signedAgent(hub)
      const twin = await signedAgent(hub)
      await owner.setLabel('twin')
      await twin.setLabel('twin')
      await call(hub, 'PUT', `/admin/v1/principals/${encodeURIComponent(twin.principal)}/label`, {
        headers: admin,
        body: { label: 'twin' },
      })
      const resource = await owner.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'labels',
        kind: 'note',
        data: { secret: 1 },
      })
      assert.equal(resource.status, 201)
      const read = await twin.request('GET', `/v1/resources/${resource.body.id}`)
      assert.equal((read.body as { code: string }).code, 'resource_forbidden')
      // A grant names its subject by did:key; a label is not a subject.
      const byLabel = await owner.request('POST', '/v1/capabilities', {
        resourceId: resource.body.id,
        subject: 'twin',
        actions: ['resource:read'],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      })
      assert.equal(byLabel.status, 400)
      const sent = await owner.request<{ id: string }>('POST', '/v1/messages', {
        recipient: owner.principal,
        body: { n: 1 },
        idempotencyKey: 'twin-1',
      })
      assert.equal(sent.status, 201)
      const inbox = await twin.request<{ messages: { id: string }[] }>('GET', '/v1/messages')
      assert.ok(!inbox.body.messages.some((m) => m.id === sent.body.id))
      const ack = await twin.request('POST', `/v1/messages/${sent.body.id}/ack`)
      assert.notEqual(ack.status, 200)
    })

    test('CLI listings and chain views show each label beside the short did:key', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'baton-label-cli-'))
      try {
        const discovery = `${hub.url}/.well-known/agent-net`
        const init = async (file: string, name: string) =>
          JSON.parse(
            (
              await baton(
                ['identity', 'init', '--hub', discovery, '--out', file, '--name', name],
                dir,
              )
            ).stdout,
          ) as { principal: string }
        const planner = await init('planner.json', 'planner')
        const coder = await init('coder.json', 'coder')
        const short = (did: string) => `did:key:…${did.slice(-4)}`
        const as = (file: string) => ['--identity', file, '--hub', hub.url]
        const sent = await baton(
          [
            'message',
            'send',
            ...as('planner.json'),
            '--recipient',
            coder.principal,
            '--body',
            '{"n":1}',
            '--idempotency-key',
            'labels-cli-1',
          ],
          dir,
        )
        assert.equal(sent.code, 0, sent.stdout)
        const listed = await baton(['message', 'list', ...as('coder.json')], dir)
        assert.equal(listed.code, 0, listed.stdout)
        const [message] = (JSON.parse(listed.stdout) as { messages: Record<string, string>[] })
          .messages
        assert.equal(message?.sender, `planner (${short(planner.principal)})`)
        assert.equal(message?.recipient, `coder (${short(coder.principal)})`)
        // --json prints the wire body: bare did:keys.
        const wire = await baton(['message', 'list', ...as('coder.json'), '--json'], dir)
        assert.equal(JSON.parse(wire.stdout).messages[0].sender, planner.principal)
        // The operator's list shows each principal the same way.
        const principals = await baton(
          ['admin', 'principal', 'list', '--hub', hub.url, '--admin-token', ADMIN_TOKEN],
          dir,
        )
        assert.equal(principals.code, 0, principals.stdout)
        assert.ok(
          (
            JSON.parse(principals.stdout) as { principals: { principal: string }[] }
          ).principals.some((p) => p.principal === `planner (${short(planner.principal)})`),
        )
        // A chain verified offline shows the hub's labels for it with --identity, and the trust
        // file's own.
        const identity = JSON.parse(await readFile(path.join(dir, 'planner.json'), 'utf8'))
        const signed = signOffer({
          signer: await createSigner({
            iss: planner.principal,
            key: identity.privateKeyJwk,
            kid: planner.principal,
          }),
          aud: coder.principal,
          dialog: 'labels',
        })
        await writeFile(path.join(dir, 'h.json'), JSON.stringify(toHandoffJson(toHandoff(signed))))
        await writeFile(
          path.join(dir, 'trust.json'),
          JSON.stringify({
            [planner.principal]: { key: identity.publicKeyJwk, kid: planner.principal },
          }),
        )
        const verify = (...more: string[]) =>
          baton(
            [
              'context',
              'verify',
              '--trust',
              'trust.json',
              '--aud',
              coder.principal,
              '--handoff-file',
              'h.json',
              ...more,
            ],
            dir,
          )
        const named = JSON.parse((await verify('--identity', 'coder.json')).stdout)
        assert.equal(named.ok, true)
        assert.equal(named.iss, `planner (${short(planner.principal)})`)
        assert.equal(named.aud, `coder (${short(coder.principal)})`)
        const bare = JSON.parse((await verify('--identity', 'coder.json', '--json')).stdout)
        assert.equal(bare.iss, planner.principal)
        await writeFile(
          path.join(dir, 'trust.json'),
          JSON.stringify({
            [planner.principal]: {
              key: identity.publicKeyJwk,
              kid: planner.principal,
              label: 'lead',
            },
          }),
        )
        const local = JSON.parse((await verify()).stdout)
        assert.equal(local.iss, `lead (${short(planner.principal)})`)
        assert.equal(local.aud, coder.principal)
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
}

for (const store of testStores) {
  describe(`agent labels under operator admission (${store.name})`, () => {
    let hub: TestHub
    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: ADMIN_TOKEN })
    })
    after(() => hub?.close())

    test('identity init --name enrols the key named: the operator deciding on it sees the name', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'baton-label-pending-'))
      try {
        const discovery = `${hub.url}/.well-known/agent-net`
        const init = await baton(
          ['identity', 'init', '--hub', discovery, '--out', 'a.json', '--name', 'planner'],
          dir,
        )
        assert.equal(init.code, 0)
        const shown = JSON.parse(init.stdout) as {
          principal: string
          labelSet: boolean
          state: string
        }
        assert.equal(shown.labelSet, true)
        assert.equal(shown.state, 'pending')
        const pending = await call(hub, 'GET', '/admin/v1/principals?state=pending', {
          headers: admin,
        })
        const listed = (pending.body.principals as { principal: string; label: string }[]).find(
          (p) => p.principal === shown.principal,
        )
        assert.equal(listed?.label, 'planner')
        // Named while pending, it is still pending: a label admits nothing.
        const me = await baton(
          ['me', 'show', '--identity', 'a.json', '--hub', hub.url, '--json'],
          dir,
        )
        assert.equal(JSON.parse(me.stdout).state, 'pending')
        const read = await baton(
          ['resource', 'list', '--identity', 'a.json', '--hub', hub.url, '--json'],
          dir,
        )
        assert.equal(JSON.parse(read.stdout).code, 'admission_pending')
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
}
