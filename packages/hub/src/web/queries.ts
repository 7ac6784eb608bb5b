import { type Kysely, sql } from 'kysely'
import type { Schema } from '../store/schema.js'
import { diffJson, type JsonChange } from './diff.js'

/**
 * The dashboard's read model: what an operator sees, read straight from the tables in the SQL
 * subset both dialects share. Nothing here writes; decisions go through the feature services.
 * Secrets (token hashes, private keys, transfer token keys) are never selected.
 */

type Db = Kysely<Schema>

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString()

const num = (v: unknown) => Number(v ?? 0)

function parseJson(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** How the overview's activity charts are cut: `buckets` intervals of `bucketMs` up to now. */
export const ACTIVITY = { buckets: 60, bucketMs: 60_000 } as const

async function countBy(
  db: Db,
  table: 'handoffs' | 'transfers' | 'principals' | 'a2a_tasks' | 'compute_jobs' | 'hops',
  now: number,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  if (table === 'handoffs') {
    // seed 002: a handoff past its expiry reads as expired at once, whatever cleanup has done.
    const rows = await db
      .selectFrom('handoffs')
      .select(['state', sql<number>`count(*)`.as('n')])
      .where('expires_at', '>', now)
      .groupBy('state')
      .execute()
    for (const r of rows) out[r.state] = num(r.n)
    const expired = await db
      .selectFrom('handoffs')
      .select(sql<number>`count(*)`.as('n'))
      .where('expires_at', '<=', now)
      .executeTakeFirst()
    if (num(expired?.n) > 0) out.expired = num(expired?.n)
    return out
  }
  const rows = await db
    .selectFrom(table)
    .select(['state', sql<number>`count(*)`.as('n')])
    .groupBy('state')
    .execute()
  for (const r of rows) out[r.state] = num(r.n)
  return out
}

async function series(
  db: Db,
  table: 'handoff_moves' | 'messages' | 'resource_versions' | 'transfer_events',
  column: 'at' | 'created_at',
  now: number,
): Promise<number[]> {
  const { buckets, bucketMs } = ACTIVITY
  const end = Math.floor(now / bucketMs) + 1
  const start = end - buckets
  const bucket = sql<number>`(${sql.ref(column)} / ${sql.lit(bucketMs)})`
  const rows = await db
    .selectFrom(table)
    .select([bucket.as('b'), sql<number>`count(*)`.as('n')])
    .where(column, '>=', start * bucketMs)
    .groupBy(bucket)
    .execute()
  const out = new Array<number>(buckets).fill(0)
  for (const r of rows) {
    const i = Math.floor(num(r.b)) - start
    if (i >= 0 && i < buckets) out[i] = (out[i] ?? 0) + num(r.n)
  }
  return out
}

/**
 * Open handoffs by state: not ended and not past expiry, the same test as the `open` filter of
 * the handoff list, so a custom machine's final states are left out by the hub, not guessed.
 */
async function openHandoffsByState(db: Db, now: number): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('handoffs')
    .select(['state', sql<number>`count(*)`.as('n')])
    .where('ended', '=', 0)
    .where('expires_at', '>', now)
    .groupBy('state')
    .execute()
  const out: Record<string, number> = {}
  for (const r of rows) out[r.state] = num(r.n)
  return out
}

