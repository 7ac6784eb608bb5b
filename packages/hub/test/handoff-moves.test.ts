import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { BatonError } from '@baton/protocol'
import { sql } from 'kysely'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import type { BatonEvent } from '../src/events/bus.js'
import { type RunningHub, startHub } from '../src/hub.js'
import { countStatements } from '../src/store/transaction.js'
import { call, onPostgres, onSqlite, startTestHub, type TestHub, testStores } from './support.js'

const H = '/services/v1/handoff'

interface Created {
  handoff_id: string
  owner_token: string
  receiver_token: string
}

async function create(hub: { url: string }, body: unknown = { payload: { n: 1 } }) {
  const res = await call(hub, 'POST', H, { body })
  assert.equal(res.status, 201, JSON.stringify(res.body))
  return res.body as unknown as Created
}

const move = (hub: { url: string }, h: Created, to: string, body: unknown, token?: string) =>
  call(hub, 'POST', `${H}/${h.handoff_id}/${to}`, { token: token ?? h.receiver_token, body })

// Moves a handoff behind the hub's back, as another instance would, so what this hub knows of
// its state is stale.
async function moveBehind(hub: TestHub, id: string, state: string, version: number) {
  await hub.ctx.database.db
    .updateTable('handoffs')
    .set({ state, version })
    .where('id', '=', id)
    .execute()
}

