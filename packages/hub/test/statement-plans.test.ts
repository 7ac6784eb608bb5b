import assert from 'node:assert/strict'
import { test } from 'node:test'
import { BudgetClient, HopClient } from '@baton/client'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import pino from 'pino'
import { ManualClock } from '../src/clock.js'
import { OPERATIONS } from '../src/ops/registry.js'
import { openDatabase, sqlitePath } from '../src/store/database.js'
import { CALLERS, CASES } from './matrix-cases.js'
import { startMatrixHub } from './matrix-hub.js'
import { readRecords, seedRecords } from './releases.js'
import { signedAgent, startTestHub, type TestHub, type TestStore, testStores } from './support.js'

// Issue 27: every statement the hub runs is planned, on a database whose tables have grown, so
// that none reads a whole growing table to find the rows it needs. The statements are recorded
// at the drivers (node-postgres's `Client#query`, better-sqlite3's statement calls) while two
// hubs work: the authorization matrix's hub answering every cell of every operation, and a hub
// taking each feature through its successful writes, jobs and reads. Each distinct text is then
// explained, with the parameters it first ran with, on a fresh database of the same migrations
// whose growing tables hold 100,000 rows each.

/** Rows each growing table holds when the statements are explained. */
const GROWN = 100_000

/**
 * Tables that do not grow with use: a fixed set of rows (named counters, the hub's keys, the
 * token keyring, the migrator's own) or one row per live runtime process.
 */
const FIXED_TABLES = new Set([
  'counters',
  'hub_keys',
  'transfer_token_keys',
  'kysely_migration',
  'kysely_migration_lock',
  'compute_runtimes',
])

/**
 * Full scans of growing tables made on purpose, each with its reason: a statement whose text
 * matches may read that table whole.
 */
const DELIBERATE: { table: string; text: RegExp; reason: string }[] = [
  ...(
    [
      ['transfers', /^select "state", count\(\*\) as "n" from "transfers" group by "state"$/],
      ['principals', /^select "state", count\(\*\) as "n" from "principals" group by "state"$/],
      ['a2a_tasks', /^select "state", count\(\*\) as "n" from "a2a_tasks" group by "state"$/],
      ['compute_jobs', /^select "state", count\(\*\) as "n" from "compute_jobs" group by "state"$/],
      ['hops', /^select "state", count\(\*\) as "n" from "hops" group by "state"$/],
      [
        'notify_outbox',
        /^select "status", count\(\*\) as "n" from "notify_outbox" group by "status"$/,
      ],
      ['resources', /^select count\(\*\) as "n" from "resources"$/],
      [
        'resources',
        /^select "namespace", count\(\*\) as "n" from "resources" group by "namespace"/,
      ],
      ['messages', /^select count\(\*\) as "n" from "messages" where "acked_at" is null$/],
      ['grants', /^select count\(\*\) as "n" from "grants" where "revoked_at" is null and/],
      ['handoffs', /^select "state", "ended", count\(\*\) as "count" from "handoffs" where/],
    ] as const
  ).map(([table, text]) => ({
    table,
    text,
    reason:
      "a count for the operator's overview (transfers by state also for /metrics): it reads every row it counts, when an operator or a scrape asks",
  })),
  {
    table: 'handoffs',
    text: /^select .* from "handoffs" where "ended" = \S+ and "expires_at" > \S+ order by "updated_at" desc/,
    reason:
      "the operator's open handoffs are the unexpired ones, which is what the table holds (cleanup deletes each once it expires, 24 h by default); an index of updated_at would be written by every move",
  },
  {
    table: 'handoff_moves',
    text: /^select \("at" \/ 60000\) as "b", count\(\*\) as "n" from "handoff_moves"/,
    reason:
      "the overview's activity of moves reads a day of them at most (cleanup deletes a handoff's moves with it); an index of at would be written by every move",
  },
  {
    table: 'dashboard_signouts',
    text: /^select "session_id", "expires_at" from "dashboard_signouts" where "expires_at" >/,
    reason:
      'every instance keeps every live sign-out, and live sign-outs are what the table holds (each sign-out deletes the expired ones)',
  },
  {
    table: 'grants',
    text: /^select \* from "grants" where "revoked_at" is (not )?null (and "expires_at" \S+ \S+ )?order by "created_at" desc/,
    reason:
      "the operator's grants of one status (live, revoked, expired), newest first: how many it passes over depends on how many grants have left that status, which no index of theirs can know; read when an operator looks",
  },
]