/** Counts that matter now, and activity per minute over the last hour. */
export async function overview(db: Db, now: number) {
  const [handoffs, openHandoffs, transfers, principals, a2aTasks, computeJobs, hops] =
    await Promise.all([
      countBy(db, 'handoffs', now),
      openHandoffsByState(db, now),
      countBy(db, 'transfers', now),
      countBy(db, 'principals', now),
      countBy(db, 'a2a_tasks', now),
      countBy(db, 'compute_jobs', now),
      countBy(db, 'hops', now),
    ])
  const scalar = async (q: Promise<{ n: number } | undefined>) => num((await q)?.n)
  const count = sql<number>`count(*)`.as('n')
  const [unacked, resources, liveGrants] = await Promise.all([
    scalar(
      db.selectFrom('messages').select(count).where('acked_at', 'is', null).executeTakeFirst(),
    ),
    scalar(db.selectFrom('resources').select(count).executeTakeFirst()),
    scalar(
      db
        .selectFrom('grants')
        .select(count)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst(),
    ),
  ])
  const [moves, messages, versions, transferEvents] = await Promise.all([
    series(db, 'handoff_moves', 'at', now),
    series(db, 'messages', 'created_at', now),
    series(db, 'resource_versions', 'at', now),
    series(db, 'transfer_events', 'at', now),
  ])
  return {
    at: iso(now),
    handoffs,
    openHandoffs,
    transfers,
    principals,
    a2aTasks,
    computeJobs,
    hops,
    pendingAdmissions: principals.pending ?? 0,
    unackedMessages: unacked,
    resources,
    liveGrants,
    activity: {
      bucketMs: ACTIVITY.bucketMs,
      start: iso((Math.floor(now / ACTIVITY.bucketMs) + 1 - ACTIVITY.buckets) * ACTIVITY.bucketMs),
      handoffMoves: moves,
      messages,
      resourceVersions: versions,
      transferEvents,
    },
  }
}

/** Handoffs, most recently changed first; `state` may be a state name, `expired` or `open`. */
export async function listHandoffs(db: Db, now: number, q: { state?: string; limit?: number }) {
  let query = db
    .selectFrom('handoffs')
    .select([
      'id',
      'state',
      'version',
      'ended',
      'note',
      'machine',
      'created_at',
      'updated_at',
      'expires_at',
    ])
  if (q.state === 'expired') query = query.where('expires_at', '<=', now)
  else if (q.state === 'open') query = query.where('ended', '=', 0).where('expires_at', '>', now)
  else if (q.state) query = query.where('state', '=', q.state).where('expires_at', '>', now)
  const rows = await query
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'asc')
    .limit(q.limit ?? 200)
    .execute()
  return rows.map((r) => ({
    id: r.id,
    state: r.state,
    version: r.version,
    ended: r.ended === 1,
    expired: r.expires_at <= now,
    note: r.note,
    states: (parseJson(r.machine) as { states?: string[] } | null)?.states ?? [],
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    expiresAt: iso(r.expires_at),
  }))
}

/** One handoff with its machine and its history of moves; no tokens, and no payload. */
export async function readHandoff(db: Db, now: number, id: string) {
  const row = await db
    .selectFrom('handoffs')
    .select([
      'id',
      'state',
      'version',
      'ended',
      'note',
      'notify_url',
      'machine',
      'created_at',
      'updated_at',
      'expires_at',
      sql<number>`length(payload)`.as('payload_chars'),
    ])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) return undefined
  const moves = await db
    .selectFrom('handoff_moves')
    .select(['version', 'from_state', 'to_state', 'actor', 'note', 'at'])
    .where('handoff_id', '=', id)
    .orderBy('version', 'asc')
    .execute()
  return {
    id: row.id,
    state: row.state,
    version: row.version,
    ended: row.ended === 1,
    expired: row.expires_at <= now,
    note: row.note,
    hasNotifyUrl: row.notify_url !== null,
    machine: parseJson(row.machine),
    payloadChars: num(row.payload_chars),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    expiresAt: iso(row.expires_at),
    history: moves.map((m) => ({
      version: m.version,
      from: m.from_state,
      to: m.to_state,
      actor: m.actor,
      note: m.note,
      at: iso(m.at),
    })),
  }
}

/** A handoff's payload, only when the operator asks for it. */
export async function readHandoffPayload(db: Db, id: string) {
  const row = await db
    .selectFrom('handoffs')
    .select('payload')
    .where('id', '=', id)
    .executeTakeFirst()
  return row ? { id, payload: parseJson(row.payload) } : undefined
}