for (const store of testStores) {
  describe(`handoff moves predicted from what never changes (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 12))
    before(async () => {
      hub = await startTestHub(store, {}, { clock })
    })
    after(() => hub.close())

    test('a move of a handoff the hub knows commits in one trip to the database', async () => {
      const counts = countStatements(hub.ctx.database)
      // The hub's timed jobs run statements of their own now and then: the fewest of a few moves
      // is what a move costs.
      let fewest = Number.POSITIVE_INFINITY
      let fewestCommits = Number.POSITIVE_INFINITY
      for (let i = 0; i < 3; i++) {
        const other = await create(hub)
        await hub.ctx.batcher.flush()
        const before = { ...counts }
        assert.equal((await move(hub, other, 'accepted', { from: 'offered' })).status, 200)
        fewest = Math.min(fewest, counts.statements - before.statements)
        fewestCommits = Math.min(fewestCommits, counts.commits - before.commits)
      }
      assert.equal(fewestCommits, 1, 'a move is one durable commit')
      // One trip to the database moves the handoff and writes its history: PostgreSQL as one
      // autocommit statement (no BEGIN, no locked read, no COMMIT), SQLite as one script its
      // writer runs as one transaction.
      assert.equal(fewest, 1)
      const h = await create(hub)
      const events: BatonEvent[] = []
      const off = hub.ctx.bus.subscribe(`handoff:${h.handoff_id}`, (e) => events.push(e))
      const res = await move(hub, h, 'accepted', { from: 'offered', note: 'on it' })
      off()
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.version, 2)
      assert.equal(res.body.by, 'receiver')
      assert.equal(res.body.repeated, false)
      assert.equal(res.body.current_state, 'accepted')
      assert.deepEqual(
        events.map((e) => [e.type, e.data.state, e.data.version]),
        [['handoff.moved', 'accepted', 2]],
      )
      const read = await call(hub, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
      assert.deepEqual(
        (read.body.history as { from: string; to: string; by: string; note: string }[]).map((m) => [
          m.from,
          m.to,
          m.by,
          m.note,
        ]),
        [['offered', 'accepted', 'receiver', 'on it']],
      )
      const done = await move(hub, h, 'done', { from: 'accepted' }, h.owner_token)
      assert.equal(done.status, 200)
      assert.equal(done.body.ended, true)
      assert.equal(done.body.by, 'owner')
    })

    test('a move predicted on stale state answers exactly what the database holds', async () => {
      const h = await create(hub)
      const accepted = await move(hub, h, 'accepted', { from: 'offered', nonce: 'n-1' })
      assert.equal(accepted.status, 200)
      // Moved on elsewhere: the hub still predicts accepted -> working from what it knows.
      await moveBehind(hub, h.handoff_id, 'working', 3)
      const stale = await move(hub, h, 'working', { from: 'accepted' })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.code, 'state_conflict')
      assert.equal(stale.body.state, 'working')
      assert.equal(stale.body.version, 3)
      // The repeat of a committed move answers it again, wherever the handoff is now.
      const repeat = await move(hub, h, 'accepted', { from: 'offered', nonce: 'n-1' })
      assert.equal(repeat.status, 200)
      assert.equal(repeat.body.repeated, true)
      assert.equal(repeat.body.version, 2)
      assert.equal(repeat.body.current_version, 3)
      // A committed nonce names one move: on another step it is a conflict, though that step
      // is allowed from where the handoff is.
      const reused = await move(hub, h, 'done', { from: 'working', nonce: 'n-1' })
      assert.equal(reused.status, 409)
      assert.equal(reused.body.code, 'idempotency_conflict')
      const moves = await hub.ctx.database.db
        .selectFrom('handoff_moves')
        .select(['version', 'to_state'])
        .where('handoff_id', '=', h.handoff_id)
        .execute()
      assert.deepEqual(moves, [{ version: 2, to_state: 'accepted' }])
    })

    test('an expired handoff is refused with 410 even when the hub knows it', async () => {
      const h = await create(hub)
      clock.advance(hub.config.handoff.ttlMs)
      const res = await move(hub, h, 'accepted', { from: 'offered' })
      assert.equal(res.status, 410)
      assert.equal(res.body.code, 'handoff_expired')
      const row = await hub.ctx.database.db
        .selectFrom('handoffs')
        .select(['state', 'version'])
        .where('id', '=', h.handoff_id)
        .executeTakeFirstOrThrow()
      assert.deepEqual(row, { state: 'offered', version: 1 })
    })

    test('a wrong token, an unknown state and a backward step answer as without the prediction', async () => {
      const h = await create(hub)
      const wrong = await move(hub, h, 'accepted', { from: 'offered' }, `${h.owner_token}x`)
      assert.equal(wrong.status, 404)
      assert.equal(wrong.body.code, 'handoff_not_found')
      const unknown = await move(hub, h, 'nowhere', { from: 'offered' })
      assert.equal(unknown.body.code, 'unknown_state')
      const proto = await move(hub, h, 'accepted', { from: 'constructor' })
      assert.equal(proto.body.code, 'unknown_state')
      assert.equal((await move(hub, h, 'working', { from: 'offered' })).status, 200)
      const back = await move(hub, h, 'accepted', { from: 'working' })
      assert.equal(back.status, 409)
      assert.equal(back.body.code, 'transition_not_allowed')
    })

    test('a predicted move that loses a race answers what the careful path answers', async () => {
      const { handoffs } = hub.ctx
      const h = await create(hub)
      const body = (from: string) => ({ from })
      // Two moves of one handoff in one batch: the statement makes the first; the second,
      // predicted too, is decided the careful way on what the first committed.
      const [won, lost] = await Promise.allSettled([
        handoffs.advance(h.handoff_id, 'accepted', body('offered'), h.receiver_token),
        handoffs.advance(h.handoff_id, 'working', body('offered'), h.receiver_token),
      ])
      assert.equal(won.status, 'fulfilled')
      assert.equal(won.value.version, 2)
      assert.equal(lost.status, 'rejected')
      assert.ok(lost.reason instanceof BatonError)
      assert.equal(lost.reason.code, 'state_conflict')
      assert.deepEqual(
        [lost.reason.context.state, lost.reason.context.version, lost.reason.context.ended],
        ['accepted', 2, false],
      )
      // Predicted before the handoff expired, committed after: the statement moves nothing and
      // the careful path answers 410, as it would have without the prediction.
      const late = await create(hub)
      const expiring = handoffs.advance(
        late.handoff_id,
        'accepted',
        body('offered'),
        late.receiver_token,
      )
      clock.advance(hub.config.handoff.ttlMs)
      await assert.rejects(expiring, (e: BatonError) => e.code === 'handoff_expired')
      const rows = await hub.ctx.database.db
        .selectFrom('handoffs')
        .select(['id', 'state', 'version'])
        .where('id', 'in', [h.handoff_id, late.handoff_id])
        .orderBy('version')
        .execute()
      assert.deepEqual(
        rows.map((r) => [r.id, r.state, r.version]),
        [
          [late.handoff_id, 'offered', 1],
          [h.handoff_id, 'accepted', 2],
        ],
      )
    })

    test('a repeat with the same nonce answers the committed move, in its batch or later', async () => {
      const { handoffs } = hub.ctx
      const h = await create(hub)
      const body = { from: 'offered', nonce: 'same-1' }
      const [first, again] = await Promise.all([
        handoffs.advance(h.handoff_id, 'accepted', body, h.receiver_token),
        handoffs.advance(h.handoff_id, 'accepted', body, h.receiver_token),
      ])
      assert.deepEqual(
        [first.repeated, first.version, again.repeated, again.version],
        [false, 2, true, 2],
      )
      const later = await move(hub, h, 'accepted', body)
      assert.equal(later.status, 200)
      assert.equal(later.body.repeated, true)
      assert.equal(later.body.version, 2)
      const history = await hub.ctx.database.db
        .selectFrom('handoff_moves')
        .select(['version', 'nonce'])
        .where('handoff_id', '=', h.handoff_id)
        .execute()
      assert.deepEqual(history, [{ version: 2, nonce: 'same-1' }])
    })

    test('many moves of many handoffs at once: one winner each, every history row written', async () => {
      const handoffs = await Promise.all(Array.from({ length: 30 }, () => create(hub)))
      const answers = await Promise.all(
        handoffs.flatMap((h) =>
          ['accepted', 'working', 'done'].map((to) => move(hub, h, to, { from: 'offered' })),
        ),
      )
      assert.equal(answers.filter((a) => a.status === 200).length, 30)
      assert.equal(answers.filter((a) => a.body.code === 'state_conflict').length, 60)
      const rows = await hub.ctx.database.db
        .selectFrom('handoff_moves')
        .select('handoff_id')
        .where(
          'handoff_id',
          'in',
          handoffs.map((h) => h.handoff_id),
        )
        .execute()
      assert.equal(rows.length, 30)
    })
  })
}

const postgres = onPostgres.store

// An instance knows the handoffs it created or moved; the others move them the careful way first.
describe('handoff moves across two instances on one PostgreSQL database', {
  skip: onPostgres.skip,
}, () => {
  let a: RunningHub
  let b: RunningHub
  let drop: () => Promise<void>
  before(async () => {
    const db = await postgres!.fresh()
    drop = db.drop
    const config = loadConfig({ BATON_PORT: '0', BATON_LOG_LEVEL: 'silent', ...db.env })
    a = await startHub(config, { log: pino({ level: 'silent' }) })
    b = await startHub(config, { log: pino({ level: 'silent' }) })
  })
  after(async () => {
    await a?.stop()
    await b?.stop()
    await drop?.()
  })

  test('each instance answers from the database, whatever it predicted', async () => {
    const h = await create(a)
    assert.ok(a.ctx.handoffs.known.get(h.handoff_id))
    assert.equal(b.ctx.handoffs.known.get(h.handoff_id), undefined)
    const onB = await move(b, h, 'accepted', { from: 'offered', nonce: 'b-1' })
    assert.equal(onB.status, 200)
    assert.ok(b.ctx.handoffs.known.get(h.handoff_id), 'remembered from its locked read')
    const staleOnA = await move(a, h, 'accepted', { from: 'offered' })
    assert.equal(staleOnA.body.code, 'state_conflict')
    assert.equal(staleOnA.body.state, 'accepted')
    const repeatOnA = await move(a, h, 'accepted', { from: 'offered', nonce: 'b-1' })
    assert.equal(repeatOnA.body.repeated, true)
    assert.equal(repeatOnA.body.by, 'receiver')
    const working = await move(a, h, 'working', { from: 'accepted' }, h.owner_token)
    assert.equal(working.body.version, 3)
    const done = await move(b, h, 'done', { from: 'working' })
    assert.equal(done.body.version, 4)
    assert.equal(done.body.ended, true)
    const read = await call(b, 'GET', `${H}/${h.handoff_id}`, { token: h.owner_token })
    assert.deepEqual(
      (read.body.history as { to: string; by: string; version: number }[]).map((m) => [
        m.version,
        m.to,
        m.by,
      ]),
      [
        [2, 'accepted', 'receiver'],
        [3, 'working', 'owner'],
        [4, 'done', 'receiver'],
      ],
    )
  })
})

const sqlite = onSqlite.store

// The one-trip move gives its batch to the careful path when SQLite refuses its script with a
// unique violation (as a nonce committed meanwhile would). A trigger refuses the update of a
// handoff whose history row at its next version already exists, which only the one-trip script
// does (the careful path updates the handoff first), so the careful path then commits the move.
describe('a one-trip move SQLite refuses goes the careful way', { skip: onSqlite.skip }, () => {
  let hub: TestHub
  before(async () => {
    hub = await startTestHub(sqlite!)
  })
  after(() => hub.close())

  test('the move commits once, by the careful path', async () => {
    const h = await create(hub)
    assert.ok(hub.ctx.handoffs.known.get(h.handoff_id), 'a move the hub predicts')
    const db = hub.ctx.database.db
    for (const statement of [
      'create table fault_taken (n integer primary key)',
      'insert into fault_taken values (1)',
      `create trigger fault_one_trip before update on handoffs
        when exists (select 1 from handoff_moves m
          where m.handoff_id = new.id and m.version = new.version)
        begin
          insert into fault_taken values (1);
        end`,
    ])
      await sql.raw(statement).execute(db)
    try {
      const counts = countStatements(hub.ctx.database)
      const before = { ...counts }
      const res = await move(hub, h, 'accepted', { from: 'offered', nonce: 'n-sqlite' })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.version, 2)
      assert.equal(res.body.repeated, false)
      // The refused script, then the careful path's transaction.
      assert.ok(counts.statements - before.statements > 1)
      assert.equal(counts.commits - before.commits, 1)
      const history = await db
        .selectFrom('handoff_moves')
        .select(['version', 'to_state', 'nonce'])
        .where('handoff_id', '=', h.handoff_id)
        .execute()
      assert.deepEqual(history, [{ version: 2, to_state: 'accepted', nonce: 'n-sqlite' }])
    } finally {
      await sql.raw('drop trigger fault_one_trip').execute(db)
      await sql.raw('drop table fault_taken').execute(db)
    }
  })
})

// The one-statement move gives its batch to the careful path when PostgreSQL aborts it with a
// deadlock or a unique violation. A trigger makes the database abort the first update it sees so.
describe('a one-statement move PostgreSQL aborts goes the careful way', {
  skip: onPostgres.skip,
}, () => {
  let hub: TestHub
  before(async () => {
    hub = await startTestHub(postgres!)
  })
  after(() => hub.close())

  for (const [name, errcode] of [
    ['a deadlock', '40P01'],
    ['a unique violation', '23505'],
  ] as const) {
    test(`${name}: the move commits once, by the careful path`, async () => {
      const h = await create(hub)
      assert.ok(hub.ctx.handoffs.known.get(h.handoff_id), 'a move the hub predicts')
      const db = hub.ctx.database.db
      const tag = `fault_${errcode}`
      await sql
        .raw(`
          create sequence ${tag};
          create function ${tag}() returns trigger language plpgsql as $$
          begin
            if nextval('${tag}') = 1 then
              raise exception 'injected' using errcode = '${errcode}';
            end if;
            return new;
          end $$;
          create trigger ${tag} before update on handoffs for each row execute function ${tag}();`)
        .execute(db)
      try {
        const counts = countStatements(hub.ctx.database)
        const before = { ...counts }
        const res = await move(hub, h, 'accepted', { from: 'offered', nonce: `n-${errcode}` })
        assert.equal(res.status, 200, JSON.stringify(res.body))
        assert.equal(res.body.version, 2)
        assert.equal(res.body.repeated, false)
        // The aborted statement, then the careful path's transaction.
        assert.ok(counts.statements - before.statements > 1)
        const fired = await sql<{ n: string }>`select last_value as n from ${sql.raw(tag)}`.execute(
          db,
        )
        assert.equal(Number(fired.rows[0]!.n), 2, 'the first update aborted, the second committed')
        const history = await db
          .selectFrom('handoff_moves')
          .select(['version', 'to_state'])
          .where('handoff_id', '=', h.handoff_id)
          .execute()
        assert.deepEqual(history, [{ version: 2, to_state: 'accepted' }])
      } finally {
        await sql
          .raw(`drop trigger ${tag} on handoffs; drop function ${tag}(); drop sequence ${tag};`)
          .execute(db)
      }
    })
  }
})
