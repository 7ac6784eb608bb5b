/**
 * One registry of stable error codes. A code is never renamed or reused; its message may improve.
 * `docs/errors.md` lists every code, and a test keeps the two in step.
 */
export const ERRORS = {
  // request shape
  invalid_json: { status: 400, fix: 'Send a body that is valid JSON.' },
  invalid_request: {
    status: 400,
    fix: 'Correct the field named in `field` as the message says and send the request again.',
  },
  unknown_field: {
    status: 400,
    fix: 'Remove the field named in `field`; only documented fields are accepted.',
  },
  unsupported_media_type: {
    status: 415,
    fix: 'Send the body with `Content-Type: application/json`.',
  },
  body_too_large: { status: 413, fix: 'Send a smaller request body.' },
  body_too_many_elements: {
    status: 413,
    fix: 'Send fewer array items and object members in one body (at most `limit`, BATON_BODY_MAX_ELEMENTS); split the work or store large data as a resource in parts.',
  },
  uri_too_long: { status: 414, fix: 'Use a shorter path; ids and state names are short.' },
  not_found: { status: 404, fix: 'Check the method and path against /openapi.json.' },
  method_not_allowed: { status: 405, fix: 'Use a method this path supports (see /openapi.json).' },
  cursor_invalid: {
    status: 400,
    fix: 'Send a page cursor (next_cursor, nextPageToken) exactly as the hub answered it, or none for the first page; a cursor is opaque.',
  },
  json_key_forbidden: {
    status: 400,
    fix: 'Rename the "__proto__" member named in `field`; no JSON body may use that key.',
  },
  invalid_text: {
    status: 400,
    fix: 'Remove U+0000 (NUL) and unpaired surrogates from the value named in `field`; send text as UTF-8.',
  },
  host_not_allowed: {
    status: 403,
    fix: 'Reach the hub by its public URL (BATON_PUBLIC_URL) or the address it listens on, or add this host to BATON_ALLOWED_HOSTS.',
  },
  origin_not_allowed: {
    status: 403,
    fix: 'Call /mcp from a page of the hub itself or of an origin in BATON_ALLOWED_ORIGINS; clients outside a browser send no Origin.',
  },
  idempotency_conflict: {
    status: 409,
    fix: 'An Idempotency-Key or nonce was reused with a different request. Use a new key for a new request, or repeat the original request exactly.',
  },

  // token handoffs (seed 002)
  token_missing: {
    status: 401,
    fix: 'Send the owner or receiver token as `Authorization: Bearer <token>`.',
  },
  handoff_not_found: {
    status: 404,
    fix: 'Check the handoff id and the token; a handoff is also gone once cleanup removes it after expiry.',
  },
  handoff_expired: {
    status: 410,
    fix: 'The handoff passed its expiry and can no longer be read or moved. Create a new handoff.',
  },
  payload_too_large: {
    status: 413,
    fix: 'Keep the payload at most 16 KiB as JSON; store large work elsewhere and pass a reference.',
  },
  invalid_machine: {
    status: 400,
    fix: 'Declare distinct states (at most the limit), name only declared states in `final` and `transitions`, move only forward, and do not make the first state final.',
  },
  unknown_state: {
    status: 400,
    fix: "Use a state name from the handoff's machine (read the handoff to see `machine.states`).",
  },
  state_conflict: {
    status: 409,
    fix: 'Read the handoff, decide from the state it is really in, and send the next transition with that state as from. A nonce makes the same transition safe to repeat.',
  },
  transition_not_allowed: {
    status: 409,
    fix: "Move only to a state listed in `allowed_next` for the handoff's current state.",
  },
  invalid_notify_url: {
    status: 400,
    fix: 'Use an absolute http(s) URL whose host is a public host name or address.',
  },

  // identity and signed requests (seed 000; RFC 9421, RFC 9530)
  signature_missing: {
    status: 401,
    fix: 'Sign every /v1 request with HTTP Message Signatures (RFC 9421): send Signature-Input and Signature, e.g. with `baton request` or @baton/client.',
  },
  signature_malformed: {
    status: 401,
    fix: 'Send one signature whose Signature-Input covers "@method", "@target-uri" (and "content-digest" and "content-type" with a body) with created, nonce and keyid parameters and alg="ed25519" (under tag="web-bot-auth" also expires, "@authority" and any Signature-Agent); see /.well-known/agent-net.',
  },
  unknown_key: {
    status: 401,
    fix: 'Use your principal (a did:key for an Ed25519 public key) as the keyid parameter.',
  },
  key_not_enrolled: {
    status: 401,
    fix: 'A web-bot-auth keyid (a JWK thumbprint) names a key only once it is enrolled: sign one request with your did:key as keyid first, and have the operator admit it.',
  },
  signature_invalid: {
    status: 401,
    fix: 'Sign the exact request you send with the private key of the keyid; check that nothing (a proxy, a redirect) rewrites the method, URL or covered headers.',
  },
  digest_mismatch: {
    status: 401,
    fix: 'Send Content-Digest: sha-256=:<base64 of the SHA-256 of the exact body bytes>: (RFC 9530) and do not change the body after signing.',
  },
  signature_stale: {
    status: 401,
    fix: 'Set created to the current time (within the skew window in discovery) and fix the clock of the signing machine.',
  },
  signature_replayed: {
    status: 401,
    fix: 'Sign each request afresh with a new nonce; a signed request cannot be sent twice.',
  },
  admission_pending: {
    status: 403,
    fix: 'Your key is enrolled and waits for an operator to approve it; check GET /v1/me later.',
  },
  admission_rejected: {
    status: 403,
    fix: 'An operator rejected this key; ask the hub operator.',
  },
  principal_suspended: {
    status: 403,
    fix: 'An operator suspended this key; ask the hub operator.',
  },
  admin_disabled: {
    status: 403,
    fix: 'Start the hub with BATON_ADMIN_TOKEN set, or run `baton admin` with --data-dir or --database-url on the hub database.',
  },
  admin_token_invalid: {
    status: 401,
    fix: 'Send the operator token as `Authorization: Bearer <BATON_ADMIN_TOKEN>`.',
  },
  principal_not_found: {
    status: 404,
    fix: 'Check the principal (a did:key); a key is known only after its first signed request.',
  },
  identity_file_insecure: {
    status: 400,
    fix: 'Make the identity file readable by its owner only: chmod 600 <file>.',
  },
  identity_file_invalid: {
    status: 400,
    fix: 'Use an identity file written by `baton identity init`; its principal must match its keys.',
  },
  identity_file_exists: {
    status: 409,
    fix: 'Keep the existing identity (it is your key) or choose another --out path; identity files are never overwritten.',
  },

  // resources and grants (seed 000)
  resource_forbidden: {
    status: 403,
    fix: 'Use a resource you own or hold a live grant for; ask its owner for a grant. The answer is the same whether or not the id exists.',
  },
  version_conflict: {
    status: 409,
    fix: 'Read the resource, reconcile with its current version (`currentVersion`), and send the update with that as expectedVersion. Never overwrite blindly.',
  },
  resource_too_large: {
    status: 413,
    fix: 'Keep resource data within the limit in `limit` (bytes as JSON); store large content elsewhere and reference it.',
  },
  invalid_grant: {
    status: 400,
    fix: 'Grant a did:key other than yourself and the owner, with an expiresAt in the future and within the maximum lifetime.',
  },
  grant_forbidden: {
    status: 403,
    fix: 'Only the resource owner, or the holder of a live delegable grant covering the actions and the expiry, may grant; only the issuer or the owner may revoke.',
  },
  grant_not_found: {
    status: 404,
    fix: 'Check the grant id in GET /v1/capabilities; you see only grants you issued or hold, or grants on resources you own.',
  },

  // messages and home files (seed 000)
  recipient_unknown: {
    status: 404,
    fix: 'Send to the exact principal (a did:key) of an admitted agent, as its own signed GET /v1/me shows it.',
  },
  message_not_found: {
    status: 404,
    fix: 'Check the message id; only the recipient can acknowledge a message, and only its own inbox is visible.',
  },
  message_too_large: {
    status: 413,
    fix: 'Keep the message body within the limit in `limit` (bytes of canonical JSON); store large work in a resource or home file and send a reference.',
  },
  invalid_path: {
    status: 400,
    fix: 'Use 1-256 characters: segments of letters, digits, `.`, `_` and `-` separated by `/`, with no empty, `.` or `..` segment and no leading `/`.',
  },
  home_file_not_found: {
    status: 404,
    fix: 'No file at this path in your own home; write it with expectedRevision 0 to create it.',
  },
  revision_conflict: {
    status: 409,
    fix: 'Read the file at `currentRevision` (0: it does not exist), decide from its content, and write again with that revision; never overwrite blindly.',
  },
  home_file_too_large: {
    status: 413,
    fix: 'Keep the file content within the limit in `limit` (UTF-8 bytes); split it into several files.',
  },
  storage_quota_exceeded: {
    status: 413,
    fix: 'Delete or shrink what you no longer need (home files, resources) or ask the hub operator for a larger quota; GET /v1/me shows the usage.',
  },

  // session transfer (seed 004)
  transfer_not_found: {
    status: 404,
    fix: 'Check the transfer id; a transfer is visible only to its owner, its runtime and the operator.',
  },
  transfer_forbidden: {
    status: 403,
    fix: 'Only the runtime that claimed the transfer may push, lease and report usage for it; claim it first, with the identity allowed to run transfers.',
  },
  transfer_state_conflict: {
    status: 409,
    fix: 'Read the transfer (`state` is the real one) and send the move that follows from that state.',
  },
  transfer_expired: {
    status: 410,
    fix: 'The transfer stayed staged, provisioned or pushed past its time-to-live and was terminated. Snapshot again.',
  },
  transfer_claimed: {
    status: 409,
    fix: 'Another runtime holds this transfer; claim a different one.',
  },
  transfer_lease_held: {
    status: 409,
    fix: 'Another process of this runtime is running the transfer; do not start it again. Retry after `leaseEndsAt` only if that process died.',
  },
  snapshot_invalid: {
    status: 400,
    fix: 'Send a snapshot with systemPrompt, messages, toolState and mcpConfig as documented; `field` names the problem, and every credRef must be vault://<path>[#field] or env://<NAME>.',
  },
  snapshot_contains_secret: {
    status: 400,
    fix: 'Replace the value at `path` with a credential reference such as { "credRef": "vault://kv/app#token" } or { "credRef": "env://API_KEY" }; snapshots never carry raw secrets.',
  },
  snapshot_too_large: {
    status: 413,
    fix: 'Keep the snapshot within `limit` bytes (BATON_SNAPSHOT_MAX_BYTES); move large tool state to storage and reference it.',
  },
  checksum_mismatch: {
    status: 422,
    fix: 'The snapshot the runtime computed differs from the one staged; fetch the snapshot again and recompute SHA-256 over its RFC 8785 canonical JSON. The refusal is in the event log.',
  },
  tier_unknown: {
    status: 400,
    fix: 'Use a tier the hub configures (BATON_TRANSFER_TIERS); `tiers` lists them.',
  },
  tier_limit_exceeded: {
    status: 400,
    fix: 'Keep budgetMicros and rateMicrosPerSecond within the tier limits named in `limit`.',
  },
  transfer_token_malformed: {
    status: 401,
    fix: 'Send the token exactly as minted: v1.<kid>.<payload>.<mac>, by `baton transfer token` or POST /admin/v1/transfers/{id}/tokens.',
  },
  transfer_token_unknown_key: {
    status: 401,
    fix: 'The token was signed with a key id this hub does not hold (rotated out?); mint a new token.',
  },
  transfer_token_bad_signature: {
    status: 401,
    fix: 'The token was altered or signed with another secret; mint a new token from the orchestrator.',
  },
  transfer_token_expired: {
    status: 401,
    fix: 'Transfer tokens live 5 minutes by default; mint a new token and use it promptly.',
  },
  transfer_token_wrong_transfer: {
    status: 403,
    fix: 'The token was minted for another transfer; mint one for this transfer id.',
  },
  transfer_token_wrong_scope: {
    status: 403,
    fix: 'Use a provision token to provision and an activate token to activate.',
  },
  transfer_token_params_mismatch: {
    status: 403,
    fix: 'Send exactly the tier, budgetMicros and rateMicrosPerSecond the token authorizes (`field` names the difference), or mint a token for the new values.',
  },
  transfer_token_replayed: {
    status: 409,
    fix: 'A transfer token is single-use and this one was already consumed; read the transfer to see the move it made, or mint a new token.',
  },

  // bounded compute: the json-expr-v1 language (seed 000; docs/compute.md)
  compute_invalid_program: {
    status: 400,
    fix: 'Write the program in json-expr-v1 (docs/compute.md): every one-key object names a v1 operator with the arity it takes; `path` points at the part refused.',
  },
  compute_invalid_input: {
    status: 400,
    fix: 'Send an input that is JSON: null, booleans, finite numbers, strings, arrays and plain objects.',
  },
  compute_program_too_large: {
    status: 413,
    fix: 'Keep the program within `limit` bytes of JSON; move data out of the program into the input.',
  },
  compute_input_too_large: {
    status: 413,
    fix: 'Keep the input within `limit` bytes of JSON; pass a smaller document or split the work.',
  },
  compute_depth_exceeded: {
    status: 422,
    fix: 'Keep the nesting of the program, the input and every value it builds within `limit` levels (`where` says which went deeper).',
  },
  compute_steps_exceeded: {
    status: 422,
    fix: 'The program took more than `limit` evaluation steps; give it a smaller input or fewer nested map, filter and reduce.',
  },
  compute_output_too_large: {
    status: 422,
    fix: 'Make the program answer at most `limit` bytes of JSON; select the fields you need instead of the whole input.',
  },
  compute_string_too_long: {
    status: 422,
    fix: 'An operator built a string longer than `limit` UTF-16 code units; concatenate less.',
  },
  compute_array_too_long: {
    status: 422,
    fix: 'An operator built an array longer than `limit` elements; merge or map over less.',
  },
  compute_timeout: {
    status: 422,
    fix: 'The evaluation ran past its wall-time limit (`limitMs`) and was stopped; make the program do less work.',
  },
  compute_memory_exceeded: {
    status: 422,
    fix: 'The evaluation used more memory than its worker may (`limitMb` MiB) and was stopped; build smaller values.',
  },
  compute_busy: {
    status: 503,
    fix: 'Every compute worker is busy and the queue is full; retry after the seconds in Retry-After.',
  },
  // compute jobs and runtimes (seed 000: check runtimeAvailability before submitting compute)
  compute_unavailable: {
    status: 503,
    fix: 'No live runtime serves this language now; read `runtimeAvailability` in discovery (/.well-known/agent-net) and submit once the language is in `available`, or start `baton runtime --compute <language>`.',
  },
  compute_language_unsupported: {
    status: 400,
    fix: 'The hub does not accept this language; use one listed in `supported` (runtimeAvailability.supported in discovery).',
  },
  compute_job_not_found: {
    status: 404,
    fix: 'Check the job id; a job is visible only to the principal that submitted it.',
  },
  compute_lease_lost: {
    status: 409,
    fix: 'This runtime no longer holds the job (its lease ran out and it was claimed again, or it ended); drop the result and claim new work.',
  },
  compute_runtime_lost: {
    status: 503,
    fix: 'Every runtime that claimed the job stopped before finishing it; submit the job again with a new idempotencyKey.',
  },
  compute_runtime_not_live: {
    status: 409,
    fix: 'Send a heartbeat for this runtimeId (POST /v1/compute/runtimes) before claiming, and again before it expires.',
  },
  compute_runtime_forbidden: {
    status: 403,
    fix: 'This principal may not serve compute; ask the operator to list it in BATON_COMPUTE_RUNTIMES (remote runtimes are off by default).',
  },

  // signed handoff contexts witnessed by the hub (seed 003)
  hop_refused: {
    status: 422,
    fix: 'The offer or status failed the check named in `check`; `reason` is the draft reason code (bad-signature, untrusted-key, wrong-audience, stale, replay, equivocation, broken-chain, cycle, too-deep, unverifiable-ref, ref-mismatch, policy), or malformed for a well-signed element whose members are not well-formed (a hop id of 5 characters). Sign a new element that passes it.',
  },
  hop_not_found: {
    status: 404,
    fix: 'Check the handoff digest; only the delegator and the delegate of a hop can see it.',
  },
  hop_state_conflict: {
    status: 409,
    fix: 'The hop is already in `state` (its delegate outcome in `outcome`), which this status cannot follow (at most one of accepted and rejected, and one of completed and failed); read the hop and send nothing more for it.',
  },

  // budgets on delegations (issue 28; docs/budgets.md)
  budget_invalid: {
    status: 422,
    fix: "The offer's budget member is not { unit, amountMicros, rateMicrosPerSecond?, exp? } as documented, or its exp is later than the offer's (`field` names which); sign a new offer with a well-formed budget.",
  },
  budget_not_found: {
    status: 404,
    fix: 'Check the handoff digest: only a hop whose offer carries a budget has one, and only its delegator, its delegate and the reporters the delegate named can see it.',
  },
  budget_forbidden: {
    status: 403,
    fix: 'Only the delegate (or a reporter it named) reports spend and reserves on a budget, only the delegate names reporters, and a hold is settled by whoever reserved it or the delegate.',
  },
  budget_insufficient: {
    status: 409,
    fix: 'The sub-offer asks for more than its parent budget has left (`remainingMicros` of `parent`); nothing was reserved. Offer a smaller budget, or wait for a sibling to end and release its reservation.',
  },
  budget_exceeded: {
    status: 409,
    fix: 'The report would cross the budget (`remainingMicros` is what is left); nothing was charged and the crossing was recorded and delivered to the delegator. Stop the work, or ask the delegator for a new budget.',
  },
  budget_unit_mismatch: {
    status: 409,
    fix: "A sub-offer's budget counts the unit of its parent's (`unit`); sign the sub-offer with that unit.",
  },
  budget_closed: {
    status: 409,
    fix: 'The budget closed when its hop (or an ancestor, `upstream`) ended, as `reason` says, and released what was unspent to its parent; nothing more is charged to it.',
  },
  budget_expired: {
    status: 410,
    fix: 'The budget passed its expiry (`expiresAt`) and released what was unspent; ask the delegator for a new offer with a budget.',
  },
  budget_hold_not_found: {
    status: 404,
    fix: 'Check the hold id as the reserve answered it, and the hop it was reserved on.',
  },
  budget_limit_reached: {
    status: 409,
    fix: 'A cap on what one budget or principal holds is reached (`scope` says which, `limit` how many): settle or release open holds, let sub-delegations end, or ask the operator for a larger limit.',
  },

  // A2A tasks relayed by the hub (issue 16)
  a2a_task_not_found: {
    status: 404,
    fix: 'Check the task id; only the sender that created a task and the agent it is addressed to can see it.',
  },
  a2a_task_not_cancelable: {
    status: 409,
    fix: 'The task already ended in `state`; read it for its outcome and send nothing more for it.',
  },
  a2a_task_ended: {
    status: 409,
    fix: 'The task ended in `state` and takes no more messages; send a new message without taskId to start a new task.',
  },
  a2a_role_mismatch: {
    status: 409,
    fix: 'On a task its owner sends ROLE_USER messages and cancels, and its agent sends ROLE_AGENT messages and sets its state and artifacts (under the relay metadata); send as your role on this task (`role` says which).',
  },
  a2a_context_mismatch: {
    status: 409,
    fix: 'A message continuing a task carries the task’s contextId (`contextId`) or none; leave it out or send the task’s.',
  },
  a2a_generation_mismatch: {
    status: 409,
    fix: 'The task changed since you read it: `currentGeneration` is its generation now. Read the task again and decide whether to send with ifGenerationMatch set to it.',
  },
  a2a_push_config_not_found: {
    status: 404,
    fix: 'Check the task id and the config id; a push config is visible only to the principal that set it.',
  },
  a2a_push_auth_unsupported: {
    status: 400,
    fix: 'Leave authentication out of the push config: the hub signs every notification with the key discovery publishes (RFC 9421) and sends the config token in X-A2A-Notification-Token; check those at the webhook.',
  },
  a2a_version_not_supported: {
    status: 400,
    fix: 'Send `A2A-Version: 1.0` with every JSON-RPC request (the official SDKs do); a request without it is read as A2A 0.3, which the hub does not serve. `supportedVersions` lists what it serves.',
  },
  a2a_method_not_found: {
    status: 404,
    fix: 'Use a method the agent card lists (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask and the push notification config methods).',
  },
  a2a_message_too_large: {
    status: 413,
    fix: 'Keep the message and its metadata (artifacts included) within the limit in `limit` (bytes of JSON); store large work in a resource or home file and send a reference.',
  },
  a2a_task_push_configs_exceeded: {
    status: 409,
    fix: 'The task already has the most push configs the hub keeps (`limit`); delete one you no longer need, or replace one by sending its id again.',
  },
  a2a_push_configs_exceeded: {
    status: 409,
    fix: 'You already hold the most push configs the hub keeps per principal over all tasks (`limit`); delete configs of tasks you no longer follow.',
  },
  a2a_push_hosts_exceeded: {
    status: 409,
    fix: 'Your push configs already name the most distinct hosts the hub pushes to per principal (`limit`); point this config at a host you already use, or delete configs of another host.',
  },
  a2a_task_artifacts_exceeded: {
    status: 409,
    fix: 'The task already has the most artifacts the hub keeps (`limit`); append to or replace an artifact it has, or start a new task.',
  },
  a2a_task_events_exceeded: {
    status: 409,
    fix: 'The task has reached the most events the hub keeps for one task (`limit`); nothing was written. End it and continue in a new task.',
  },
  a2a_task_too_large: {
    status: 413,
    fix: 'The task would pass the bytes the hub keeps for one task (`limit`; `used` is what it holds); nothing was written. Send references to large work instead, or continue in a new task.',
  },

  // dashboard
  dashboard_signin_required: {
    status: 401,
    fix: 'Sign in to the dashboard at / with the operator token; sessions end after 8 hours or at sign-out.',
  },
  csrf_token_invalid: {
    status: 403,
    fix: 'Send the X-CSRF-Token header with the token from GET /dashboard/api/session; reload the page if the session changed.',
  },

  // limits
  rate_limited: { status: 429, fix: 'Wait for the number of seconds in Retry-After, then retry.' },

  // server
  shutting_down: { status: 503, fix: 'The hub is restarting; retry in a moment.' },
  unavailable: { status: 503, fix: 'The hub cannot reach its database; retry in a moment.' },
  hub_unreachable: {
    status: 502,
    fix: 'Check the hub URL (--hub or BATON_HUB) and that the hub is running and reachable from here; the message says what the connection met.',
  },
  hub_key_secret_required: {
    status: 500,
    fix: 'Set BATON_HUB_KEY_SECRET (32+ characters, the same on every instance) to start the hub on PostgreSQL: it seals the hub keys kept in the database.',
  },
  internal: {
    status: 500,
    fix: 'Retry the request; if it keeps failing, report it to the hub operator.',
  },
} as const satisfies Record<string, { status: number; fix: string }>