/** Resources by namespace and owner, with the namespaces and their sizes. */
export async function listResources(db: Db, q: { namespace?: string; owner?: string }) {
  let query = db
    .selectFrom('resources')
    .select(['id', 'owner', 'namespace', 'kind', 'size', 'version', 'updated_at', 'updated_by'])
  if (q.namespace) query = query.where('namespace', '=', q.namespace)
  if (q.owner) query = query.where('owner', '=', q.owner)
  const [rows, namespaces] = await Promise.all([
    query.orderBy('namespace', 'asc').orderBy('updated_at', 'desc').limit(500).execute(),
    db
      .selectFrom('resources')
      .select(['namespace', sql<number>`count(*)`.as('n')])
      .groupBy('namespace')
      .orderBy('namespace', 'asc')
      .limit(500)
      .execute(),
  ])
  return {
    namespaces: namespaces.map((n) => ({ namespace: n.namespace, resources: num(n.n) })),
    resources: rows.map((r) => ({
      id: r.id,
      owner: r.owner,
      namespace: r.namespace,
      kind: r.kind,
      size: r.size,
      version: r.version,
      updatedAt: iso(r.updated_at),
      updatedBy: r.updated_by,
    })),
  }
}

type GrantRowView = {
  id: string
  resource_id: string
  issuer: string
  subject: string
  actions: string
  delegable: number
  expires_at: number
  revoked_at: number | null
  parent_id: string | null
  created_at: number
}

function toGrant(g: GrantRowView, now: number) {
  const status = g.revoked_at !== null ? 'revoked' : g.expires_at <= now ? 'expired' : 'live'
  return {
    id: g.id,
    resourceId: g.resource_id,
    issuer: g.issuer,
    subject: g.subject,
    actions: parseJson(g.actions),
    delegable: g.delegable === 1,
    status,
    parentId: g.parent_id,
    createdAt: iso(g.created_at),
    expiresAt: iso(g.expires_at),
    revokedAt: iso(g.revoked_at),
  }
}

/** One resource with every version, the changes between consecutive versions, and its grants. */
export async function readResource(db: Db, now: number, id: string) {
  const row = await db.selectFrom('resources').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) return undefined
  const [versions, grants] = await Promise.all([
    db
      .selectFrom('resource_versions')
      .select(['version', 'data', 'actor', 'at'])
      .where('resource_id', '=', id)
      .orderBy('version', 'asc')
      .limit(500)
      .execute(),
    db
      .selectFrom('grants')
      .selectAll()
      .where('resource_id', '=', id)
      .orderBy('created_at', 'desc')
      .limit(500)
      .execute(),
  ])
  let previous: unknown
  return {
    id: row.id,
    owner: row.owner,
    namespace: row.namespace,
    kind: row.kind,
    size: row.size,
    version: row.version,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    updatedBy: row.updated_by,
    versions: versions.map((v, i) => {
      const data = parseJson(v.data)
      const changes: JsonChange[] | null = i === 0 ? null : diffJson(previous, data)
      previous = data
      return { version: v.version, actor: v.actor, at: iso(v.at), data, changes }
    }),
    grants: grants.map((g) => toGrant(g, now)),
  }
}

/** Grants, newest first: `status` is live, revoked or expired. */
export async function listGrants(db: Db, now: number, q: { status?: string; subject?: string }) {
  let query = db.selectFrom('grants').selectAll()
  if (q.status === 'revoked') query = query.where('revoked_at', 'is not', null)
  else if (q.status === 'live') {
    query = query.where('revoked_at', 'is', null).where('expires_at', '>', now)
  } else if (q.status === 'expired') {
    query = query.where('revoked_at', 'is', null).where('expires_at', '<=', now)
  }
  if (q.subject) query = query.where('subject', '=', q.subject)
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'asc').limit(500).execute()
  return rows.map((g) => toGrant(g, now))
}

