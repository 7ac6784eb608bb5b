import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import { BatonError, IdempotencyKeyHeader } from '@baton/protocol'
import type { Kysely } from 'kysely'
import type { Schema } from './schema.js'

/**
 * Idempotency keys. The stored answer is encrypted with a key derived from the caller's
 * Idempotency-Key itself, so an answer that holds secrets shown once (such as handoff tokens)
 * is readable again only by whoever holds the key; the database holds only a hash of the key.
 * On a signed route the answer is bound to the principal that made it: the same key from another
 * principal is a new request of that principal, never a repeat of someone else's.
 */

/** How long a remembered answer is kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** Checks the syntax of an Idempotency-Key header value. */
export function parseIdempotencyKey(raw: unknown): string | undefined {
  if (raw === undefined) return undefined
  const key = IdempotencyKeyHeader.safeParse(raw)
  if (!key.success) {
    throw new BatonError(
      'invalid_request',
      'Idempotency-Key must be 8 to 255 printable ASCII characters without spaces',
      { field: 'Idempotency-Key' },
    )
  }
  return key.data
}

function keyHash(scope: string, key: string): string {
  return createHash('sha256').update(`${scope}\0${key}`).digest('base64url')
}

function aesKey(scope: string, key: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, scope, 'baton idempotent answer', 32))
}

/** The scope a remembered answer is kept under: the operation's, and its principal's if any. */
export function answerScope(scope: string, principal: string | undefined): string {
  return principal === undefined ? scope : `${scope}:${principal}`
}

/** A stable digest of a request, to tell a true repeat from a reused key. */
export function requestHash(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url')
}

/** A remembered answer. */
export interface Remembered<T> {
  status: number
  body: T
}

/**
 * Looks up a key in the caller's transaction: the first answer when the request matches,
 * `idempotency_conflict` when it does not, undefined when the key is new (or expired).
 */
export async function recallAnswer<T>(
  db: Kysely<Schema>,
  q: { scope: string; key: string; requestHash: string; now: number },
): Promise<Remembered<T> | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('scope', '=', q.scope)
    .where('key_hash', '=', keyHash(q.scope, q.key))
    .executeTakeFirst()
  if (!row || row.expires_at <= q.now) return undefined
  if (row.request_hash !== q.requestHash) {
    throw new BatonError(
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request',
    )
  }
  const blob = Buffer.from(row.response, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', aesKey(q.scope, q.key), blob.subarray(0, 12))
  decipher.setAuthTag(blob.subarray(12, 28))
  const plain = Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()])
  return { status: row.status, body: JSON.parse(plain.toString('utf8')) as T }
}

/** Remembers an answer in the caller's transaction, so it commits with the write it answers. */
export async function rememberAnswer(
  db: Kysely<Schema>,
  q: {
    scope: string
    key: string
    requestHash: string
    now: number
    status: number
    body: unknown
  },
): Promise<void> {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', aesKey(q.scope, q.key), iv)
  const enc = Buffer.concat([cipher.update(JSON.stringify(q.body), 'utf8'), cipher.final()])
  const blob = Buffer.concat([iv, cipher.getAuthTag(), enc]).toString('base64url')
  const hash = keyHash(q.scope, q.key)
  // An expired row under the same key is replaced; a live one was found by recallAnswer first.
  await db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', q.scope)
    .where('key_hash', '=', hash)
    .execute()
  await db
    .insertInto('idempotency_keys')
    .values({
      scope: q.scope,
      key_hash: hash,
      request_hash: q.requestHash,
      status: q.status,
      response: blob,
      created_at: q.now,
      expires_at: q.now + IDEMPOTENCY_TTL_MS,
    })
    .execute()
}

/** Deletes remembered answers past their time. */
export async function pruneIdempotencyKeys(db: Kysely<Schema>, now: number): Promise<number> {
  const res = await db
    .deleteFrom('idempotency_keys')
    .where('expires_at', '<=', now)
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}

/**
 * Runs a create at most once per Idempotency-Key (and principal, when given), inside the
 * caller's transaction: a repeat of the same request answers the remembered result; the same key
 * with another request is a 409 `idempotency_conflict`; without a key, `create` simply runs.
 */
export async function onceByKey<T>(
  db: Kysely<Schema>,
  q: {
    scope: string
    /** The signing principal on a signed route; the answer is remembered for it alone. */
    principal?: string
    key: string | undefined
    request: unknown
    now: number
    status?: number
  },
  create: () => Promise<T>,
): Promise<T> {
  if (!q.key) return create()
  const hash = requestHash(q.request)
  const scope = answerScope(q.scope, q.principal)
  const prior = await recallAnswer<T>(db, {
    scope,
    key: q.key,
    requestHash: hash,
    now: q.now,
  })
  if (prior) return prior.body
  const value = await create()
  await rememberAnswer(db, {
    scope,
    key: q.key,
    requestHash: hash,
    now: q.now,
    status: q.status ?? 201,
    body: value,
  })
  return value
}
