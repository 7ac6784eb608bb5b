import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { HomeClient, type SignedBody, SignedClient } from '@baton/client'
import type { HomeFileListView, HomeFileView, HomeFileWriteView } from '@baton/protocol'
import {
  call,
  restartableHub,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
} from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }

interface Agent {
  principal: string
  client: SignedClient
  home: HomeClient
}

/** A new identity on a hub, enrolled by a signed GET /v1/me (approved at once: open admission). */
async function agent(hub: { url: string }): Promise<Agent> {
  const client = await signedAgent(hub)
  return { principal: client.principal, client, home: new HomeClient(client) }
}

type Answer = { status: number; body: Record<string, unknown> & { code?: string } }

async function put(a: Agent, body: SignedBody): Promise<Answer> {
  const res = await a.client.request<Answer['body']>('PUT', '/v1/home/file', body)
  return { status: res.status, body: res.body }
}

async function get(a: Agent, p: string): Promise<Answer> {
  const res = await a.client.request<Answer['body']>(
    'GET',
    `/v1/home/file?path=${encodeURIComponent(p)}`,
  )
  return { status: res.status, body: res.body }
}

/** seed 000: handoff-owner-checkpoint.json with its placeholders filled in. */
function ownerCheckpoint(run: string, peer: string) {
  const prepared = {
    recipient: peer,
    body: { schema: 'net-task-notice/v1', runId: run, taskId: 'rs_T', taskVersion: 1 },
    idempotencyKey: `handoff:${run}:task:rs_T:v1`,
  }
  return {
    path: `handoff/${run}/owner.json`,
    expectedRevision: 0,
    content: JSON.stringify({
      schema: 'net-task-checkpoint/v1',
      runId: run,
      role: 'owner',
      taskId: 'rs_T',
      taskVersion: 1,
      stage: 'notice-prepared',
      peer,
      grantId: 'gr_G',
      preparedMessage: prepared,
    }),
  }
}