/** Per recipient: how many messages, how many wait unacknowledged, and where its sequence is. */
export async function messageSummary(db: Db) {
  const rows = await db
    .selectFrom('messages')
    .select([
      'recipient',
      sql<number>`count(*)`.as('total'),
      sql<number>`sum(case when acked_at is null then 1 else 0 end)`.as('unacked'),
      sql<number>`max(sequence)`.as('last_sequence'),
      sql<number | null>`min(case when acked_at is null then sequence end)`.as('oldest_unacked'),
      sql<number>`max(created_at)`.as('last_at'),
    ])
    .groupBy('recipient')
    .orderBy('recipient', 'asc')
    .limit(500)
    .execute()
  return rows.map((r) => ({
    principal: r.recipient,
    total: num(r.total),
    unacked: num(r.unacked),
    lastSequence: num(r.last_sequence),
    oldestUnackedSequence: r.oldest_unacked === null ? null : num(r.oldest_unacked),
    lastAt: iso(num(r.last_at)),
  }))
}

/** Messages to or from a principal in sequence order: metadata only, never bodies. */
export async function listMessages(db: Db, principal: string) {
  const rows = await db
    .selectFrom('messages')
    .select([
      'id',
      'sequence',
      'sender',
      'recipient',
      'body_digest',
      'created_at',
      'acked_at',
      sql<number>`length(body)`.as('body_chars'),
    ])
    .where((eb) => eb.or([eb('recipient', '=', principal), eb('sender', '=', principal)]))
    .orderBy('sequence', 'desc')
    .limit(300)
    .execute()
  return rows.map((m) => ({
    id: m.id,
    sequence: num(m.sequence),
    sender: m.sender,
    recipient: m.recipient,
    direction: m.recipient === principal ? 'in' : 'out',
    bodyDigest: m.body_digest,
    bodyChars: num(m.body_chars),
    createdAt: iso(m.created_at),
    ackedAt: iso(m.acked_at),
  }))
}

/** One message's body, only when the operator asks for it. */
export async function readMessageBody(db: Db, id: string) {
  const row = await db
    .selectFrom('messages')
    .select(['id', 'body'])
    .where('id', '=', id)
    .executeTakeFirst()
  return row ? { id: row.id, body: parseJson(row.body) } : undefined
}

type TransferRowView = Schema['transfers']

function toTransfer(t: TransferRowView) {
  return {
    id: t.id,
    owner: t.owner,
    state: t.state,
    version: t.version,
    tier: t.tier,
    runtime: t.runtime,
    budgetMicros: t.budget_micros,
    rateMicros: t.rate_micros,
    spentMicros: num(t.spent_micros),
    snapshotBytes: num(t.snapshot_bytes),
    checksum: t.checksum,
    leaseEndsAt: iso(t.lease_ends_at),
    createdAt: iso(t.created_at),
    updatedAt: iso(t.updated_at),
    expiresAt: iso(t.expires_at),
    graceEndsAt: iso(t.grace_ends_at),
    endReason: t.end_reason,
  }
}

/** Transfers, most recently changed first, optionally in one state. */
export async function listTransfers(db: Db, q: { state?: string }) {
  let query = db.selectFrom('transfers').selectAll()
  if (q.state) query = query.where('state', '=', q.state)
  const rows = await query.orderBy('updated_at', 'desc').orderBy('id', 'asc').limit(200).execute()
  return rows.map(toTransfer)
}

