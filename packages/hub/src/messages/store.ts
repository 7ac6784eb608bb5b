import { type Kysely, sql } from 'kysely'
import type { MessageRow, Schema } from '../store/schema.js'

/** SQL for messages, in the subset both dialects share. Every function takes the db or a tx. */

const SEQUENCE_COUNTER = 'message_sequence'

/**
 * Takes the next global sequence number. The counter row stays locked until the transaction
 * ends, so senders on every instance commit in sequence order and a rolled-back send frees its
 * number: sequences never repeat, never go backwards and never commit out of order.
 */
export async function nextSequence(db: Kysely<Schema>): Promise<number> {
  const row = await db
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('name', '=', SEQUENCE_COUNTER)
    .returning('value')
    .executeTakeFirstOrThrow()
  return Number(row.value)
}

/** Takes `n` numbers of the global sequence at once; answers the first of them. */
export async function nextSequences(db: Kysely<Schema>, n: number): Promise<number> {
  const row = await db
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', n) }))
    .where('name', '=', SEQUENCE_COUNTER)
    .returning('value')
    .executeTakeFirstOrThrow()
  return Number(row.value) - n + 1
}

export async function insertMessages(db: Kysely<Schema>, rows: MessageRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('messages').values(rows).execute()
}

/** The messages some senders sent under some idempotency keys, one read for many sends. */
export async function findBySenderKeys(
  db: Kysely<Schema>,
  keys: { sender: string; idempotencyKey: string }[],
): Promise<MessageRow[]> {
  if (keys.length === 0) return []
  const bySender = new Map<string, string[]>()
  for (const k of keys)
    bySender.set(k.sender, [...(bySender.get(k.sender) ?? []), k.idempotencyKey])
  return db
    .selectFrom('messages')
    .selectAll()
    .where((eb) =>
      eb.or(
        [...bySender].map(([sender, list]) =>
          eb.and([eb('sender', '=', sender), eb('idempotency_key', 'in', list)]),
        ),
      ),
    )
    .execute()
}

export async function findBySenderKey(
  db: Kysely<Schema>,
  sender: string,
  idempotencyKey: string,
): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('sender', '=', sender)
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst()
}

/** One message addressed to `recipient`, or undefined (also when it is someone else's). */
export async function findForRecipient(
  db: Kysely<Schema>,
  id: string,
  recipient: string,
): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('id', '=', id)
    .where('recipient', '=', recipient)
    .executeTakeFirst()
}

/** The recipient's messages after an exclusive sequence, oldest first. */
export async function listInbox(
  db: Kysely<Schema>,
  q: { recipient: string; after: number; limit: number; unacked: boolean },
): Promise<MessageRow[]> {
  let query = db
    .selectFrom('messages')
    .selectAll()
    .where('recipient', '=', q.recipient)
    .where('sequence', '>', q.after)
  if (q.unacked) query = query.where('acked_at', 'is', null)
  return query.orderBy('sequence', 'asc').limit(q.limit).execute()
}

/** Sets acked_at once; a second ack leaves the first time. Answers whether a row changed. */
export async function markAcked(
  db: Kysely<Schema>,
  id: string,
  recipient: string,
  at: number,
): Promise<boolean> {
  const res = await db
    .updateTable('messages')
    .set({ acked_at: at })
    .where('id', '=', id)
    .where('recipient', '=', recipient)
    .where('acked_at', 'is', null)
    .executeTakeFirst()
  return Number(res.numUpdatedRows) === 1
}

/** The newest sequence of the recipient's messages (unacknowledged ones only, if asked); 0 if none. */
export async function inboxTop(
  db: Kysely<Schema>,
  q: { recipient: string; unacked: boolean },
): Promise<number> {
  let query = db
    .selectFrom('messages')
    .select((eb) => eb.fn.max('sequence').as('top'))
    .where('recipient', '=', q.recipient)
  if (q.unacked) query = query.where('acked_at', 'is', null)
  const row = await query.executeTakeFirst()
  return Number(row?.top ?? 0)
}

/** How many messages wait unacknowledged, over every recipient. */
export async function countUnacked(db: Kysely<Schema>): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select(sql<number>`count(*)`.as('n'))
    .where('acked_at', 'is', null)
    .executeTakeFirst()
  return Number(row?.n ?? 0)
}

/** Per recipient, at most 500: messages, unacknowledged ones, and where its sequence is. */
export async function recipientSummary(db: Kysely<Schema>) {
  return db
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
}

/** Messages to or from a principal, latest sequence first, at most 300: no bodies. */
export async function listForOperator(db: Kysely<Schema>, principal: string) {
  return db
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
}

/** One message's body text. */
export async function findBody(db: Kysely<Schema>, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('messages').select('body').where('id', '=', id).executeTakeFirst()
  return row?.body
}