/** One recorded statement: its text and the parameters of its first run. */
interface Recorded {
  text: string
  parameters: unknown[]
  /** Prepared under a name (PostgreSQL), so that its plan may become a generic one. */
  named: boolean
}

/**
 * Records every statement either driver runs in this process while `recording` is set: the text
 * and the parameters of the first run of each distinct text. `restore` undoes the patches.
 */
function recordStatements() {
  const seen = new Map<string, Recorded>()
  const state = { recording: false }
  /** Connections whose statements are not recorded (the grown database's own). */
  const ignore = new WeakSet<object>()
  const note = (by: object, text: unknown, parameters: unknown, named = false) => {
    if (!state.recording || ignore.has(by) || typeof text !== 'string' || seen.has(text)) return
    seen.set(text, { text, parameters: Array.isArray(parameters) ? [...parameters] : [], named })
  }
  const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
  const query = client.query
  client.query = function (this: object, ...args: unknown[]) {
    const [first, second] = args
    if (typeof first === 'string') note(this, first, second)
    else if (first && typeof first === 'object' && 'text' in first) {
      const config = first as { text: unknown; values?: unknown; name?: unknown }
      note(this, config.text, config.values ?? second, typeof config.name === 'string')
    }
    return query.apply(this, args)
  }
  const probe = new SQLite(':memory:')
  const statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<
    string,
    (...args: unknown[]) => unknown
  >
  probe.close()
  const methods = ['run', 'get', 'all', 'iterate'] as const
  const originals = methods.map((name) => statement[name]!)
  methods.forEach((name, i) => {
    const original = originals[i]!
    statement[name] = function (this: { source: string; database: object }, ...args: unknown[]) {
      const parameters = args.length === 1 && Array.isArray(args[0]) ? args[0] : args
      note(this.database, this.source, parameters)
      return original.apply(this, args)
    }
  })
  return {
    state,
    seen,
    ignore,
    restore() {
      client.query = query
      methods.forEach((name, i) => {
        statement[name] = originals[i]!
      })
    },
  }
}

/** Statements worth a plan: reads and writes of tables, not transaction control or settings. */
const PLANNED = /^\s*(select|insert|update|delete|with)\b/i

/** A column as the growth sees it: its name, a portable type, and whether it is an integer. */
interface Column {
  name: string
  integer: boolean
}

// Grown rows are made of distinct values, none of which any statement of the workload names. The
// times are those of a table's past: events happened a month ago, while deadlines (expiries,
// leases, the next attempt, the current quota window) lie ahead, as in a table the cleanup keeps.
// So a statement that needs a few rows (what is due, what happened in the last hour, the newest)
// can find them through an index, and one that has none reads everything.
const PAST_MS = Date.now() - 30 * 86_400_000
const FUTURE_MS = Date.now() + 30 * 86_400_000
const DEADLINE = /(expires_at|^exp|_until|_ends_at|^next_at|^window_start)$/
const TIME = /(_at|^iat)$/

function grownValue(column: Column): string {
  if (!column.integer) return `'g' || i`
  if (DEADLINE.test(column.name)) return `${FUTURE_MS} + i`
  if (TIME.test(column.name)) return `${PAST_MS} + i`
  return `1000000000 + i`
}

/** A fresh database of today's migrations whose growing tables hold GROWN rows each. */
interface GrownDatabase {
  /** The full scans of growing tables in the plan of `statement`, as `table: plan line`. */
  fullScans(statement: Recorded): Promise<string[]>
  drop(): Promise<void>
}

const NOT_ALIASES = new Set(
  'as where inner left join on order group limit set values select using cross for returning union'.split(
    ' ',
  ),
)

/** The growing tables a statement reads, by the names its plan shows them by (their aliases). */
function tablesByName(text: string, growing: Set<string>): Map<string, string> {
  const names = new Map<string, string>()
  for (const m of text.matchAll(
    /\b(?:from|join|update|into)\s+"?(\w+)"?(?:\s+(?:as\s+)?"?(\w+)"?)?/gi,
  )) {
    const [, table, alias] = m
    if (!growing.has(table!)) continue
    names.set(table!, table!)
    if (alias && !NOT_ALIASES.has(alias.toLowerCase())) names.set(alias, table!)
  }
  return names
}