/** A stable machine-readable error code. */
export type ErrorCode = keyof typeof ERRORS

/** The JSON body of every error answer: `{ error, code, fix, ...context }`. */
export interface ErrorBody {
  error: string
  code: ErrorCode
  fix?: string
  [key: string]: unknown
}

/** Tells whether a string is a registered error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERRORS, code)
}

/**
 * The one error type of Baton: a stable `code`, a human message, and context a caller may need
 * (for example `state`, `version` and `ended` on a handoff conflict).
 *
 * @example throw new BatonError('handoff_expired', 'Handoff h_1 expired at 2026-11-30T00:00:00Z')
 */
export class BatonError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly context: Record<string, unknown>
  readonly headers: Record<string, string>

  constructor(
    code: ErrorCode,
    message: string,
    context: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'BatonError'
    this.code = code
    this.status = ERRORS[code].status
    this.headers = { ...headers }
    // One shape for every wait-and-retry answer: `Retry-After` and `retry_after` always together.
    const retryAfter = context.retry_after ?? headers['retry-after']
    if (retryAfter !== undefined && (this.status === 429 || this.status === 503)) {
      this.context = { ...context, retry_after: Number(retryAfter) }
      this.headers['retry-after'] = String(retryAfter)
    } else {
      this.context = context
    }
  }

  /** Renders the wire body; `fix` comes from the registry unless the context overrides it. */
  toBody(): ErrorBody {
    return { error: this.message, code: this.code, fix: ERRORS[this.code].fix, ...this.context }
  }

  /** Rebuilds an error from a wire body, for clients; unknown codes become `internal`. */
  static fromBody(body: unknown, status?: number): BatonError {
    if (body && typeof body === 'object' && 'code' in body && isErrorCode(body.code)) {
      const { error, code, fix: _fix, ...context } = body as ErrorBody
      return new BatonError(code, typeof error === 'string' ? error : code, context)
    }
    return new BatonError('internal', `Unexpected answer${status ? ` (HTTP ${status})` : ''}`)
  }
}
