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
  /** The W3C traceparent of the request that created the handoff, handed to its readers until a move (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
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
  /** The W3C traceparent of the request that made the move (migration 016), handed to readers. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
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

export interface PrincipalRow {
  principal: string
  /** The raw Ed25519 public key, base64url. */
  public_key: string
  state: string
  enrolled_at: number
  decided_at: number | null
  /** The display label the agent gave itself (migration 015); null when none. */
  label?: string | null
  /** The display label an operator set (migration 022), shown instead of the agent's; null when none. */
  operator_label?: string | null
  /** The W3C traceparent of the request that decided the principal's admission state (or enrolled it) (migration 021); null when none was carried. */
  trace?: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state?: string | null
  /** The RFC 7638 JWK thumbprint of the key (migration 023): a Web Bot Auth keyid names it. */
  thumbprint?: string | null
}

export interface SignatureNonceRow {
  keyid: string
  nonce: string
  expires_at: number
}

export interface HubKeyRow {
  slot: string
  kid: string
  public_jwk: string
  private_jwk: string
  created_at: number
}

export interface ResourceRow {
  id: string
  owner: string
  namespace: string
  kind: string
  data: string
  size: number
  version: number
  created_at: number
  updated_at: number
  updated_by: string
  /** The W3C traceparent of the request that wrote the current version, handed to its readers (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface ResourceVersionRow {
  resource_id: string
  version: number
  data: string
  actor: string
  at: number
  /** The W3C traceparent of the request that wrote this version (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface GrantRow {
  id: string
  resource_id: string
  issuer: string
  subject: string
  /** JSON array of actions. */
  actions: string
  delegable: number
  expires_at: number
  revoked_at: number | null
  parent_id: string | null
  created_at: number
  /** The W3C traceparent of the request that issued, then revoked, the grant, handed to its holder (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface MessageRow {
  id: string
  /** The global order of messages: strictly increasing, never reused (seed 000 cursors). */
  sequence: number
  sender: string
  recipient: string
  /** The body as RFC 8785 canonical JSON. */
  body: string
  body_digest: string
  idempotency_key: string
  /** The hub-signed receipt, stored verbatim so a replay answers the same bytes. */
  receipt: string
  created_at: number
  acked_at: number | null
  /** The W3C traceparent of the sending request (migration 014), handed to the reader. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface CounterRow {
  name: string
  value: number
}

export interface HomeFileRow {
  principal: string
  path: string
  revision: number
  content: string
  size: number
  created_at: number
  updated_at: number
  /** The W3C traceparent of the request that wrote the current revision (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface TransferRow {
  id: string
  owner: string
  state: string
  version: number
  idempotency_key: string | null
  /** `sha-256:` and the base64url SHA-256 of the snapshot's RFC 8785 canonical JSON. */
  checksum: string
  snapshot_bytes: number
  tier: string | null
  /** Money in integer micro-units (seed 004). */
  budget_micros: number | null
  rate_micros: number | null
  spent_micros: number
  runtime: string | null
  lease_instance: string | null
  lease_ends_at: number | null
  created_at: number
  updated_at: number
  expires_at: number | null
  grace_ends_at: number | null
  end_reason: string | null
}

export interface TransferSnapshotRow {
  transfer_id: string
  /** The snapshot as RFC 8785 canonical JSON, the bytes the checksum covers. */
  content: string
}