for (const store of testStores) {
  describe(`home files (${store.name})`, () => {
    let hub: TestHub
    let owner: Agent
    let peer: Agent
    before(async () => {
      hub = await startTestHub(store, OPEN)
      owner = await agent(hub)
      peer = await agent(hub)
    })
    after(async () => {
      await hub?.close()
    })

    test('the seed checkpoint: create at revision 0, read by encoded path, complete at revision 1', async () => {
      const cp = ownerCheckpoint('run-h1', peer.principal)
      const created = await put(owner, cp)
      assert.equal(created.status, 200, JSON.stringify(created.body))
      const view = created.body as unknown as HomeFileWriteView
      assert.equal(view.path, 'handoff/run-h1/owner.json')
      assert.equal(view.revision, 1)
      assert.equal(view.size, Buffer.byteLength(cp.content))
      assert.ok(!Number.isNaN(Date.parse(view.updatedAt)))

      const read = await owner.client.request<HomeFileView>(
        'GET',
        '/v1/home/file?path=handoff%2Frun-h1%2Fowner.json',
      )
      assert.equal(read.status, 200)
      assert.equal(read.body.content, cp.content)
      assert.equal(read.body.revision, 1)

      const complete = await put(owner, {
        path: cp.path,
        expectedRevision: 1,
        content: JSON.stringify({ schema: 'net-task-checkpoint/v1', stage: 'result-verified' }),
      })
      assert.equal(complete.status, 200)
      assert.equal(complete.body.revision, 2)
    })

    test('revision 0 is create-only; an identical repeat of a committed write answers it again', async () => {
      const first = await owner.home.write({ path: 'cp/a.json', expectedRevision: 0, content: 'A' })
      const repeat = await owner.home.write({
        path: 'cp/a.json',
        expectedRevision: 0,
        content: 'A',
      })
      assert.deepEqual(repeat, first)
      const other = await put(owner, { path: 'cp/a.json', expectedRevision: 0, content: 'B' })
      assert.equal(other.status, 409)
      assert.equal(other.body.code, 'revision_conflict')
      assert.equal(other.body.currentRevision, 1)
      assert.equal((await owner.home.read('cp/a.json')).content, 'A')
    })

    test('updates commit only at expectedRevision; a conflict tells currentRevision', async () => {
      await owner.home.write({ path: 'cp/b.json', expectedRevision: 0, content: 'v1' })
      const v2 = await owner.home.write({ path: 'cp/b.json', expectedRevision: 1, content: 'v2' })
      assert.equal(v2.revision, 2)
      // A lost answer: the same write again is the committed write, not a conflict.
      const again = await owner.home.write({
        path: 'cp/b.json',
        expectedRevision: 1,
        content: 'v2',
      })
      assert.deepEqual(again, v2)
      const stale = await put(owner, { path: 'cp/b.json', expectedRevision: 1, content: 'other' })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.code, 'revision_conflict')
      assert.equal(stale.body.currentRevision, 2)
      const ahead = await put(owner, { path: 'cp/b.json', expectedRevision: 7, content: 'x' })
      assert.equal(ahead.body.currentRevision, 2)
      const missing = await put(owner, { path: 'cp/none.json', expectedRevision: 3, content: 'x' })
      assert.equal(missing.status, 409)
      assert.equal(missing.body.currentRevision, 0)
      assert.equal((await owner.home.read('cp/b.json')).content, 'v2')
    })

    test('homes are private: the same path is a different file per principal; unused is 404', async () => {
      const cp = ownerCheckpoint('run-iso', peer.principal)
      await owner.home.write(cp)
      const peek = await get(peer, cp.path)
      assert.equal(peek.status, 404)
      assert.equal(peek.body.code, 'home_file_not_found')
      const own = await peer.home.write({ ...cp, content: 'peer copy' })
      assert.equal(own.revision, 1)
      assert.equal((await owner.home.read(cp.path)).content, cp.content)
      assert.equal((await peer.home.read(cp.path)).content, 'peer copy')
      const third = await agent(hub)
      assert.deepEqual(await third.home.list(), { files: [], nextAfter: null })
      const del = await third.client.request<{ code: string }>(
        'DELETE',
        `/v1/home/file?path=${encodeURIComponent(cp.path)}&expectedRevision=1`,
      )
      assert.equal(del.status, 404)
      assert.equal((await owner.home.read(cp.path)).revision, 1)
    })

    test('listing by prefix, ordered by path, paged with after and limit; no content', async () => {
      const a = await agent(hub)
      for (const p of ['x/2', 'x/1', 'x_y/1', 'xa/1', 'y/1', 'x/3/deep']) {
        await a.home.write({ path: p, expectedRevision: 0, content: p })
      }
      const all = await a.home.list()
      assert.equal(all.files.length, 6)
      assert.ok(all.files.every((f) => !('content' in f)))
      const x = await a.home.list({ prefix: 'x/' })
      assert.deepEqual(
        x.files.map((f) => f.path),
        ['x/1', 'x/2', 'x/3/deep'],
      )
      assert.equal(x.files[0]!.size, 3)
      assert.equal(x.files[0]!.revision, 1)
      // `_` is a character, not a wildcard.
      assert.deepEqual(
        (await a.home.list({ prefix: 'x_' })).files.map((f) => f.path),
        ['x_y/1'],
      )
      const p1 = await a.home.list({ prefix: 'x', limit: 2 })
      assert.equal(p1.files.length, 2)
      assert.ok(p1.nextAfter)
      const p2 = await a.home.list({ prefix: 'x', limit: 2, after: p1.nextAfter })
      const p3 = await a.home.list({ prefix: 'x', limit: 2, after: p2.nextAfter! })
      const paged = [...p1.files, ...p2.files, ...p3.files].map((f) => f.path)
      assert.equal(new Set(paged).size, 5)
      assert.equal(p3.nextAfter === null || p3.files.length === 2, true)
      for (const q of ['prefix=/x', 'prefix=a%5Cb', 'prefix=a%20b', 'limit=0', 'limit=1001']) {
        const res = await a.client.request<{ code: string }>('GET', `/v1/home/files?${q}`)
        assert.equal(res.status, 400, q)
      }
    })

    test('delete commits only at expectedRevision; then the path is free again', async () => {
      await owner.home.write({ path: 'del/a', expectedRevision: 0, content: '1' })
      await owner.home.write({ path: 'del/a', expectedRevision: 1, content: '2' })
      const wrong = await owner.client.request<{ code: string; currentRevision: number }>(
        'DELETE',
        '/v1/home/file?path=del%2Fa&expectedRevision=1',
      )
      assert.equal(wrong.status, 409)
      assert.equal(wrong.body.code, 'revision_conflict')
      assert.equal(wrong.body.currentRevision, 2)
      const ok = await owner.home.remove('del/a', 2)
      assert.deepEqual(ok, { path: 'del/a', revision: 2, deleted: true })
      const again = await owner.client.request<{ code: string }>(
        'DELETE',
        '/v1/home/file?path=del%2Fa&expectedRevision=2',
      )
      assert.equal(again.status, 404)
      assert.equal(again.body.code, 'home_file_not_found')
      assert.equal((await get(owner, 'del/a')).status, 404)
      for (const q of [
        'path=del%2Fa',
        'path=del%2Fa&expectedRevision=0',
        'path=del%2Fa&expectedRevision=x',
      ]) {
        const res = await owner.client.request<{ code: string }>('DELETE', `/v1/home/file?${q}`)
        assert.equal(res.status, 400, q)
        assert.equal(res.body.code, 'invalid_request')
      }
      const re = await owner.home.write({ path: 'del/a', expectedRevision: 0, content: 'new' })
      assert.equal(re.revision, 1)
    })

    test('invalid paths are 400 invalid_path; valid edge cases are accepted', async () => {
      const bad = [
        '',
        '/abs',
        'a//b',
        'a/',
        '.',
        '..',
        'a/./b',
        'a/../b',
        '../x',
        'a\\b',
        'a b',
        'ä',
        'a?b',
        'a'.repeat(257),
      ]
      for (const p of bad) {
        const w = await put(owner, { path: p, expectedRevision: 0, content: 'x' })
        assert.equal(w.status, 400, JSON.stringify(p))
        assert.equal(w.body.code, 'invalid_path', JSON.stringify(p))
        const r = await get(owner, p)
        assert.equal(r.status, 400, JSON.stringify(p))
        assert.equal(r.body.code, 'invalid_path')
      }
      const noPath = await owner.client.request<{ code: string }>('GET', '/v1/home/file')
      assert.equal(noPath.body.code, 'invalid_path')
      for (const p of ['a'.repeat(256), '.hidden', '...', 'a-b_c.d/E9', 'x/y/z/w']) {
        const w = await put(owner, { path: p, expectedRevision: 0, content: 'x' })
        assert.equal(w.status, 200, `${JSON.stringify(p)}: ${JSON.stringify(w.body)}`)
      }
    })

    test('bad bodies are 4xx, never 5xx, and change nothing', async () => {
      const bodies: SignedBody[] = [
        {},
        [],
        '"x"',
        { path: 'b/1', expectedRevision: -1, content: 'x' },
        { path: 'b/1', expectedRevision: 1.5, content: 'x' },
        { path: 'b/1', expectedRevision: '0', content: 'x' },
        { path: 'b/1', expectedRevision: 0, content: { json: true } },
        { path: 'b/1', expectedRevision: 0 },
        { path: 7, expectedRevision: 0, content: 'x' },
        { path: 'b/1', expectedRevision: 0, content: 'x', extra: 1 },
      ]
      for (const body of bodies) {
        const res = await put(owner, body)
        assert.ok(res.status >= 400 && res.status < 500, `${JSON.stringify(body)}: ${res.status}`)
      }
      const notJson = await owner.client.request<{ code: string }>('PUT', '/v1/home/file', '{x', {
        'content-type': 'application/json',
      })
      assert.equal(notJson.body.code, 'invalid_json')
      assert.equal((await get(owner, 'b/1')).status, 404)
      assert.equal((await call(hub, 'GET', '/v1/home/file?path=a')).status, 401)
    })

    test('concurrent writes at one revision: exactly one commits, the rest conflict', async () => {
      const a = await agent(hub)
      await a.home.write({ path: 'race', expectedRevision: 0, content: 'start' })
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          put(a, { path: 'race', expectedRevision: 1, content: `writer ${i}` }),
        ),
      )
      const won = results.filter((r) => r.status === 200)
      assert.equal(won.length, 1)
      for (const r of results.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 409)
        assert.equal(r.body.currentRevision, 2)
      }
      const creates = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          put(a, { path: 'race-new', expectedRevision: 0, content: `c${i}` }),
        ),
      )
      assert.equal(creates.filter((r) => r.status === 200).length, 1)
    })

    test('size limit per file and the stored-bytes quota: 413 with codes, nothing written', async () => {
      const small = await startTestHub(store, {
        ...OPEN,
        BATON_HOME_MAX_FILE_BYTES: '1000',
        BATON_QUOTA_STORED_BYTES: '2000',
      })
      try {
        const a = await agent(small)
        const big = await put(a, { path: 'big', expectedRevision: 0, content: 'x'.repeat(1001) })
        assert.equal(big.status, 413)
        assert.equal(big.body.code, 'home_file_too_large')
        assert.equal(big.body.limit, 1000)
        // UTF-8 bytes count, not characters: 334 × 3 bytes is over 1000.
        const wide = await put(a, { path: 'wide', expectedRevision: 0, content: '€'.repeat(334) })
        assert.equal(wide.body.code, 'home_file_too_large')
        assert.equal(
          (await put(a, { path: 'f1', expectedRevision: 0, content: 'x'.repeat(1000) })).status,
          200,
        )
        assert.equal(
          (await put(a, { path: 'f2', expectedRevision: 0, content: 'x'.repeat(900) })).status,
          200,
        )
        const over = await put(a, { path: 'f3', expectedRevision: 0, content: 'x'.repeat(101) })
        assert.equal(over.status, 413)
        assert.equal(over.body.code, 'storage_quota_exceeded')
        assert.equal(over.body.used, 1900)
        assert.equal((await get(a, 'f3')).status, 404)
        // Shrinking a file frees bytes; replacing it with a larger one counts only the difference.
        assert.equal(
          (await put(a, { path: 'f1', expectedRevision: 1, content: 'small' })).status,
          200,
        )
        assert.equal(
          (await put(a, { path: 'f3', expectedRevision: 0, content: 'x'.repeat(101) })).status,
          200,
        )
        await a.home.remove('f2', 1)
        assert.equal(
          (await put(a, { path: 'f4', expectedRevision: 0, content: 'x'.repeat(900) })).status,
          200,
        )
        // The quota is per principal.
        const b = await agent(small)
        assert.equal(
          (await put(b, { path: 'f1', expectedRevision: 0, content: 'x'.repeat(1000) })).status,
          200,
        )
      } finally {
        await small.close()
      }
    })

    test('files survive a restart, and the same identity reads them back', async () => {
      const { start, drop } = await restartableHub(store, OPEN)
      let running = await start()
      try {
        const a = await agent(running)
        const cp = ownerCheckpoint('run-restart', a.principal)
        await a.home.write(cp)
        await a.home.write({ ...cp, expectedRevision: 1, content: 'revision two' })
        await running.stop()
        running = await start()
        const url = `${running.url}/.well-known/agent-net`
        const again = new HomeClient(await SignedClient.connect(url, a.client.identity))
        const read = await again.read(cp.path)
        assert.equal(read.revision, 2)
        assert.equal(read.content, 'revision two')
        const list: HomeFileListView = await again.list({ prefix: 'handoff/run-restart/' })
        assert.deepEqual(
          list.files.map((f) => [f.path, f.revision]),
          [[cp.path, 2]],
        )
      } finally {
        await running.stop()
        await drop()
      }
    })
  })
}