/** One transfer with its ordered event log and recent usage reports; never the snapshot. */
export async function readTransfer(db: Db, id: string) {
  const row = await db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) return undefined
  const [events, usage] = await Promise.all([
    db
      .selectFrom('transfer_events')
      .select(['seq', 'type', 'from_state', 'to_state', 'actor', 'data', 'at'])
      .where('transfer_id', '=', id)
      .orderBy('seq', 'asc')
      .limit(1000)
      .execute(),
    db
      .selectFrom('transfer_usage')
      .select(['amount_micros', 'spent_after', 'reporter', 'at'])
      .where('transfer_id', '=', id)
      .orderBy('spent_after', 'desc')
      .limit(100)
      .execute(),
  ])
  return {
    ...toTransfer(row),
    events: events.map((e) => ({
      seq: e.seq,
      type: e.type,
      from: e.from_state,
      to: e.to_state,
      actor: e.actor,
      at: iso(e.at),
      data: parseJson(e.data),
    })),
    usage: usage.map((u) => ({
      amountMicros: num(u.amount_micros),
      spentAfter: num(u.spent_after),
      reporter: u.reporter,
      at: iso(u.at),
    })),
  }
}

/** A transfer's snapshot content, only when the operator deliberately opens it. */
export async function readTransferSnapshot(db: Db, id: string) {
  const row = await db
    .selectFrom('transfer_snapshots')
    .select(['transfer_id', 'content'])
    .where('transfer_id', '=', id)
    .executeTakeFirst()
  return row ? { id: row.transfer_id, snapshot: parseJson(row.content) } : undefined
}

/** The display labels of `principals` that have one (a label names; it never authorizes). */
export async function labelsOf(db: Db, principals: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  if (principals.length === 0) return out
  const rows = await db
    .selectFrom('principals')
    .select(['principal', 'label'])
    .where('principal', 'in', principals)
    .where('label', 'is not', null)
    .execute()
  for (const r of rows) if (r.label) out[r.principal] = r.label
  return out
}

/** An A2A task state as the dashboard names it: `TASK_STATE_INPUT_REQUIRED` is `input-required`. */
const a2aState = (state: string) =>
  state
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-')

// A read of the a2a tables for the operator, beside the feature's own reads: the A2A service
// answers only a task's parties, and the operator is none of them.

/** A2A tasks, most recently changed first, optionally in one state (`working`, `completed`…). */
export async function listA2aTasks(db: Db, q: { state?: string; limit?: number }) {
  let query = db
    .selectFrom('a2a_tasks')
    .select([
      'id',
      'context_id',
      'owner',
      'agent',
      'state',
      'generation',
      'created_at',
      'updated_at',
    ])
  if (q.state)
    query = query.where('state', '=', `TASK_STATE_${q.state.toUpperCase().replace(/-/g, '_')}`)
  const rows = await query
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'asc')
    .limit(q.limit ?? 200)
    .execute()
  return rows.map((r) => ({
    id: r.id,
    contextId: r.context_id,
    owner: r.owner,
    agent: r.agent,
    state: a2aState(r.state),
    generation: num(r.generation),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }))
}

/**
 * One A2A task and its events, oldest first: kind, author, the state each left the task in, and
 * an artifact's id. Message and artifact contents are not read out.
 */
export async function readA2aTask(db: Db, id: string) {
  const row = await db
    .selectFrom('a2a_tasks')
    .select([
      'id',
      'context_id',
      'owner',
      'agent',
      'state',
      'generation',
      'created_at',
      'updated_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst()
  if (!row) return undefined
  const events = await db
    .selectFrom('a2a_events')
    .select(['generation', 'kind', 'author', 'body', 'at'])
    .where('task_id', '=', id)
    .orderBy('generation', 'asc')
    .limit(1000)
    .execute()
  return {
    id: row.id,
    contextId: row.context_id,
    owner: row.owner,
    agent: row.agent,
    state: a2aState(row.state),
    generation: num(row.generation),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    events: events.map((e) => {
      const body = parseJson(e.body) as {
        state?: unknown
        status?: { state?: unknown }
        artifact?: { artifactId?: unknown }
      } | null
      const state = body?.status?.state ?? body?.state
      const artifact = body?.artifact?.artifactId
      return {
        generation: num(e.generation),
        kind: e.kind,
        author: e.author,
        state: typeof state === 'string' ? a2aState(state) : null,
        artifactId: typeof artifact === 'string' ? artifact : null,
        at: iso(e.at),
      }
    }),
  }
}
