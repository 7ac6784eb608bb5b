import type { ErrorCode } from '@baton/protocol'

/**
 * The callers of the authorization matrix: unsigned, bearing another handoff's token, signed by
 * a principal in each admission state and relation to the fixtures, and the operator.
 */
export const CALLERS = [
  'anonymous',
  'otherToken',
  'pending',
  'rejected',
  'suspended',
  'owner',
  'granteeRead',
  'granteeUpdate',
  'expired',
  'revoked',
  'outsider',
  'runtime',
  'operator',
] as const
export type Caller = (typeof CALLERS)[number]

/** The admitted signed callers: each gets past a `signature` operation's admission. */
export const AGENT_ROLES = [
  'owner',
  'granteeRead',
  'granteeUpdate',
  'expired',
  'revoked',
  'outsider',
  'runtime',
] as const

/** Every caller that signs its requests. */
export const SIGNED_CALLERS = ['pending', 'rejected', 'suspended', ...AGENT_ROLES] as const

/** A cell: the operation's success (`ok`, its own status) or the code of its refusal. */
export type Expect = 'ok' | ErrorCode

/** The ids and tokens of the fixtures each store's hub is seeded with. */
export interface Fixture {
  /** The owner's principal, a message recipient and a principal the operator reads. */
  principal: string
  /** A pending principal the operator decides on. */
  decided: string
  /** The owner's resource, granted to `granteeRead` (read), `granteeUpdate` (update), `expired`. */
  resource: string
  /** The owner's grant to `revoked`, revoked. */
  revokedGrant: string
  /** A message from the outsider to the owner. */
  message: string
  handoff: string
  handoffOwnerToken: string
  /** The owner token of another handoff. */
  otherHandoffToken: string
  /** The owner's transfer, provisioned and claimed by `runtime`. */
  transfer: string
  /** The owner's staged transfer for the operator to terminate. */
  terminable: string
  tier: { tier: string; budgetMicros: number; rateMicrosPerSecond: number }
  /** Live tokens for the transfer, for moves its state refuses. */
  provisionToken: string
  activateToken: string
  /** A signed offer (JWS) from the owner to `granteeRead`, delivered by the hub. */
  hopOffer: string
  /** Its handoff digest. */
  hopDigest: string
  /** The principal of its delegate, `granteeRead`. */
  hopDelegate: string
  /** The delegate's signed `accepted` status for it, witnessed by the hub. */
  hopStatus: string
  /** A hold its delegate reserved on the hop's budget (the offer carries one). */
  budgetHold: string
  /** An A2A task from the owner to the runtime, open. */
  a2aTask: string
  /** An A2A task from the owner to the runtime, canceled, with the owner's push config `matrix-hook`. */
  a2aEnded: string
}

/**
 * One operation's row: the request every caller sends, the cells of the callers who get past
 * its auth (`others` for the rest of them), and the id in its path that callers who may not see
 * it must be unable to tell from a missing one.
 */
export interface Case {
  request(f: Fixture, caller: Caller): { path: string; body?: unknown }
  expect: Partial<Record<Caller | 'others', Expect>>
  hides?: (f: Fixture) => string
  /**
   * How a composite tool reaches an operation that is no tool of its own, with the arguments
   * that make the same request; `null` for one only reached inside another operation's tool.
   */
  tool?: ((f: Fixture, caller: Caller) => ToolCall) | null
  /** Callers whose refusal is recorded on purpose (an event in the log), so it is not unchanged. */
  records?: Caller[]
}

/** A tool call: the tool's name and its arguments. */
export interface ToolCall {
  name: string
  args: Record<string, unknown>
}

/** The handoff token a caller holds: the handoff's own for the owner, another's for the rest. */
export const handoffToken = (f: Fixture, caller: Caller) =>
  caller === 'owner' ? f.handoffOwnerToken : f.otherHandoffToken