async function grownSqlite(
  dataDir: string,
  drop: () => Promise<void>,
  ignore: WeakSet<object>,
): Promise<GrownDatabase> {
  const db = new SQLite(sqlitePath(dataDir))
  ignore.add(db)
  // A throwaway copy: written as fast as SQLite writes, with no journal and no sync.
  db.pragma('journal_mode = OFF')
  db.pragma('synchronous = OFF')
  db.pragma('cache_size = -65536')
  const tables = (
    db.prepare(`select name from sqlite_master where type = 'table'`).all() as { name: string }[]
  )
    .map((t) => t.name)
    .filter((t) => !t.startsWith('sqlite_'))
  const growing = new Set(tables.filter((t) => !FIXED_TABLES.has(t)))
  db.transaction(() => {
    for (const table of growing) {
      const columns = (
        db.prepare(`select name, type from pragma_table_info(?)`).all(table) as {
          name: string
          type: string
        }[]
      ).map((c) => ({ name: c.name, integer: /int/i.test(c.type) }))
      db.exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${GROWN})
        insert into "${table}" (${columns.map((c) => `"${c.name}"`).join(', ')})
        select ${columns.map(grownValue).join(', ')} from n`)
    }
  })()
  // No ANALYZE: the hub never runs one on SQLite, so it plans from the schema as it does here.
  return {
    async fullScans(statement) {
      const plan = db
        .prepare(`explain query plan ${statement.text}`)
        .all(...(statement.parameters as unknown[])) as { detail: string }[]
      // An index walk in the order asked for, of a statement that filters nothing and has a
      // limit, stops at its limit: SQLite sorts nothing first (no temporary b-tree for the order).
      const walkStops =
        /\blimit\b/i.test(statement.text) &&
        !/\b(where|group by)\b/i.test(statement.text) &&
        !plan.some((p) => p.detail === 'USE TEMP B-TREE FOR ORDER BY')
      const tables = tablesByName(statement.text, growing)
      const out: string[] = []
      for (const { detail } of plan) {
        // SCAN t, SCAN t USING [COVERING] INDEX i: every row of t or of an index (t is the alias
        // when the statement gives one).
        const m = /^SCAN (\S+)( USING (?:COVERING )?INDEX)?/.exec(detail)
        const table = m && tables.get(m[1]!)
        if (!table || (m[2] && walkStops)) continue
        out.push(`${table}: ${detail}`)
      }
      return out
    },
    async drop() {
      db.close()
      await drop()
    },
  }
}

type PlanRow = { 'QUERY PLAN': { Plan: PgPlanNode }[] }

interface PgPlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Cond'?: string
  Filter?: string
  Plans?: PgPlanNode[]
}

async function grownPostgres(
  url: string,
  drop: () => Promise<void>,
  ignore: WeakSet<object>,
): Promise<GrownDatabase> {
  const client = new pg.Client({ connectionString: url })
  ignore.add(client)
  await client.connect()
  const { rows } = await client.query<{
    table_name: string
    column_name: string
    data_type: string
  }>(
    `select table_name, column_name, data_type from information_schema.columns
     where table_schema = 'public' order by table_name, ordinal_position`,
  )
  const columns = new Map<string, Column[]>()
  for (const r of rows) {
    const list = columns.get(r.table_name) ?? []
    list.push({ name: r.column_name, integer: /int/.test(r.data_type) })
    columns.set(r.table_name, list)
  }
  const growing = new Set([...columns.keys()].filter((t) => !FIXED_TABLES.has(t)))
  // A throwaway copy: its tables written without the write-ahead log, which plans ignore.
  await client.query('set synchronous_commit = off')
  for (const table of growing) await client.query(`alter table "${table}" set unlogged`)
  for (const table of growing) {
    const cols = columns.get(table)!
    await client.query(
      `insert into "${table}" (${cols.map((c) => `"${c.name}"`).join(', ')})
       select ${cols.map(grownValue).join(', ')} from generate_series(1, ${GROWN}) as n(i)`,
    )
  }
  await client.query('analyze')
  const version = await client.query<{ v: number }>(
    `select current_setting('server_version_num')::int as v`,
  )
  const generic = version.rows[0]!.v >= 160000
  return {
    async fullScans(statement) {
      const plans = [
        await client.query<PlanRow>(
          `explain (format json) ${statement.text}`,
          statement.parameters,
        ),
      ]
      // A statement prepared under a name runs on a generic plan once PostgreSQL prefers one.
      if (statement.named && generic) {
        plans.push(
          await client.query<PlanRow>(`explain (generic_plan, format json) ${statement.text}`),
        )
      }
      const out: string[] = []
      // `limited`: every node between this one and a Limit above it passes rows on as they come.
      const walk = (node: PgPlanNode, limited: boolean) => {
        const table = node['Relation Name']
        const type = node['Node Type']
        if (table && growing.has(table)) {
          // A sequential scan, or an index scan with no condition (every row of an index), unless
          // it walks the index in the order asked for, filters nothing and stops at a limit.
          const index = type === 'Index Scan' || type === 'Index Only Scan'
          const walkStops = index && limited && !node.Filter
          if (type === 'Seq Scan' || (index && !node['Index Cond'] && !walkStops)) {
            out.push(`${table}: ${type}${node.Filter ? ` (filter ${node.Filter})` : ''}`)
          }
        }
        const passes = type === 'Limit' || (limited && type === 'Incremental Sort')
        for (const child of node.Plans ?? []) walk(child, passes)
      }
      for (const { rows } of plans) walk(rows[0]!['QUERY PLAN'][0]!.Plan, false)
      return out
    },
    async drop() {
      await client.end()
      await drop()
    },
  }
}

/** A fresh database of today's migrations, as a hub leaves it when it first opens it. */
async function migratedDatabase(store: TestStore) {
  const fresh = await store.fresh()
  const database = await openDatabase({
    databaseUrl: fresh.env.DATABASE_URL,
    dataDir: fresh.env.BATON_DATA_DIR!,
    log: pino({ level: 'silent' }),
  })
  await database.close()
  return fresh
}

/** Grows a migrated database's growing tables, its own statements kept from the recorder. */
async function grownDatabase(
  fresh: Awaited<ReturnType<TestStore['fresh']>>,
  ignore: WeakSet<object>,
): Promise<GrownDatabase> {
  try {
    return fresh.env.DATABASE_URL
      ? await grownPostgres(fresh.env.DATABASE_URL, fresh.drop, ignore)
      : await grownSqlite(fresh.env.BATON_DATA_DIR!, fresh.drop, ignore)
  } catch (error) {
    await fresh.drop()
    throw error
  }
}

/** Every cell of the authorization matrix, sent once: each operation as each kind of caller. */
async function runMatrix(store: TestStore): Promise<void> {
  const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
  const m = await startMatrixHub(store, clock)
  try {
    for (const op of OPERATIONS) {
      await Promise.all(
        CALLERS.map(async (caller) => {
          const { path, body } = CASES[op.name]!.request(m.f, caller)
          await m.send(op, caller, path, body)
        }),
      )
    }
  } finally {
    await m.close()
  }
}

const ADMIN = 'plans-operator-token-0123456789abcdef'

/** Each feature through its successful writes, reads and jobs, as a working hub runs them. */
async function runFeatures(store: TestStore): Promise<void> {
  const clock = new ManualClock(Date.now())
  const hub = await startTestHub(
    store,
    {
      BATON_ADMISSION: 'open',
      BATON_ADMIN_TOKEN: ADMIN,
      BATON_COMPUTE_EMBEDDED: 'true',
      BATON_NOTIFY_ALLOW_LOOPBACK: 'true',
      BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
    },
    { clock },
  )
  try {
    const records = await seedRecords(hub, 'plans')
    await readRecords(hub, records)
    await runFlows(hub, clock)
  } finally {
    await hub.close()
  }
}

async function runFlows(hub: TestHub, clock: ManualClock): Promise<void> {
  const admin = async <T>(method: string, path: string, body?: object) => {
    const res = await fetch(hub.url + path, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN}`,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    assert.ok(res.status < 300, `${method} ${path}: ${res.status}`)
    return (await res.json()) as T
  }
  const [owner, runtime, third] = [
    await signedAgent(hub, { clock }),
    await signedAgent(hub, { clock }),
    await signedAgent(hub, { clock }),
  ]
  const n = Array.from({ length: 6 }, (_, i) => i)

  // Token handoffs: created with a notify URL nobody answers, moved together through every state,
  // a move repeated by its nonce, a stale one, and a wait woken by a move.
  const handoffs = await Promise.all(
    n.map(async () => {
      const res = await fetch(`${hub.url}/services/v1/handoff`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { task: 'plans' }, notify_url: 'http://127.0.0.1:9/' }),
      })
      assert.equal(res.status, 201)
      return (await res.json()) as { handoff_id: string; receiver_token: string }
    }),
  )
  const move = (h: (typeof handoffs)[number], to: string, from: string, nonce?: string) =>
    fetch(`${hub.url}/services/v1/handoff/${h.handoff_id}/${to}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.receiver_token}` },
      body: JSON.stringify({ from, ...(nonce ? { nonce } : {}) }),
    })
  const woken = fetch(
    `${hub.url}/services/v1/handoff/${handoffs[0]!.handoff_id}/wait/30?version=1`,
    { headers: { authorization: `Bearer ${handoffs[0]!.receiver_token}` } },
  )
  for (const [from, to] of [
    ['offered', 'accepted'],
    ['accepted', 'working'],
    ['working', 'done'],
  ] as const) {
    const answers = await Promise.all(handoffs.map((h) => move(h, to, from, `${to}-nonce`)))
    for (const a of answers) assert.equal(a.status, 200)
  }
  assert.equal((await woken).status, 200)
  assert.equal((await move(handoffs[1]!, 'done', 'working', 'done-nonce')).status, 200)
  assert.equal((await move(handoffs[1]!, 'done', 'working')).status, 409)

  // Session transfers: whole lifecycles at once, a claim of the next one of a tier, a lease,
  // repeated and exhausting usage, a termination, and the reaper once time has passed.
  const tier = { tier: 'standard', budgetMicros: 1000, rateMicrosPerSecond: 1 }
  const mint = (id: string, body: object) =>
    admin<{ token: string }>('POST', `/admin/v1/transfers/${id}/tokens`, body).then((t) => t.token)
  const snapshot = (note: string) => ({
    snapshot: {
      systemPrompt: 'You resume the job.',
      messages: [{ role: 'user', content: note }],
      toolState: {},
      mcpConfig: { servers: [] },
    },
  })
  const staged = await Promise.all(
    n.map(async (i) => {
      const { transferId } = await owner.call<{ transferId: string }>('POST', '/v1/transfers', {
        ...snapshot(`plans ${i}`),
        idempotencyKey: `plans-${i}`,
      })
      return transferId
    }),
  )
  await Promise.all(
    staged.map(async (id) =>
      owner.call('POST', `/v1/transfers/${id}/provision`, {
        ...tier,
        token: await mint(id, { scope: 'provision', ...tier }),
      }),
    ),
  )
  const next = await runtime.call<{ transfer: { transferId: string } | null }>(
    'POST',
    '/v1/transfers/claim',
    { tier: tier.tier },
  )
  assert.ok(next.transfer)
  await Promise.all(staged.map((id) => runtime.call('POST', `/v1/transfers/${id}/claim`)))
  await Promise.all(
    staged.map(async (id) => {
      const { checksum } = await runtime.call<{ checksum: string }>(
        'GET',
        `/v1/transfers/${id}/snapshot`,
      )
      await runtime.call('POST', `/v1/transfers/${id}/push`, { checksum })
    }),
  )
  await Promise.all(
    staged.map(async (id) =>
      owner.call('POST', `/v1/transfers/${id}/activate`, {
        token: await mint(id, { scope: 'activate' }),
      }),
    ),
  )
  await Promise.all(
    staged.map(async (id) => {
      await runtime.call('POST', `/v1/transfers/${id}/lease`, { instance: 'plans-instance-1' })
      const usage = { idempotencyKey: `${id}-1`, amountMicros: 400 }
      await runtime.call('POST', `/v1/transfers/${id}/usage`, usage)
      await runtime.call('POST', `/v1/transfers/${id}/usage`, usage)
      await runtime.call('POST', `/v1/transfers/${id}/usage`, {
        idempotencyKey: `${id}-2`,
        amountMicros: 600,
      })
      await owner.call('GET', `/v1/transfers/${id}`)
      await owner.call('GET', `/v1/transfers/${id}/wait?seconds=0`)
    }),
  )
  await owner.call('GET', '/v1/transfers?state=insolvent')
  await runtime.call('GET', '/v1/transfers?role=runtime')
  const left = await owner.call<{ transferId: string }>('POST', '/v1/transfers', snapshot('left'))
  const ended = await owner.call<{ transferId: string }>('POST', '/v1/transfers', snapshot('end'))
  await admin('POST', `/admin/v1/transfers/${ended.transferId}/terminate`, {})

  // Resources and grants: an update, a delegable grant passed on, a revocation of the chain.
  const resource = await owner.call<{ id: string }>('POST', '/v1/resources', {
    namespace: 'plans',
    kind: 'note',
    data: { v: 1 },
  })
  await owner.call('PATCH', `/v1/resources/${resource.id}`, { expectedVersion: 1, data: { v: 2 } })
  const expiresAt = new Date(clock.now() + 3600_000).toISOString()
  const parent = await owner.call<{ id: string }>('POST', '/v1/capabilities', {
    resourceId: resource.id,
    subject: runtime.principal,
    actions: ['resource:read', 'resource:update'],
    delegable: true,
    expiresAt,
  })
  await runtime.call('POST', '/v1/capabilities', {
    resourceId: resource.id,
    subject: third.principal,
    actions: ['resource:read'],
    delegable: false,
    expiresAt,
  })
  await third.call('GET', `/v1/resources/${resource.id}`)
  await runtime.call('PATCH', `/v1/resources/${resource.id}`, {
    expectedVersion: 2,
    data: { v: 3 },
  })
  await third.call('GET', '/v1/resources')
  await owner.call('DELETE', `/v1/capabilities/${parent.id}`)

  // Messages: sends that commit together, a cursor, acknowledgements, a wait woken by a send.
  const inbox = third.call('GET', '/v1/messages?after=0&wait=20')
  const sent = await Promise.all(
    n.map((i) =>
      owner.call<{ id: string }>('POST', '/v1/messages', {
        recipient: third.principal,
        body: { i },
        idempotencyKey: `plans-${i}`,
      }),
    ),
  )
  await inbox
  await third.call('GET', '/v1/messages?after=2&limit=3')
  await Promise.all(sent.map((m) => third.call('POST', `/v1/messages/${m.id}/ack`)))

  // Home files: a write, its update, a listing, a delete.
  await owner.call('PUT', '/v1/home/file', {
    path: 'plans/a.json',
    expectedRevision: 0,
    content: '1',
  })
  await owner.call('PUT', '/v1/home/file', {
    path: 'plans/a.json',
    expectedRevision: 1,
    content: '2',
  })
  await owner.call('GET', '/v1/home/files?prefix=plans')
  await owner.call('DELETE', '/v1/home/file?path=plans%2Fa.json&expectedRevision=2')

  // Compute: a job the embedded runtime runs, waited for; one canceled.
  const job = await owner.call<{ jobId: string }>('POST', '/v1/compute/jobs', {
    language: 'json-expr-v1',
    program: { '+': [1, 2] },
    idempotencyKey: 'plans-job',
  })
  await owner.call('GET', `/v1/compute/jobs/${job.jobId}/wait/20`)
  const canceled = await owner.call<{ jobId: string }>('POST', '/v1/compute/jobs', {
    language: 'json-expr-v1',
    program: { '+': [1, 2] },
    idempotencyKey: 'plans-canceled',
  })
  await owner.request('POST', `/v1/compute/jobs/${canceled.jobId}/cancel`)
  await owner.call('GET', '/v1/compute/jobs')

  // A2A: a task, the agent's answer, a push config that is sent to, a listing, a cancel.
  const task = await hub.ctx.a2a.send(owner.principal, {
    tenant: runtime.principal,
    message: { messageId: 'plans-task', role: 'ROLE_USER', parts: [{ text: 'plans' }] },
    configuration: { returnImmediately: true },
  })
  await hub.ctx.a2a.setPushConfig(owner.principal, {
    taskId: task.task.id,
    id: 'plans-hook',
    url: 'http://127.0.0.1:9/hook',
  })
  await hub.ctx.a2a.send(runtime.principal, {
    message: {
      messageId: 'plans-answer',
      role: 'ROLE_AGENT',
      parts: [{ text: 'working on it' }],
      taskId: task.task.id,
    },
    configuration: { returnImmediately: true },
  })
  await hub.ctx.a2a.fanOut()
  await hub.ctx.a2a.list(owner.principal, {})
  await hub.ctx.a2a.cancel(owner.principal, { id: task.task.id })

  // Budgets: a budgeted hop, a sub-offer reserved from it, spends charged up the chain, a
  // crossing refused and delivered, holds settled or left to expire, a cancel that releases.
  const hopsOf = (who: typeof owner) => new HopClient(who)
  const budgetsOf = (who: typeof owner) => new BudgetClient(who)
  const hopNow = () => clock.now()
  const root = await hopsOf(owner).offer({
    to: runtime.principal,
    dialog: 'ctx-plans-budget',
    budget: { unit: 'usd', amountMicros: 1_000_000 },
    ttlS: 300,
    now: hopNow,
  })
  const sub = await hopsOf(runtime).offer({
    to: third.principal,
    dialog: 'ctx-plans-budget',
    after: root.handoff,
    budget: { unit: 'usd', amountMicros: 300_000 },
    ttlS: 300,
    now: hopNow,
  })
  const [rootHop, subHop] = [root.signed.digest, sub.signed.digest]
  await Promise.all(
    n.map((i) => budgetsOf(third).spend(subHop, 1000, { idempotencyKey: `plans-spend-${i}` })),
  )
  await budgetsOf(third).spend(subHop, 1000, { idempotencyKey: 'plans-spend-0' })
  await budgetsOf(third)
    .spend(subHop, 10_000_000, { idempotencyKey: 'plans-crossing' })
    .then(
      () => assert.fail('a spend past the budget was charged'),
      () => {},
    )
  const holds = await Promise.all(
    n.map((i) => budgetsOf(runtime).reserve(rootHop, 2000, { idempotencyKey: `plans-hold-${i}` })),
  )
  await budgetsOf(runtime).settle(rootHop, holds[0]!.holdId, 1500)
  await budgetsOf(third).read(subHop)
  await budgetsOf(owner).read(rootHop)
  await hopsOf(runtime).inbox()
  await hopsOf(runtime).answer(sub.handoff.offer as string, 'canceled', { now: hopNow })

  // Identity and the dashboard: decisions, labels, a sign-out.
  await hub.ctx.identity.decide(third.principal, 'suspend')
  await hub.ctx.identity.decide(third.principal, 'approve')
  await owner.call('PUT', '/v1/me/label', { label: 'plans owner' })
  await hub.ctx.sessions.signOut({ sessionId: 'plans-session', expiresAt: clock.now() + 60_000 })
  await hub.ctx.sessions.live()
  const page = await admin<{ next_cursor?: string }>('GET', '/admin/v1/principals?limit=1')
  assert.ok(page.next_cursor)
  await admin('GET', `/admin/v1/principals?limit=1&cursor=${encodeURIComponent(page.next_cursor)}`)
  await admin('GET', '/admin/v1/dashboard/overview')
  await (await fetch(`${hub.url}/metrics`)).text()

  // Time passes: leases, expiries and graces run out, and every job runs.
  clock.advance(2 * 86_400_000)
  await hub.ctx.transfers.reap()
  await hub.ctx.compute.reap()
  await hub.ctx.budgets.reap()
  await hub.ctx.runCleanup()
  await hub.ctx.a2a.fanOut()
  await owner.call('GET', `/v1/transfers/${left.transferId}`)
}

