import { type Kysely, sql } from 'kysely'
import { CompiledShapes } from '../store/compiled.js'
import type { HubKeyRow, PrincipalRow, Schema } from '../store/schema.js'
import { type HandedTrace, traceColumns } from '../telemetry/trace-context.js'

/** SQL for principals, nonces and the hub key, in the subset both dialects share. */

// Statements every signed request runs, by dialect and shape (a batch's row count): compiled
// once, and on PostgreSQL each shape prepared once per connection. Building them anew was most of
// the SQL share of a signed request's event-loop time.
export const identityShapes = new CompiledShapes(512, 'baton_identity_')

/** Removes nonces whose signatures can no longer be fresh; answers how many. */
export async function pruneNonces(db: Kysely<Schema>, now: number): Promise<number> {
  const res = await db
    .deleteFrom('signature_nonces')
    .where('expires_at', '<', now)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/** Inserts a principal unless it is already enrolled. */
export async function enrolPrincipal(db: Kysely<Schema>, row: PrincipalRow): Promise<void> {
  await db
    .insertInto('principals')
    .values(row)
    .onConflict((oc) => oc.column('principal').doNothing())
    .execute()
}

/** The principal whose key has this RFC 7638 thumbprint, if one is enrolled. */
export async function findPrincipalByThumbprint(
  db: Kysely<Schema>,
  thumbprint: string,
): Promise<Pick<PrincipalRow, 'principal' | 'public_key'> | undefined> {
  return db
    .selectFrom('principals')
    .select(['principal', 'public_key'])
    .where('thumbprint', '=', thumbprint)
    .executeTakeFirst()
}

export async function findPrincipal(
  db: Kysely<Schema>,
  principal: string,
): Promise<PrincipalRow | undefined> {
  return db
    .selectFrom('principals')
    .selectAll()
    .where('principal', '=', principal)
    .executeTakeFirst()
}

/** Sets a principal's admission state; answers the updated row, or undefined if unknown. */
export async function setPrincipalState(
  db: Kysely<Schema>,
  principal: string,
  state: string,
  at: number,
  trace: HandedTrace | undefined,
): Promise<PrincipalRow | undefined> {
  return db
    .updateTable('principals')
    .set({ state, decided_at: at, ...traceColumns(trace) })
    .where('principal', '=', principal)
    .returningAll()
    .executeTakeFirst()
}

/**
 * Sets the label an agent gives itself, only while it is pending or approved; answers the
 * updated row, or undefined if it is unknown or in another state.
 */
export async function setAgentLabel(
  db: Kysely<Schema>,
  principal: string,
  label: string,
): Promise<PrincipalRow | undefined> {
  return db
    .updateTable('principals')
    .set({ label })
    .where('principal', '=', principal)
    .where('state', 'in', ['pending', 'approved'])
    .returningAll()
    .executeTakeFirst()
}

/** Sets the label an operator gives a principal; answers the updated row, or undefined if unknown. */
export async function setOperatorLabel(
  db: Kysely<Schema>,
  principal: string,
  label: string,
): Promise<PrincipalRow | undefined> {
  return db
    .updateTable('principals')
    .set({ operator_label: label })
    .where('principal', '=', principal)
    .returningAll()
    .executeTakeFirst()
}

/** Principals in enrolment order, after a position (keyset paging), optionally in one state. */
export async function listPrincipals(
  db: Kysely<Schema>,
  q: {
    state?: string | undefined
    after?: { enrolledAt: number; principal: string } | undefined
    limit: number
  },
): Promise<PrincipalRow[]> {
  let query = db.selectFrom('principals').selectAll()
  if (q.state) query = query.where('state', '=', q.state)
  const after = q.after
  if (after) {
    // The first condition bounds an index range to the page's start; the OR alone would walk the
    // index from its beginning.
    query = query
      .where('enrolled_at', '>=', after.enrolledAt)
      .where((eb) =>
        eb.or([
          eb('enrolled_at', '>', after.enrolledAt),
          eb.and([eb('enrolled_at', '=', after.enrolledAt), eb('principal', '>', after.principal)]),
        ]),
      )
  }
  return query.orderBy('enrolled_at', 'asc').orderBy('principal', 'asc').limit(q.limit).execute()
}

/** Stores a hub key in a slot unless the slot is taken (several instances race to start). */
export async function insertHubKey(db: Kysely<Schema>, row: HubKeyRow): Promise<void> {
  await db
    .insertInto('hub_keys')
    .values(row)
    .onConflict((oc) => oc.column('slot').doNothing())
    .execute()
}

export async function findHubKey(db: Kysely<Schema>, slot: string): Promise<HubKeyRow | undefined> {
  return db.selectFrom('hub_keys').selectAll().where('slot', '=', slot).executeTakeFirst()
}

/** The count of a daily quota counter, 0 when none. */
export async function readQuotaCount(
  db: Kysely<Schema>,
  q: { scope: string; subject: string; windowStart: number },
): Promise<number> {
  const row = await db
    .selectFrom('quota_counters')
    .select('count')
    .where('scope', '=', q.scope)
    .where('subject', '=', q.subject)
    .where('window_start', '=', q.windowStart)
    .executeTakeFirst()
  return row?.count ?? 0
}

/** Records many nonces at once; answers the (keyid, nonce) pairs that were new. */
export async function insertNonces(
  db: Kysely<Schema>,
  rows: { keyid: string; nonce: string; expires_at: number }[],
): Promise<Set<string>> {
  if (rows.length === 0) return new Set()
  // One statement whose text follows the batch size (at most BATON_MAX_BATCH rows), compiled
  // once per size: padding it to fixed sizes measured slower on SQLite (the padded rows cost
  // inserts), and each size's text is prepared once by either driver.
  const parameters: unknown[] = []
  for (const r of rows) parameters.push(r.keyid, r.nonce, r.expires_at)
  const { rows: fresh } = await identityShapes.run<{ keyid: string; nonce: string }>(
    db,
    `nonces_${rows.length}`,
    parameters,
    () =>
      db
        .insertInto('signature_nonces')
        .values(rows.map((r) => ({ keyid: r.keyid, nonce: r.nonce, expires_at: r.expires_at })))
        .onConflict((oc) => oc.columns(['keyid', 'nonce']).doNothing())
        .returning(['keyid', 'nonce'])
        .compile(),
  )
  const out = new Set<string>()
  for (const r of fresh) out.add(`${r.keyid}\0${r.nonce}`)
  return out
}

/** The enrolled principals among `principals`. */
export async function findPrincipals(
  db: Kysely<Schema>,
  principals: string[],
): Promise<PrincipalRow[]> {
  if (principals.length === 0) return []
  return db.selectFrom('principals').selectAll().where('principal', 'in', principals).execute()
}

/** Enrols many principals at once, skipping any already enrolled. */
export async function enrolPrincipals(db: Kysely<Schema>, rows: PrincipalRow[]): Promise<void> {
  if (rows.length === 0) return
  await db
    .insertInto('principals')
    .values(rows)
    .onConflict((oc) => oc.column('principal').doNothing())
    .execute()
}

/** Replaces a hub key's stored private part, only if it is still `expect` (sealing it once). */
export async function resealHubKey(
  db: Kysely<Schema>,
  slot: string,
  expect: string,
  sealed: string,
): Promise<void> {
  await db
    .updateTable('hub_keys')
    .set({ private_jwk: sealed })
    .where('slot', '=', slot)
    .where('private_jwk', '=', expect)
    .execute()
}

/** What judging a signed request before its body reads: its nonce, principal and quota count. */
export interface AdmissionRead {
  replayed: boolean
  principal: PrincipalRow | undefined
  requests: number
}

/** The columns `readAdmission` selects, as a query that adds columns of its own answers them. */
export interface AdmissionColumns {
  used: number | string
  requests: number | null
  principal: string | null
  public_key: string
  state: string
  enrolled_at: number
  decided_at: number | null
  label: string | null
  operator_label: string | null
  trace: string | null
  trace_state: string | null
}

/**
 * The select list of `readAdmission`, for `keyid`'s `nonce` and its count of the daily quota
 * `scope` in the window starting at `windowStart`; it reads `principals` as `p`.
 */
export function admissionColumns(q: {
  keyid: string
  nonce: string
  scope: string
  windowStart: number
}) {
  return sql`(select count(*) from signature_nonces where keyid = ${q.keyid} and nonce = ${q.nonce}) as used,
      (select count from quota_counters
        where scope = ${q.scope} and subject = ${q.keyid} and window_start = ${q.windowStart}) as requests,
      p.principal, p.public_key, p.state, p.enrolled_at, p.decided_at, p.label, p.operator_label,
      p.trace, p.trace_state`
}

/** The admission of the row `admissionColumns` selected. */
export function toAdmissionRead(row: AdmissionColumns): AdmissionRead {
  return {
    replayed: Number(row.used) > 0,
    requests: Number(row.requests ?? 0),
    principal:
      row.principal === null
        ? undefined
        : {
            principal: row.principal,
            public_key: row.public_key,
            state: row.state,
            enrolled_at: Number(row.enrolled_at),
            decided_at: row.decided_at === null ? null : Number(row.decided_at),
            label: row.label,
            operator_label: row.operator_label,
            trace: row.trace,
            trace_state: row.trace_state,
          },
  }
}

/**
 * What judging a signed request before its body needs, in one query: whether its key already
 * used its nonce, the key's principal if enrolled, and its count of a daily request quota.
 */
export async function readAdmission(
  db: Kysely<Schema>,
  q: { keyid: string; nonce: string; scope: string; windowStart: number },
): Promise<AdmissionRead> {
  const { rows } = await identityShapes.run<AdmissionColumns>(
    db,
    'admission',
    [q.keyid, q.nonce, q.scope, q.keyid, q.windowStart, q.keyid],
    () =>
      sql<AdmissionColumns>`select ${admissionColumns(q)}
    from (select 1 as one) as o left join principals as p on p.principal = ${q.keyid}`.compile(db),
  )
  return toAdmissionRead(rows[0]!)
}

/** The labels of those of `principals` that have one. */
export async function labelsOf(
  db: Kysely<Schema>,
  principals: string[],
): Promise<
  { principal: string; label?: string | null | undefined; operator_label?: string | null }[]
> {
  return db
    .selectFrom('principals')
    .select(['principal', 'label', 'operator_label'])
    .where('principal', 'in', principals)
    .where((eb) => eb.or([eb('label', 'is not', null), eb('operator_label', 'is not', null)]))
    .execute()
}
