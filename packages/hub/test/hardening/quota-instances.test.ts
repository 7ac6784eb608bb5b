import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createIdentity, SignedClient } from '@baton/client'
import type { Kysely } from 'kysely'
import { loadConfig } from '../../src/config.js'
import type { RunningHub } from '../../src/hub.js'
import { openDatabase } from '../../src/store/database.js'
import { storedBytes } from '../../src/store/quota.js'
import { restartableHub, testStores } from '../support.js'

const QUOTA = 10 * 1024 * 1024
const FILE = 256 * 1024
const WRITES = 60

type Answer = { status: number; body: Record<string, unknown> & { code?: string } }

for (const store of testStores) {
  describe(`the stored-bytes quota across two instances (${store.name})`, () => {
    let hubs: RunningHub[]
    let drop: () => Promise<void>
    let env: Record<string, string>
    let clients: SignedClient[]
    let resourceIds: string[] = []
    before(async () => {
      const fresh = await restartableHub(store, { BATON_ADMISSION: 'open' })
      drop = fresh.drop
      hubs = [await fresh.start(), await fresh.start()]
      env = fresh.env
      // One principal, signing to both instances.
      const identity = createIdentity(hubs[0]!.url)
      clients = await Promise.all(
        hubs.map((h) =>
          SignedClient.connect(`${h.url}/.well-known/agent-net`, identity, { maxRetryWaitMs: 0 }),
        ),
      )
      const me = await clients[0]!.request('GET', '/v1/me')
      assert.equal(me.status, 200)
    })
    after(async () => {
      for (const h of hubs ?? []) await h.stop()
      await drop?.()
    })

    /** What the principal truly stores, summed from its files and resources as answered. */
    async function trueSum(resourceIds: string[]): Promise<number> {
      let sum = 0
      for (let after: string | undefined; ; ) {
        const q = after ? `&after=${encodeURIComponent(after)}` : ''
        const page = await clients[0]!.request<{
          files: { size: number }[]
          nextAfter: string | null
        }>('GET', `/v1/home/files?limit=100${q}`)
        assert.equal(page.status, 200)
        for (const f of page.body.files) sum += f.size
        if (!page.body.nextAfter) break
        after = page.body.nextAfter
      }
      for (const id of resourceIds) {
        const r = await clients[1]!.request<{ data: unknown }>('GET', `/v1/resources/${id}`)
        assert.equal(r.status, 200)
        sum += Buffer.byteLength(JSON.stringify(r.body.data), 'utf8')
      }
      return sum
    }

    async function counted(): Promise<number> {
      const me = await clients[1]!.request<{ quotas: { storedBytes: { used: number } } }>(
        'GET',
        '/v1/me',
      )
      return me.body.quotas.storedBytes.used
    }

    test('60 concurrent 256 KiB writes never pass the quota, and the counter is the true sum', async () => {
      const content = 'x'.repeat(FILE)
      const answers = (await Promise.all(
        Array.from({ length: WRITES }, (_, i) =>
          clients[i % 2]!.request('PUT', '/v1/home/file', {
            path: `load/f${i}.txt`,
            expectedRevision: 0,
            content,
          }),
        ),
      )) as Answer[]
      const stored = answers.filter((a) => a.status === 200)
      const refused = answers.filter((a) => a.status !== 200)
      for (const r of refused) {
        assert.equal(r.status, 413, JSON.stringify(r.body))
        assert.equal(r.body.code, 'storage_quota_exceeded')
      }
      assert.equal(stored.length, QUOTA / FILE, 'exactly what fits is stored')
      const sum = await trueSum([])
      assert.ok(sum <= QUOTA, `${sum} bytes stored against a quota of ${QUOTA}`)
      assert.equal(sum, stored.length * FILE)
      assert.equal(await counted(), sum)

      // Deletes and shrinking updates give bytes back; a resource counts against the same quota.
      for (let i = 0; i < 4; i++) {
        const path = (stored[i]!.body as { path: string }).path
        const del = await clients[i % 2]!.request(
          'DELETE',
          `/v1/home/file?path=${encodeURIComponent(path)}&expectedRevision=1`,
        )
        assert.equal(del.status, 200)
      }
      for (let i = 4; i < 8; i++) {
        const path = (stored[i]!.body as { path: string }).path
        const put = await clients[i % 2]!.request('PUT', '/v1/home/file', {
          path,
          expectedRevision: 1,
          content: 'small',
        })
        assert.equal(put.status, 200)
      }
      const created = await clients[0]!.request<{ id: string }>('POST', '/v1/resources', {
        namespace: 'q',
        kind: 'blob',
        data: { blob: 'y'.repeat(200_000) },
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const shrunk = await clients[1]!.request('PATCH', `/v1/resources/${created.body.id}`, {
        expectedVersion: 1,
        data: { blob: 'y' },
      })
      assert.equal(shrunk.status, 200)
      resourceIds = [created.body.id]
      const afterChanges = await trueSum(resourceIds)
      assert.equal(await counted(), afterChanges)

      // What was given back can be used again, by both instances at once, and no more.
      const refill = (await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          clients[i % 2]!.request('PUT', '/v1/home/file', {
            path: `refill/f${i}.txt`,
            expectedRevision: 0,
            content,
          }),
        ),
      )) as Answer[]
      assert.ok(refill.some((a) => a.status === 200))
      assert.ok(refill.some((a) => a.body.code === 'storage_quota_exceeded'))
      const final = await trueSum([created.body.id])
      assert.ok(final <= QUOTA)
      assert.ok(QUOTA - final < FILE, 'every file that fitted was stored')
      assert.equal(await counted(), final)
    })

    test('the migration fills the counter from what is already stored', async () => {
      // Undo migration 008 on this database, as an older hub left it, and apply it again.
      const database = await openDatabase({
        databaseUrl: loadConfig(env).databaseUrl,
        dataDir: loadConfig(env).dataDir,
      })
      try {
        const principal = clients[0]!.principal
        const before = await storedBytes(database.db, principal)
        assert.ok(before > 0)
        const raw = database.db as unknown as Kysely<Record<string, Record<string, unknown>>>
        await raw.schema.dropTable('usage_counters').execute()
        await raw.deleteFrom('kysely_migration').where('name', '=', '008_usage_counters').execute()
      } finally {
        await database.close()
      }
      const again = await openDatabase({
        databaseUrl: loadConfig(env).databaseUrl,
        dataDir: loadConfig(env).dataDir,
      })
      try {
        const refilled = await storedBytes(again.db, clients[0]!.principal)
        assert.equal(refilled, await trueSum(resourceIds))
      } finally {
        await again.close()
      }
    })
  })
}
