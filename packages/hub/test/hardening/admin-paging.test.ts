import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createIdentity } from '@baton/client'
import { ManualClock } from '../../src/clock.js'
import { enrolPrincipals } from '../../src/identity/store.js'
import {
  batonBin,
  call,
  PG_KEY_SECRET,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
} from '../support.js'

const ADMIN = 'paging-test-operator-token-0123456789abcdef'
const admin = { authorization: `Bearer ${ADMIN}` }

type Page = { principals: { principal: string; state: string }[]; next_cursor: string | null }

function baton(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [batonBin, ...args],
      {
        env: {
          ...process.env,
          ...(args.includes('--database-url') ? { BATON_HUB_KEY_SECRET: PG_KEY_SECRET } : {}),
          ...env,
        },
        timeout: 60_000,
        maxBuffer: 64 << 20,
      },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? 2) : 0
        resolve({ code: typeof code === 'number' ? code : 2, stdout, stderr })
      },
    )
  })
}

for (const store of testStores) {
  describe(`the admin principal list pages with a cursor (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    const flood: string[] = []
    let genuine: string

    /** Enrols `n` pending keys directly, many sharing one enrolment time (as a flood does). */
    async function enrolFlood(n: number, at: number): Promise<string[]> {
      const rows = Array.from({ length: n }, (_, i) => ({
        principal: createIdentity('flood').principal,
        public_key: randomBytes(32).toString('base64url'),
        state: 'pending',
        enrolled_at: at + Math.floor(i / 50),
        decided_at: null,
      }))
      await enrolPrincipals(hub.ctx.database.db, rows)
      return rows.map((r) => r.principal)
    }

    const page = async (query: string) => {
      const res = await call(hub, 'GET', `/admin/v1/principals?${query}`, { headers: admin })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      return res.body as unknown as Page
    }

    /** Every page from the first, through `read`; answers the principals in order. */
    async function readAll(read: (cursor?: string) => Promise<Page>): Promise<string[]> {
      const seen: string[] = []
      let p = await read()
      seen.push(...p.principals.map((x) => x.principal))
      for (let i = 0; p.next_cursor !== null; i++) {
        assert.ok(i < 100, 'paging ends')
        p = await read(p.next_cursor)
        seen.push(...p.principals.map((x) => x.principal))
      }
      return seen
    }

    before(async () => {
      hub = await startTestHub(store, { BATON_ADMIN_TOKEN: ADMIN }, { clock })
      flood.push(...(await enrolFlood(600, clock.now() - 60_000)))
      // The genuine key enrols itself, signed, after the flood.
      genuine = (await signedAgent(hub, { clock })).principal
    })
    after(() => hub.close())

    test('with 600 pending, every key is reachable, each once, oldest first', async () => {
      const seen = await readAll((cursor) =>
        page(`state=pending&limit=250${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
      )
      assert.equal(seen.length, 601)
      assert.equal(new Set(seen).size, 601, 'no key is shown twice')
      assert.deepEqual(new Set(seen), new Set([...flood, genuine]))
      assert.equal(seen.at(-1), genuine, 'the newest enrolment is on the last page')
      const first = await page('state=pending')
      assert.equal(first.principals.length, 100, 'a page holds 100 by default')
      assert.equal(typeof first.next_cursor, 'string')
    })

    test('the pages hold still while keys enrol and decisions are made', async () => {
      const p1 = await page('state=pending&limit=200')
      const later = await enrolFlood(75, clock.now() + 1000)
      // Approving a key already shown moves nothing under the cursor.
      const approved = p1.principals[3]!.principal
      const enc = encodeURIComponent(approved)
      await call(hub, 'POST', `/admin/v1/principals/${enc}/approve`, { headers: admin })
      const rest = await readAll((cursor) =>
        cursor
          ? page(`state=pending&limit=200&cursor=${encodeURIComponent(cursor)}`)
          : Promise.resolve({ principals: [], next_cursor: p1.next_cursor }),
      )
      const seen = [...p1.principals.map((p) => p.principal), ...rest]
      assert.equal(new Set(seen).size, seen.length, 'no key twice')
      assert.deepEqual(new Set(seen), new Set([...flood, genuine, ...later]), 'no key skipped')
      const approvedPage = await page('state=approved')
      assert.deepEqual(
        approvedPage.principals.map((p) => p.principal),
        [approved],
      )
      assert.equal(approvedPage.next_cursor, null)
      // Unfiltered, every state is listed.
      const all = await readAll((cursor) =>
        page(`limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
      )
      assert.equal(all.length, 676)
    })

    test('a bad limit or state is 400 invalid_request, a bad cursor cursor_invalid, naming the field', async () => {
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=501', 'limit'],
        ['limit=ten', 'limit'],
        ['cursor=nonsense', 'cursor'],
        [`cursor=v1.${Buffer.from('[1]').toString('base64url')}`, 'cursor'],
        [`cursor=v1.${Buffer.from('{"a":1}').toString('base64url')}`, 'cursor'],
        ['state=odd', 'state'],
      ] as const) {
        const res = await call(hub, 'GET', `/admin/v1/principals?${query}`, { headers: admin })
        assert.equal(res.status, 400, query)
        assert.equal(
          res.body.code,
          field === 'cursor' ? 'cursor_invalid' : 'invalid_request',
          query,
        )
        assert.equal(res.body.field, field, query)
      }
    })

    test('the dashboard admission API pages the same way', async () => {
      const signIn = await call(hub, 'POST', '/dashboard/session', { body: { token: ADMIN } })
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
      const seen = await readAll(async (cursor) => {
        const qs = `state=pending&limit=300${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const res = await call(hub, 'GET', `/dashboard/api/principals?${qs}`, {
          headers: { cookie },
        })
        assert.equal(res.status, 200)
        return res.body as unknown as Page
      })
      assert.ok(seen.includes(genuine))
      assert.equal(new Set(seen).size, seen.length)
      assert.equal(seen.length, 675, 'every pending key (one was approved above)')
    })

    test('baton admin list pages through every page, or one page with --limit/--cursor', async () => {
      const targets: string[][] = [
        ['--hub', hub.url, '--token', ADMIN],
        store.name === 'sqlite'
          ? ['--data-dir', hub.config.dataDir]
          : ['--database-url', hub.config.databaseUrl!],
      ]
      for (const target of targets) {
        const all = await baton(['admin', 'list', '--state', 'pending', ...target])
        assert.equal(all.code, 0, all.stderr)
        const everything = JSON.parse(all.stdout) as Page
        assert.equal(everything.principals.length, 675)
        assert.equal(everything.next_cursor, null)
        assert.ok(everything.principals.some((p) => p.principal === genuine))
        const withAll = await baton([
          'admin',
          'list',
          '--state',
          'pending',
          '--all',
          '--limit',
          '300',
          ...target,
        ])
        assert.equal((JSON.parse(withAll.stdout) as Page).principals.length, 675)

        const one = await baton(['admin', 'list', '--state', 'pending', '--limit', '10', ...target])
        assert.equal(one.code, 0, one.stderr)
        const first = JSON.parse(one.stdout) as Page
        assert.equal(first.principals.length, 10)
        assert.equal(typeof first.next_cursor, 'string')
        const next = await baton([
          'admin',
          'list',
          '--state',
          'pending',
          '--limit',
          '10',
          '--cursor',
          first.next_cursor!,
          ...target,
        ])
        const second = JSON.parse(next.stdout) as Page
        assert.deepEqual(
          second.principals.map((p) => p.principal),
          everything.principals.slice(10, 20).map((p) => p.principal),
        )
        const bad = await baton(['admin', 'list', '--cursor', 'nonsense', ...target])
        assert.equal(bad.code, 1)
        assert.match(bad.stderr, /cursor_invalid/)
      }
    })
  })
}