export interface TransferEventRow {
  transfer_id: string
  seq: number
  type: string
  from_state: string | null
  to_state: string
  actor: string
  /** JSON object. */
  data: string
  at: number
  /**
   * The W3C traceparent of the request that staged or provisioned the transfer (migration 016),
   * handed to the runtime; null for other events.
   */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface TransferUsageRow {
  transfer_id: string
  idempotency_key: string
  amount_micros: number
  spent_after: number
  reporter: string
  at: number
}

export interface TransferTokenUseRow {
  jti: string
  transfer_id: string
  scope: string
  used_at: number
}

export interface TransferTokenKeyRow {
  kid: string
  secret: string
  created_at: number
}

export interface DashboardSignoutRow {
  session_id: string
  expires_at: number
}

/** A notify signal in the outbox (migration 007). */
export interface NotifyOutboxRow {
  event_id: string
  /** Commit order across instances; signals to one URL are delivered in this order. */
  seq: number
  url: string
  handoff_id: string
  version: number
  /** The signal as sent, verbatim: its Content-Digest and signature cover these bytes. */
  body: string
  status: 'pending' | 'delivered' | 'dead'
  attempts: number
  created_at: number
  next_at: number
  leased_until: number
  lease_owner: string | null
  last_outcome: string | null
  done_at: number | null
  /** The principal whose stored bytes this signal is charged to until it settles (migration 018). */
  charged_to?: string | null
  /** The W3C traceparent of the move the signal tells of, sent as the signal's traceparent (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

/** Stored bytes of one principal over its resources and home files (migration 008). */
export interface UsageCounterRow {
  principal: string
  stored_bytes: number
}

/** A hop the hub witnessed (migration 010): the offer verbatim and its lifecycle. */
export interface HopRow {
  /** The handoff digest of the offer (seed 003). */
  digest: string
  iss: string
  hop: string
  aud: string
  dialog: string
  task: string | null
  prev: string | null
  /** The signed offer exactly as received. */
  element: string
  /** JSON list of the carried chain's elements, oldest first, verbatim. */
  chain: string
  /** JSON list of each ref with the outcome the hub reported. */
  refs: string
  state: string
  /**
   * The delegate's outcome, `completed` or `failed`, once reported (migration 013); beside a
   * `canceled` state it is the outcome that arrived after the cancel.
   */
  outcome: string | null
  version: number
  /** The hub's receipt for the offer. */
  receipt: string
  /** JSON list of flags (equivocation, upstream-canceled, canceled-after-end, outcome-after-cancel). */
  flags: string
  /** NumericDate seconds, as signed. */
  iat: number
  exp: number
  created_at: number
  updated_at: number
  /** The W3C traceparent of the request that offered the hop, handed to its delegate (migration 021); null when none was carried. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

/** A signed status the hub accepted for a hop (migration 010). */
export interface HopStatusRow {
  digest: string
  /** The handoff digest of the offer it answers. */
  offer: string
  iss: string
  state: string
  reason: string | null
  element: string
  receipt: string
  /** The hop inbox sequence of its delivery: the order statuses were accepted in. */
  sequence: number
  created_at: number
}

/** One delivery to a hop inbox (migration 010). */
export interface HopDeliveryRow {
  sequence: number
  recipient: string
  /** offer, status, equivocation or upstream-canceled. */
  kind: string
  offer: string
  element: string
  receipt: string
  created_at: number
  /** The W3C traceparent of the request that caused it (migration 014), handed to the reader. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

/** One (iss, hop) of the hub-backed replay store (migration 010). */
export interface HopReplayRow {
  iss: string
  hop: string
  digest: string
  expires_at: number
  data: string | null
}

export interface ComputeJobRow {
  id: string
  owner: string
  idempotency_key: string
  request_hash: string
  language: string
  program: string
  input: string
  output_resource_id: string | null
  output_expected_version: number | null
  output_version: number | null
  state: string
  version: number
  output: string | null
  error_code: string | null
  error_message: string | null
  steps: number | null
  attempts: number
  runtime_id: string | null
  lease_id: string | null
  lease_until: number | null
  created_at: number
  updated_at: number
  finished_at: number | null
  /** The W3C traceparent of the submitting request (migration 016), handed to the runtime. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

export interface ComputeRuntimeRow {
  id: string
  principal: string
  languages: string
  started_at: number
  expires_at: number
}

export interface ComputeActiveRow {
  principal: string
  active: number
}

/** An A2A task the hub relays (migration 011): the sender owns it, the agent answers it. */
export interface A2aTaskRow {
  id: string
  context_id: string
  owner: string
  agent: string
  state: string
  /** dev-1.1 `generation`: 1 at creation, +1 per event; every write compares and sets it. */
  generation: number
  /** The current TaskStatus as wire JSON. */
  status: string
  created_at: number
  updated_at: number
  /** UTF-8 bytes of the task's event bodies (migration 012; 0 for what was stored before it). */
  stored_bytes: number
  /**
   * The digest of the hop the task's first message carried, whose budget the task's end closes
   * (migration 025; null when it carried none, or was stored before).
   */
  hop: string | null
}

/** One change of an A2A task, append-only; `generation` is its per-task sequence. */
export interface A2aEventRow {
  task_id: string
  generation: number
  kind: string
  author: string
  body: string
  at: number
  /** The artifact an artifact event carries (migration 012); null for other kinds. */
  artifact_id: string | null
  /** The W3C traceparent of the request that wrote the event (migration 016), handed on. */
  trace: string | null
  /** The W3C tracestate that came with `trace` (migration 021). */
  trace_state: string | null
}

/** The first answer to a principal's `messageId`, so a repeat answers the same. */
export interface A2aSendRow {
  principal: string
  message_id: string
  request_hash: string
  task_id: string
  /** '' (the whole views older releases kept here became references in migration 019). */
  answer: string
  /** The task's generation the first answer showed (migration 012): the answer by reference. */
  generation: number
  created_at: number
}

/** A push notification config of an A2A task, owned by the principal that set it. */
export interface A2aPushConfigRow {
  task_id: string
  id: string
  owner: string
  url: string
  token: string | null
  created_at: number
}

/**
 * One send's push notifications waiting to be fanned out to the task's configs after its commit
 * (migration 012): its events `(after_generation, through_generation]`, and the bytes charged to
 * its author's stored-bytes quota when it was queued.
 */
export interface A2aPushQueueRow {
  task_id: string
  after_generation: number
  through_generation: number
  author: string
  /** What rows queued before migration 018 charged their author; 0 since. */
  charged: number
  /**
   * What it charged each config owner, as JSON `{ principal: bytes }` (migration 018): only
   * these owners' configs are notified. Null on rows queued before, which charged `author`.
   */
  charges: string | null
  created_at: number
}

/**
 * One artifact of an A2A task as its events fold it (migration 017): `head` is the artifact's
 * members but `parts` as JSON, `parts` the text of its parts array without the brackets.
 */
export interface A2aArtifactRow {
  task_id: string
  artifact_id: string
  /** The generation of its first event: where it stands among the task's artifacts. */
  seq: number
  /** The generation of the newest event folded into it. */
  generation: number
  head: string
  parts: string
}

/** How many push configs a principal holds over all tasks (migration 012), for its cap. */
export interface A2aPushUsageRow {
  owner: string
  configs: number
}

/** One hop's budget ledger (migration 024); money in integer micro-units of `unit`. */
export interface BudgetRow {
  /** The handoff digest of the hop whose offer carries the budget. */
  hop: string
  /** The hop it was reserved from; null for a root budget. */
  parent: string | null
  root: string
  /** JSON list of the hops above it, the root first. */
  ancestors: string
  depth: number
  iss: string
  aud: string
  unit: string
  granted_micros: number
  /** Reserved by open sub-delegations and not yet spent there. */
  reserved_micros: number
  held_micros: number
  /** Spent here and in every descendant. */
  spent_micros: number
  /** What went back to the parent at close (granted - spent then). */
  released_micros: number
  rate_micros: number | null
  /** `open` or `closed`. */
  state: string
  closed_reason: string | null
  children: number
  /** On a root budget: how many budgets its tree holds, itself included (migration 025). */
  tree_size: number
  holds: number
  entries: number
  crossings: number
  /** JSON list of the principals the delegate named to report spend. */
  reporters: string
  /** The transfer a verified ref of the offer names, if any. */
  transfer: string | null
  expires_at: number
  created_at: number
  updated_at: number
  closed_at: number | null
}

/** A report on a budget: charged (1) or refused as a crossing (0). */
export interface BudgetEntryRow {
  hop: string
  /** `spend`, `reserve` or `settle`. */
  kind: string
  key: string
  amount_micros: number
  charged: number
  /** What remained when a refused report would have crossed it. */
  remaining_micros: number | null
  reporter: string
  note: string | null
  hold_id: string | null
  /** The hub receipt of the crossing's delivery to the delegator. */
  receipt: string | null
  created_at: number
}

/** An amount held before a call; settled, or released at expiry or close. */
export interface BudgetHoldRow {
  id: string
  hop: string
  holder: string
  idempotency_key: string
  amount_micros: number
  /** `held`, `settled` or `released`. */
  state: string
  settled_micros: number | null
  expires_at: number
  created_at: number
  settled_at: number | null
}

export interface BudgetHolderRow {
  principal: string
  open_holds: number
}

export interface Schema {
  budgets: BudgetRow
  budget_entries: BudgetEntryRow
  budget_holds: BudgetHoldRow
  budget_holders: BudgetHolderRow
  a2a_tasks: A2aTaskRow
  a2a_events: A2aEventRow
  a2a_sends: A2aSendRow
  a2a_push_configs: A2aPushConfigRow
  a2a_push_queue: A2aPushQueueRow
  a2a_push_usage: A2aPushUsageRow
  a2a_artifacts: A2aArtifactRow
  hops: HopRow
  hop_statuses: HopStatusRow
  hop_deliveries: HopDeliveryRow
  hop_replay: HopReplayRow
  compute_jobs: ComputeJobRow
  compute_runtimes: ComputeRuntimeRow
  compute_active: ComputeActiveRow
  notify_outbox: NotifyOutboxRow
  dashboard_signouts: DashboardSignoutRow
  resources: ResourceRow
  resource_versions: ResourceVersionRow
  grants: GrantRow
  handoffs: HandoffRow
  handoff_moves: HandoffMoveRow
  quota_counters: QuotaCounterRow
  idempotency_keys: IdempotencyRow
  principals: PrincipalRow
  signature_nonces: SignatureNonceRow
  hub_keys: HubKeyRow
  messages: MessageRow
  counters: CounterRow
  home_files: HomeFileRow
  transfers: TransferRow
  transfer_snapshots: TransferSnapshotRow
  transfer_events: TransferEventRow
  transfer_usage: TransferUsageRow
  transfer_token_uses: TransferTokenUseRow
  transfer_token_keys: TransferTokenKeyRow
  usage_counters: UsageCounterRow
}