for (const store of testStores) {
  test(`every statement the hub runs finds its rows without reading a grown table whole (${store.name})`, async () => {
    const recorder = recordStatements()
    let growing: Promise<GrownDatabase> | undefined
    try {
      // What a fresh database's migrations run is no workload of the hub's: it is set aside.
      recorder.state.recording = true
      const fresh = await migratedDatabase(store)
      const migrations = new Set(recorder.seen.keys())
      // PostgreSQL grows the tables while the hubs work (SQLite's growth runs before them).
      growing = grownDatabase(fresh, recorder.ignore)
      growing.catch(() => {})
      await runMatrix(store)
      await runFeatures(store)
      recorder.state.recording = false
      const grown = await growing
      const statements = [...recorder.seen.values()].filter(
        (s) => PLANNED.test(s.text) && !migrations.has(s.text),
      )
      assert.ok(statements.length > 100, `only ${statements.length} statements were recorded`)
      const found: string[] = []
      for (const statement of statements) {
        for (const scan of await grown.fullScans(statement)) {
          const table = scan.slice(0, scan.indexOf(':'))
          const text = statement.text.replace(/\s+/g, ' ').trim()
          if (DELIBERATE.some((d) => d.table === table && d.text.test(text))) continue
          found.push(`${scan}\n    ${statement.text.replace(/\s+/g, ' ').slice(0, 400)}`)
        }
      }
      assert.deepEqual(found, [], `full scans of grown tables:\n${found.join('\n')}`)
    } finally {
      recorder.state.recording = false
      recorder.restore()
      await (await growing?.catch(() => undefined))?.drop()
    }
  })
}
