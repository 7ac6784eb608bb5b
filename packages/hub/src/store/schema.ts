/** Row types of every table, as kysely sees them. Times are epoch milliseconds. */
export interface HandoffRow {
  id: string
  owner_token_hash: string
  receiver_token_hash: string
  state: string
  version: number
  ended: number
  payload: string
  note: string | null
  notify_url: string | null
  machine: string
  created_at: number
  updated_at: number
  expires_at: number
}

export interface HandoffMoveRow {
  handoff_id: string
  version: number
  from_state: string
  to_state: string
  actor: string
  nonce: string | null
  note: string | null
  at: number
}

export interface QuotaCounterRow {
  scope: string
  subject: string
  window_start: number
  count: number
}

export interface IdempotencyRow {
  scope: string
  key_hash: string
  request_hash: string
  status: number
  response: string
  created_at: number
  expires_at: number
}

export interface Schema {
  handoffs: HandoffRow
  handoff_moves: HandoffMoveRow
  quota_counters: QuotaCounterRow
  idempotency_keys: IdempotencyRow
}