/** Refusals that say "no such item"; each must answer a hidden item exactly like a missing one. */
export const HIDDEN_CODES: ErrorCode[] = [
  'handoff_not_found',
  'resource_forbidden',
  'grant_not_found',
  'message_not_found',
  'transfer_not_found',
  'hop_not_found',
  'budget_not_found',
  'a2a_task_not_found',
  'a2a_push_config_not_found',
]

/** An id of the same shape as `id` that names nothing: its last letter or digit changed. */
export function missingLike(id: string): string {
  const i = id.search(/[0-9A-Za-z][^0-9A-Za-z]*$/)
  const c = id[i]!
  const next = /[0-9]/.test(c) ? String((Number(c) + 1) % 10) : c === 'a' ? 'b' : 'a'
  return id.slice(0, i) + next + id.slice(i + 1)
}

const get = (path: string) => () => ({ path })
const NEW_SUBJECT = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'
const resourceReaders = { owner: 'ok', granteeRead: 'ok', others: 'resource_forbidden' } as const
const transferSeers = { owner: 'ok', runtime: 'ok', others: 'transfer_not_found' } as const
/** An A2A task's parties: its sender (owner) and its agent (runtime); others see nothing. */
const a2aParties = (party: Expect) =>
  ({ owner: party, runtime: party, others: 'a2a_task_not_found' }) as const
/** The runtime's own writes: it gets to the move; the owner is refused; others see nothing. */
const runtimeWrite = (runtime: Expect) =>
  ({ runtime, owner: 'transfer_forbidden', others: 'transfer_not_found' }) as const

/**
 * Every operation of the registry, keyed by name; a test fails when one is missing, so a new
 * operation cannot skip the matrix. Writes that would change a fixture are sent so that they stop
 * just past authorization (a stale version or revision, a state that refuses the move).
 */
