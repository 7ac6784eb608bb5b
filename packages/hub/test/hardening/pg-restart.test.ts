import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { SignedClient } from '@baton/client'
import { startPostgres } from '../../../../scripts/postgres.js'
import {
  call,
  exited,
  onPostgres,
  openWaits,
  serveProcess,
  signedAgent,
  until,
} from '../support.js'

const H = '/services/v1/handoff'
const CYCLES = 3
const CLIENTS = 32

type Hub = Awaited<ReturnType<typeof serveProcess>>

// A server of this test's own, crashed in immediate mode (no checkpoint, every connection cut)
// under 32 writing clients, three times, with two hub processes on it.
describe('PostgreSQL restarts in immediate mode under load', { skip: onPostgres.skip }, () => {
  let pg: Awaited<ReturnType<typeof startPostgres>>
  let a: Hub
  let b: Hub
  before(async () => {
    pg = await startPostgres()
    const env = {
      DATABASE_URL: pg.url,
      BATON_ADMISSION: 'open',
      BATON_HUB_KEY_SECRET: 'a test secret that is long enough to seal keys',
      BATON_HANDOFF_DAILY_QUOTA: '1000000',
      BATON_QUOTA_REQUESTS_PER_DAY: '1000000',
      BATON_QUOTA_MESSAGES_PER_DAY: '1000000',
    }
    a = await serveProcess(env)
    b = await serveProcess(env)
  })
  after(async () => {
    for (const hub of [a, b]) {
      if (hub && hub.child.exitCode === null) {
        hub.child.kill('SIGTERM')
        await exited(hub.child)
      }
    }
    await pg?.stop()
  })

  test('the hub survives, refuses with 503 + Retry-After while it is away, and loses no acknowledged write', async () => {
    const handoffs = new Map<string, { token: string; version: number }>()
    const sent: { sender: SignedClient; id: string }[] = []
    const refused: { status: number; code: unknown; retryAfter: string | null }[] = []
    const broken: string[] = []
    let acks = 0
    let stop = false

    const note = (res: { status: number; headers: Headers; body: { code?: unknown } }) => {
      if (res.status < 300) acks++
      else
        refused.push({
          status: res.status,
          code: res.body.code,
          retryAfter: res.headers.get('retry-after'),
        })
    }

    const recipient = await signedAgent(a)
    const senders = await Promise.all(Array.from({ length: CLIENTS / 2 }, () => signedAgent(a)))

    const handoffWorker = async () => {
      while (!stop) {
        try {
          const created = await call(a, 'POST', H, { body: { payload: { n: 1 } } })
          note(created)
          if (created.status !== 201) continue
          const { handoff_id: id, owner_token: token } = created.body as {
            handoff_id: string
            owner_token: string
          }
          handoffs.set(id, { token, version: 1 })
          let from = 'offered'
          for (const to of ['accepted', 'working', 'done']) {
            const moved = await call(a, 'POST', `${H}/${id}/${to}`, {
              token,
              body: { from, nonce: `${id}-${to}` },
            })
            note(moved)
            if (moved.status !== 200) break
            handoffs.set(id, { token, version: Number(moved.body.version) })
            from = to
          }
        } catch (error) {
          broken.push(String(error))
          return
        }
      }
    }

    const messageWorker = async (sender: SignedClient, w: number) => {
      for (let n = 0; !stop; n++) {
        try {
          const res = await sender.request<{ id: string; code?: string }>('POST', '/v1/messages', {
            recipient: recipient.principal,
            body: { w, n },
            idempotencyKey: `w${w}-n${n}`,
          })
          note(res)
          if (res.status === 201) sent.push({ sender, id: res.body.id })
        } catch (error) {
          broken.push(String(error))
          return
        }
      }
    }

    const workers = [
      ...Array.from({ length: CLIENTS / 2 }, () => handoffWorker()),
      ...senders.map((s, w) => messageWorker(s, w)),
    ]

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const before = acks
      await until(
        'writes acknowledged before the crash',
        () => acks >= before + 50 || broken.length > 0,
      )
      const refusedBefore = refused.length
      await pg.crash()
      await until(
        'writes refused while the database is away',
        () => refused.length > refusedBefore || broken.length > 0,
      )
      await pg.start()
      const back = acks
      await until('writes acknowledged again', () => acks >= back + 50 || broken.length > 0)
      assert.deepEqual(broken, [], 'no request failed without an answer')
      assert.equal(a.child.exitCode, null, 'the hub process is alive')
      assert.equal(b.child.exitCode, null, 'the second hub process is alive')
    }
    stop = true
    await Promise.all(workers)

    assert.deepEqual(broken, [])
    assert.ok(refused.length > 0)
    for (const r of refused) {
      assert.equal(r.status, 503, JSON.stringify(r))
      assert.equal(r.code, 'unavailable')
      assert.ok(r.retryAfter && Number(r.retryAfter) > 0, 'a refusal says when to retry')
    }

    // Every acknowledged write is there: handoffs at least at their acknowledged version …
    for (const [id, h] of handoffs) {
      const read = await call(b, 'GET', `${H}/${id}`, { token: h.token })
      assert.equal(read.status, 200)
      assert.ok(Number(read.body.version) >= h.version, `${id} lost an acknowledged move`)
    }
    // … and every acknowledged message is in the recipient's inbox.
    const inbox = new Set<string>()
    for (let after = 0; ; ) {
      const page = await recipient.request<{
        messages: { id: string; sequence: number }[]
        nextAfter: number | null
      }>('GET', `/v1/messages?after=${after}&limit=100`)
      assert.equal(page.status, 200)
      for (const m of page.body.messages) inbox.add(m.id)
      if (page.body.messages.length < 100) break
      after = page.body.messages.at(-1)!.sequence
    }
    for (const m of sent) assert.ok(inbox.has(m.id), `message ${m.id} was acknowledged and lost`)

    // The LISTEN session of the other instance is back: its waiter wakes on a move made here.
    await until('the other instance listens again', async () => {
      const res = await fetch(`${b.url}/metrics`)
      return /^baton_event_listener_up 1$/m.test(await res.text())
    })
    const created = await call(a, 'POST', H, { body: { payload: { n: 2 } } })
    const { handoff_id: id, owner_token: token } = created.body as {
      handoff_id: string
      owner_token: string
    }
    const waiting = call(b, 'GET', `${H}/${id}/wait/20?version=1`, { token })
    await until('the other instance holds the wait', async () => (await openWaits(b)) === 1)
    const moved = await call(a, 'POST', `${H}/${id}/accepted`, { token, body: { from: 'offered' } })
    assert.equal(moved.status, 200)
    // A dead bus would still answer, but only when the wait's own 20 s are up.
    const woke = await Promise.race([
      waiting,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the waiter did not wake on the event')), 10_000).unref(),
      ),
    ])
    assert.equal(woke.status, 200)
    assert.equal(woke.body.changed, true)
    assert.equal(woke.body.version, 2)
  })
})