export const CASES: Record<string, Case> = {
  createHandoff: {
    request: () => ({ path: '/services/v1/handoff', body: { payload: { from: 'matrix' } } }),
    expect: {},
  },
  readHandoff: {
    request: (f) => ({ path: `/services/v1/handoff/${f.handoff}` }),
    expect: {},
    hides: (f) => f.handoff,
    tool: (f, caller) => ({
      name: 'read_agent_handoff',
      args: { handoff_id: f.handoff, token: handoffToken(f, caller) },
    }),
  },
  advanceHandoff: {
    // The handoff is `offered`; a move stated from `working` commits nothing.
    request: (f) => ({
      path: `/services/v1/handoff/${f.handoff}/done`,
      body: { from: 'working' },
    }),
    expect: { owner: 'state_conflict' },
    hides: (f) => f.handoff,
  },
  waitHandoff: {
    request: (f) => ({ path: `/services/v1/handoff/${f.handoff}/wait/0` }),
    expect: {},
    hides: (f) => f.handoff,
    tool: (f, caller) => ({
      name: 'read_agent_handoff',
      args: { handoff_id: f.handoff, token: handoffToken(f, caller), wait_seconds: 0 },
    }),
  },
  health: { request: get('/healthz'), expect: {} },
  ready: { request: get('/readyz'), expect: {} },
  discovery: { request: get('/.well-known/agent-net'), expect: {} },
  me: { request: get('/v1/me'), expect: { pending: 'ok', rejected: 'ok', suspended: 'ok' } },
  // Each caller labels only itself, so every admitted agent may, and a pending key too (the
  // operator deciding on it sees its name); a rejected or suspended one may not.
  setMyLabel: {
    request: (_f, caller) => ({ path: '/v1/me/label', body: { label: `matrix ${caller}` } }),
    expect: { pending: 'ok' },
  },
  readLabels: {
    request: (f) => ({ path: `/v1/labels?principals=${encodeURIComponent(f.principal)}` }),
    expect: {},
  },
  listPrincipals: { request: get('/admin/v1/principals?limit=10'), expect: {} },
  readPrincipal: {
    request: (f) => ({ path: `/admin/v1/principals/${encodeURIComponent(f.principal)}` }),
    expect: {},
  },
  decidePrincipal: {
    request: (f) => ({
      path: `/admin/v1/principals/${encodeURIComponent(f.decided)}/approve`,
    }),
    expect: {},
  },
  labelPrincipal: {
    request: (f) => ({
      path: `/admin/v1/principals/${encodeURIComponent(f.principal)}/label`,
      body: { label: 'owner' },
    }),
    expect: {},
  },
  snapshotState: {
    request: (_f, caller) => ({
      path: '/v1/transfers',
      body: {
        snapshot: {
          systemPrompt: `The session of ${caller}`,
          messages: [],
          toolState: {},
          mcpConfig: { servers: [] },
        },
      },
    }),
    expect: {},
  },
  listTransfers: { request: get('/v1/transfers?role=runtime'), expect: {} },
  claimNextTransfer: {
    // The only provisioned transfer is claimed already: nobody gets one, everybody may ask.
    request: (f) => ({ path: '/v1/transfers/claim', body: { tier: f.tier.tier } }),
    expect: {},
  },
  getStatus: {
    request: (f) => ({ path: `/v1/transfers/${f.transfer}` }),
    expect: transferSeers,
    hides: (f) => f.transfer,
    tool: (f) => ({ name: 'get_status', args: { transferId: f.transfer } }),
  },
  waitTransfer: {
    request: (f) => ({ path: `/v1/transfers/${f.transfer}/wait?seconds=0` }),
    expect: transferSeers,
    hides: (f) => f.transfer,
    tool: (f) => ({ name: 'get_status', args: { transferId: f.transfer, wait_seconds: 0 } }),
  },
  readSnapshot: {
    request: (f) => ({ path: `/v1/transfers/${f.transfer}/snapshot` }),
    expect: transferSeers,
    hides: (f) => f.transfer,
    // push_state reads the snapshot on its way to the push; its cells are pushState's.
    tool: null,
  },
  provisionRuntime: {
    // The token is the authority (seed 004): whoever holds it reaches the state, which refuses.
    request: (f) => ({
      path: `/v1/transfers/${f.transfer}/provision`,
      body: { ...f.tier, token: f.provisionToken },
    }),
    expect: { others: 'transfer_state_conflict' },
    tool: (f) => ({
      name: 'provision_runtime',
      args: { transferId: f.transfer, ...f.tier, token: f.provisionToken },
    }),
  },
  claimTransfer: {
    // The runtime's repeat is answered; the owner learns another holds it; others see nothing.
    request: (f) => ({ path: `/v1/transfers/${f.transfer}/claim` }),
    expect: { runtime: 'ok', owner: 'transfer_claimed', others: 'transfer_not_found' },
    hides: (f) => f.transfer,
    tool: (f) => ({ name: 'claim_transfer', args: { transferId: f.transfer } }),
  },
  pushState: {
    request: (f) => ({ path: `/v1/transfers/${f.transfer}/push`, body: { checksum: 'sha-256:x' } }),
    expect: runtimeWrite('checksum_mismatch'),
    hides: (f) => f.transfer,
    // The transfer's event log keeps the runtime's refused push, with both checksums.
    records: ['runtime'],
    tool: (f) => ({ name: 'push_state', args: { transferId: f.transfer, checksum: 'sha-256:x' } }),
  },
  activate: {
    request: (f) => ({
      path: `/v1/transfers/${f.transfer}/activate`,
      body: { token: f.activateToken },
    }),
    expect: { others: 'transfer_state_conflict' },
    tool: (f) => ({ name: 'activate', args: { transferId: f.transfer, token: f.activateToken } }),
  },
  leaseTransfer: {
    request: (f) => ({
      path: `/v1/transfers/${f.transfer}/lease`,
      body: { instance: 'matrix-instance-1' },
    }),
    expect: runtimeWrite('transfer_state_conflict'),
    hides: (f) => f.transfer,
    tool: (f) => ({
      name: 'lease_transfer',
      args: { transferId: f.transfer, instance: 'matrix-instance-1' },
    }),
  },
  reportUsage: {
    request: (f) => ({
      path: `/v1/transfers/${f.transfer}/usage`,
      body: { idempotencyKey: 'matrix-usage-1', amountMicros: 0 },
    }),
    expect: runtimeWrite('transfer_state_conflict'),
    hides: (f) => f.transfer,
    tool: (f) => ({
      name: 'report_usage',
      args: { transferId: f.transfer, idempotencyKey: 'matrix-usage-1', amountMicros: 0 },
    }),
  },
  adminGetTransfer: { request: (f) => ({ path: `/admin/v1/transfers/${f.transfer}` }), expect: {} },
  mintTransferToken: {
    request: (f) => ({
      path: `/admin/v1/transfers/${f.transfer}/tokens`,
      body: { scope: 'activate' },
    }),
    expect: {},
  },
  terminateTransfer: {
    request: (f) => ({ path: `/admin/v1/transfers/${f.terminable}/terminate`, body: {} }),
    expect: {},
  },
  createResource: {
    request: (_f, caller) => ({
      path: '/v1/resources',
      body: { namespace: `own-${caller}`, kind: 'k', data: {} },
    }),
    expect: {},
  },
  listResources: { request: get('/v1/resources?namespace=matrix'), expect: {} },
  readResource: {
    request: (f) => ({ path: `/v1/resources/${f.resource}` }),
    expect: resourceReaders,
    hides: (f) => f.resource,
  },
  updateResource: {
    // A stale expectedVersion: only those allowed to update reach the version check.
    request: (f) => ({
      path: `/v1/resources/${f.resource}`,
      body: { expectedVersion: 99, data: { x: 1 } },
    }),
    expect: {
      owner: 'version_conflict',
      granteeUpdate: 'version_conflict',
      others: 'resource_forbidden',
    },
    hides: (f) => f.resource,
  },
  resourceHistory: {
    request: (f) => ({ path: `/v1/resources/${f.resource}/history` }),
    expect: resourceReaders,
    hides: (f) => f.resource,
  },
  createGrant: {
    request: (f) => ({
      path: '/v1/capabilities',
      body: {
        resourceId: f.resource,
        subject: NEW_SUBJECT,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: '2026-11-30T18:00:00.000Z',
      },
    }),
    // A read grantee sees the resource but may not pass on what it holds without delegation.
    expect: { owner: 'ok', granteeRead: 'grant_forbidden', others: 'resource_forbidden' },
  },
  listGrants: { request: get('/v1/capabilities'), expect: {} },
  revokeGrant: {
    // The revoked grant: its issuer may repeat the revocation; its subject sees it but may not
    // revoke; anyone else does not see it at all.
    request: (f) => ({ path: `/v1/capabilities/${f.revokedGrant}` }),
    expect: { owner: 'ok', revoked: 'grant_forbidden', others: 'grant_not_found' },
    hides: (f) => f.revokedGrant,
  },
  sendMessage: {
    request: (f, caller) => ({
      path: '/v1/messages',
      body: { recipient: f.principal, body: { hello: caller }, idempotencyKey: `matrix-${caller}` },
    }),
    expect: {},
  },
  listMessages: {
    request: get('/v1/messages?after=0&limit=20'),
    expect: {},
    tool: () => ({ name: 'list_messages', args: { after: 0, limit: 20 } }),
  },
  ackMessage: {
    // Only the recipient may acknowledge; to anyone else the message is unknown.
    request: (f) => ({ path: `/v1/messages/${f.message}/ack` }),
    expect: { owner: 'ok', others: 'message_not_found' },
    hides: (f) => f.message,
  },
  writeHomeFile: {
    request: (_f, caller) => ({
      path: '/v1/home/file',
      body: { path: `matrix/${caller}-put.json`, expectedRevision: 0, content: '{}' },
    }),
    expect: {},
  },
  readHomeFile: {
    // The owner's checkpoint path: every other caller reads its own, empty, home.
    request: get('/v1/home/file?path=matrix%2Fowner.json'),
    expect: { owner: 'ok', others: 'home_file_not_found' },
    tool: () => ({ name: 'read_home_file', args: { path: 'matrix/owner.json' } }),
  },
  listHomeFiles: {
    request: get('/v1/home/files?prefix=matrix'),
    expect: {},
    tool: () => ({ name: 'list_home_files', args: { prefix: 'matrix' } }),
  },
  deleteHomeFile: {
    request: get('/v1/home/file?path=matrix%2Fowner.json&expectedRevision=7'),
    expect: { owner: 'revision_conflict', others: 'home_file_not_found' },
    tool: () => ({
      name: 'delete_home_file',
      args: { path: 'matrix/owner.json', expectedRevision: 7 },
    }),
  },
  // Seed 003 hops, on a real hop from the owner to granteeRead that granteeRead accepted: only
  // the offer's iss may post it (again: a retransmission), only the status's iss may post that,
  // and a third party reads and answers nothing it could tell from a missing hop.
  offerHandoff: {
    request: (f) => ({
      path: '/v1/hops',
      body: { to: f.hopDelegate, handoff: { offer: f.hopOffer } },
    }),
    expect: { owner: 'ok', others: 'hop_refused' },
  },
  answerHandoff: {
    request: (f) => ({ path: '/v1/hops/statuses', body: { status: f.hopStatus } }),
    expect: { granteeRead: 'ok', owner: 'hop_refused', others: 'hop_not_found' },
  },
  listHopInbox: { request: get('/v1/hops/inbox'), expect: {} },
  readHop: {
    request: (f) => ({ path: `/v1/hops/${f.hopDigest}` }),
    expect: { owner: 'ok', granteeRead: 'ok', others: 'hop_not_found' },
    hides: (f) => f.hopDigest,
  },
  readHopChain: {
    request: (f) => ({ path: `/v1/hops/${f.hopDigest}/chain` }),
    expect: { owner: 'ok', granteeRead: 'ok', others: 'hop_not_found' },
    hides: (f) => f.hopDigest,
  },
  // Issue 28 budgets, on the hop's budget: its delegator and delegate read it, only the delegate
  // reports and names reporters (the delegator is refused for its role), and a third party is
  // answered exactly as for a hop with no budget. A repeat of a report with its key is answered.
  readBudget: {
    request: (f) => ({ path: `/v1/budgets/${f.hopDigest}` }),
    expect: { owner: 'ok', granteeRead: 'ok', others: 'budget_not_found' },
    hides: (f) => f.hopDigest,
  },
  reportSpend: {
    request: (f, caller) => ({
      path: `/v1/budgets/${f.hopDigest}/spend`,
      body: { idempotencyKey: `matrix-${caller}`, amountMicros: 1 },
    }),
    expect: { granteeRead: 'ok', owner: 'budget_forbidden', others: 'budget_not_found' },
    hides: (f) => f.hopDigest,
  },
  reserveBudget: {
    request: (f, caller) => ({
      path: `/v1/budgets/${f.hopDigest}/holds`,
      body: { idempotencyKey: `matrix-hold-${caller}`, amountMicros: 1 },
    }),
    expect: { granteeRead: 'ok', owner: 'budget_forbidden', others: 'budget_not_found' },
    hides: (f) => f.hopDigest,
  },
  settleBudget: {
    request: (f) => ({
      path: `/v1/budgets/${f.hopDigest}/holds/${f.budgetHold}/settle`,
      body: { amountMicros: 1 },
    }),
    expect: { granteeRead: 'ok', owner: 'budget_forbidden', others: 'budget_not_found' },
    hides: (f) => f.hopDigest,
  },
  nameBudgetReporters: {
    request: (f) => ({ path: `/v1/budgets/${f.hopDigest}/reporters`, body: { reporters: [] } }),
    expect: { granteeRead: 'ok', owner: 'budget_forbidden', others: 'budget_not_found' },
    hides: (f) => f.hopDigest,
  },
  // Compute (seed 000 json-expr-v1): the matrix hub runs no compute runtime and admits no remote
  // one, so a submit finds no worker and runtime calls are refused; jobs.test covers the rest.
  submitComputeJob: {
    request: (_f, caller) => ({
      path: '/v1/compute/jobs',
      body: {
        language: 'json-expr-v1',
        program: { '+': [1, 2] },
        idempotencyKey: `matrix-${caller}`,
      },
    }),
    expect: { others: 'compute_unavailable' },
  },
  listComputeJobs: { request: get('/v1/compute/jobs'), expect: {} },
  readComputeJob: {
    request: get('/v1/compute/jobs/cj_missing'),
    expect: { others: 'compute_job_not_found' },
  },
  waitComputeJob: {
    request: get('/v1/compute/jobs/cj_missing/wait/0'),
    expect: { others: 'compute_job_not_found' },
  },
  cancelComputeJob: {
    request: () => ({ path: '/v1/compute/jobs/cj_missing/cancel' }),
    expect: { others: 'compute_job_not_found' },
  },
  computeRuntimeHeartbeat: {
    request: (_f, caller) => ({
      path: '/v1/compute/runtimes',
      body: { runtimeId: `matrix-${caller}`, languages: ['json-expr-v1'] },
    }),
    expect: { others: 'compute_runtime_forbidden' },
  },
  stopComputeRuntime: {
    // Stopping names only the caller's own runtime rows, so it is a harmless no-op for anyone.
    request: (_f, caller) => ({ path: `/v1/compute/runtimes/matrix-${caller}` }),
    expect: {},
  },
  claimComputeJob: {
    request: (_f, caller) => ({ path: `/v1/compute/runtimes/matrix-${caller}/claim` }),
    expect: { others: 'compute_runtime_forbidden' },
  },
  renewComputeLease: {
    request: () => ({ path: '/v1/compute/jobs/cj_missing/lease', body: { leaseId: 'lease' } }),
    expect: { others: 'compute_runtime_forbidden' },
  },
  completeComputeJob: {
    request: () => ({
      path: '/v1/compute/jobs/cj_missing/result',
      body: { leaseId: 'lease', ok: true, output: 3 },
    }),
    expect: { others: 'compute_runtime_forbidden' },
  },
  // A2A (issue 16): a task's sender and agent see it; to anyone else it is not there.
  a2aAgentCard: { request: get('/.well-known/agent-card.json'), expect: {} },
  a2aSendMessage: {
    // A message to the ended task: its parties get as far as its state, others not at all.
    request: (f, caller) => ({
      path: '/v1/a2a/messages',
      body: {
        message: {
          messageId: `matrix-${caller}`,
          role: caller === 'runtime' ? 'ROLE_AGENT' : 'ROLE_USER',
          parts: [{ text: 'more' }],
          taskId: f.a2aEnded,
        },
        configuration: { returnImmediately: true },
      },
    }),
    expect: a2aParties('a2a_task_ended'),
    hides: (f) => f.a2aEnded,
  },
  a2aGetTask: {
    request: (f) => ({ path: `/v1/a2a/tasks/${f.a2aTask}` }),
    expect: a2aParties('ok'),
    hides: (f) => f.a2aTask,
  },
  a2aListTasks: { request: get('/v1/a2a/tasks?pageSize=10'), expect: {} },
  a2aCancelTask: {
    request: (f) => ({ path: `/v1/a2a/tasks/${f.a2aEnded}/cancel`, body: {} }),
    expect: a2aParties('a2a_task_not_cancelable'),
    hides: (f) => f.a2aEnded,
  },
  a2aSetPushConfig: {
    // The caller's own config of a fixed id: the parties reach the rule that an ended task,
    // which sends nothing more, takes no config; others see no task.
    request: (f, caller) => ({
      path: `/v1/a2a/tasks/${f.a2aEnded}/push-configs`,
      body: { id: `matrix-${caller}`, url: 'https://93.184.215.14/matrix' },
    }),
    expect: a2aParties('a2a_task_ended'),
    hides: (f) => f.a2aEnded,
  },
  a2aGetPushConfig: {
    request: (f) => ({ path: `/v1/a2a/tasks/${f.a2aEnded}/push-configs/matrix-hook` }),
    // The owner's config is, to the agent of the same task, a config that is not there.
    expect: { owner: 'ok', runtime: 'a2a_push_config_not_found', others: 'a2a_task_not_found' },
    hides: () => 'matrix-hook',
  },
  a2aListPushConfigs: {
    request: (f) => ({ path: `/v1/a2a/tasks/${f.a2aEnded}/push-configs` }),
    expect: a2aParties('ok'),
    hides: (f) => f.a2aEnded,
  },
  a2aDeletePushConfig: {
    request: (f) => ({ path: `/v1/a2a/tasks/${f.a2aEnded}/push-configs/matrix-none` }),
    expect: a2aParties('a2a_push_config_not_found'),
  },
  // The hub's guides: anyone may read them.
  listGuides: { request: get('/guides'), expect: {} },
  searchGuides: { request: get('/guides/search?q=handoff'), expect: {} },
  readGuide: { request: get('/guides/security'), expect: {} },
  // The operator's reads, which the dashboard shows: the admin token only.
  operatorOverview: { request: get('/admin/v1/dashboard/overview'), expect: {} },
  operatorListHandoffs: { request: get('/admin/v1/dashboard/handoffs?state=open'), expect: {} },
  operatorReadHandoff: {
    request: (f) => ({ path: `/admin/v1/dashboard/handoffs/${f.handoff}` }),
    expect: {},
  },
  operatorReadHandoffPayload: {
    request: (f) => ({ path: `/admin/v1/dashboard/handoffs/${f.handoff}/payload` }),
    expect: {},
  },
  operatorNotifyQueue: { request: get('/admin/v1/dashboard/notify'), expect: {} },
  operatorListTransfers: { request: get('/admin/v1/dashboard/transfers'), expect: {} },
  operatorReadTransfer: {
    request: (f) => ({ path: `/admin/v1/dashboard/transfers/${f.transfer}` }),
    expect: {},
  },
  operatorReadTransferSnapshot: {
    request: (f) => ({ path: `/admin/v1/dashboard/transfers/${f.transfer}/snapshot` }),
    expect: {},
  },
  operatorListResources: { request: get('/admin/v1/dashboard/resources'), expect: {} },
  operatorReadResource: {
    request: (f) => ({ path: `/admin/v1/dashboard/resources/${f.resource}` }),
    expect: {},
  },
  operatorListGrants: { request: get('/admin/v1/dashboard/grants?status=live'), expect: {} },
  operatorListMessages: {
    request: (f) => ({
      path: `/admin/v1/dashboard/messages?principal=${encodeURIComponent(f.principal)}`,
    }),
    expect: {},
  },
  operatorReadMessageBody: {
    request: (f) => ({ path: `/admin/v1/dashboard/messages/${f.message}/body` }),
    expect: {},
  },
  operatorListHops: { request: get('/admin/v1/dashboard/hops'), expect: {} },
  operatorListBudgets: {
    request: (f) => ({ path: `/admin/v1/dashboard/budgets?hop=${f.hopDigest}` }),
    expect: {},
  },
  operatorReadHopChain: {
    request: (f) => ({ path: `/admin/v1/dashboard/hops/${f.hopDigest}` }),
    expect: {},
  },
  operatorComputeOverview: { request: get('/admin/v1/dashboard/compute'), expect: {} },
  operatorListA2aTasks: { request: get('/admin/v1/dashboard/a2a'), expect: {} },
  operatorReadA2aTask: {
    request: (f) => ({ path: `/admin/v1/dashboard/a2a/${f.a2aTask}` }),
    expect: {},
  },
}
