import assert from 'node:assert/strict'
import { hopSigner, type SignedClient, signedFetch } from '@baton/client'
import { signOffer, signStatus } from '@baton/context'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { ManualClock } from '../src/clock.js'
import type { Operation } from '../src/ops/operation.js'
import {
  AGENT_ROLES,
  CASES,
  type Caller,
  type Fixture,
  handoffToken,
  SIGNED_CALLERS,
} from './matrix-cases.js'
import { signedAgent, startTestHub, type TestHub, type TestStore, toolAnswer } from './support.js'

// The authorization matrix's hub: a hub seeded with every fixture of matrix-cases, its signed
// callers in each admission state, MCP sessions, and how each kind of caller sends a cell. The
// matrix test asserts every cell's answer; the statement-plan test replays the cells to see
// every statement the hub prepares.

/** The operator's token on the matrix hub. */
export const ADMIN = 'matrix-operator-token-0123456789abcdef'

/** An answer as a cell reads it: its status and parsed body. */
export interface Answer {
  status: number
  body: Record<string, unknown>
}

/** A tool's arguments from a cell's HTTP request: path parameters, query and body in one. */
function toolArgs(op: Operation, path: string, body: unknown): Record<string, unknown> {
  const url = new URL(path, 'http://matrix')
  const parts = url.pathname.split('/')
  const args: Record<string, unknown> = {}
  op.path.split('/').forEach((name, i) => {
    if (name.startsWith(':')) args[name.slice(1)] = decodeURIComponent(parts[i]!)
  })
  for (const [k, v] of url.searchParams) args[k] = v
  if (body && typeof body === 'object') Object.assign(args, body)
  return args
}

/** A matrix hub and how its callers reach it. */
export interface MatrixHub {
  hub: TestHub
  agents: Record<(typeof SIGNED_CALLERS)[number] | 'decided', SignedClient>
  f: Fixture
  mcp: Record<'anonymous' | (typeof AGENT_ROLES)[number], Client>
  /** The tools an unsigned MCP session is offered. */
  unsignedTools: Set<string>
  /**
   * Sends one request as `caller`: signed, bearing a token, or bare; `raw` sends those bytes
   * with that content type instead of the JSON of `body`.
   */
  send(
    op: Operation,
    caller: Caller,
    path: string,
    body: unknown,
    raw?: { type: string; text: string },
  ): Promise<Answer>
  /** Calls an operation's tool as `caller`, answering `ok` or the refusal's code. */
  callTool(
    op: Operation,
    caller: Caller,
    path: string,
    body: unknown,
    swap?: { id: string; missing: string },
  ): Promise<{ outcome: string; text: string }>
  /** Everything a refused write could have touched, read back by those who may see it. */
  readState(): Promise<unknown>
  /** Closes the MCP sessions and stops the hub, keeping its database. */
  stop(): Promise<void>
  /** Stops as `stop` does, and drops the database. */
  close(): Promise<void>
}

/** Starts a matrix hub on `store`, its signatures dated by `clock`, and seeds its fixtures. */
export async function startMatrixHub(store: TestStore, clock: ManualClock): Promise<MatrixHub> {
  const hub = await startTestHub(
    store,
    {
      BATON_ADMISSION: 'approval',
      BATON_ADMIN_TOKEN: ADMIN,
      BATON_MESSAGE_POLL_MIN_INTERVAL_MS: '0',
      // Nothing expires or is reaped unless the injected clock says so.
      BATON_TRANSFER_REAP_INTERVAL_MS: String(3600_000),
    },
    { clock },
  )
  const agents = {} as Record<(typeof SIGNED_CALLERS)[number] | 'decided', SignedClient>
  const f = {} as Fixture
  const mcp = {} as Record<'anonymous' | (typeof AGENT_ROLES)[number], Client>

  const mcpClient = async (fetch?: ReturnType<typeof signedFetch>) => {
    const url = new URL(`${hub.url}/mcp`)
    const client = new Client({ name: 'matrix', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(url, fetch ? { fetch } : {}))
    return client
  }

  /** Calls an operation's tool as `caller`, answering `ok` or the refusal's code. */
  async function callTool(
    op: Operation,
    caller: Caller,
    path: string,
    body: unknown,
    swap?: { id: string; missing: string },
  ): Promise<{ outcome: string; text: string }> {
    const composite = CASES[op.name]!.tool?.(f, caller)
    const name = composite?.name ?? (op.tool as { name: string }).name
    let args = composite?.args ?? toolArgs(op, path, body)
    if (op.auth === 'handoff-token' && !composite) args.token = handoffToken(f, caller)
    if (swap) args = JSON.parse(JSON.stringify(args).replaceAll(swap.id, swap.missing))
    const client = op.auth === 'handoff-token' ? mcp.anonymous : mcp[caller as keyof typeof mcp]
    const result = await client.callTool({ name, arguments: args })
    const text = JSON.stringify(result.content)
    try {
      const answer = toolAnswer(result)
      return { outcome: answer.isError ? String(answer.body.code) : 'ok', text }
    } catch {
      return { outcome: `? ${text}`, text }
    }
  }

  /**
   * Sends one request as `caller`: signed, bearing a token, or bare; `raw` sends those bytes
   * with that content type instead of the JSON of `body`.
   */
  async function send(
    op: Operation,
    caller: Caller,
    path: string,
    body: unknown,
    raw?: { type: string; text: string },
  ): Promise<Answer> {
    const handoffOwner = op.auth === 'handoff-token' && caller === 'owner'
    if ((SIGNED_CALLERS as readonly string[]).includes(caller) && !handoffOwner) {
      const res = await agents[caller as (typeof SIGNED_CALLERS)[number]].request<
        Record<string, unknown>
      >(op.method, path, raw ? raw.text : (body as object), raw ? { 'content-type': raw.type } : {})
      return { status: res.status, body: res.body ?? {} }
    }
    const bearer = handoffOwner
      ? f.handoffOwnerToken
      : caller === 'otherToken'
        ? f.otherHandoffToken
        : caller === 'operator'
          ? ADMIN
          : undefined
    const headers: Record<string, string> = {}
    if (bearer) headers.authorization = `Bearer ${bearer}`
    if (raw) headers['content-type'] = raw.type
    else if (body !== undefined) headers['content-type'] = 'application/json'
    const text = raw ? raw.text : body === undefined ? undefined : JSON.stringify(body)
    const res = await fetch(hub.url + path, {
      method: op.method,
      headers,
      ...(text === undefined ? {} : { body: text }),
    })
    const answer = await res.text()
    return {
      status: res.status,
      body: answer ? (JSON.parse(answer) as Record<string, unknown>) : {},
    }
  }

  const admin = (path: string) =>
    fetch(hub.url + path, { headers: { authorization: `Bearer ${ADMIN}` } }).then(
      async (r) => ({ status: r.status, body: await r.json() }) as Answer,
    )

  /** Everything a refused write could have touched, read back by those who may see it. */
  async function readState(): Promise<unknown> {
    const { owner, runtime } = agents
    const reads = await Promise.all([
      owner.request('GET', `/v1/resources/${f.resource}`),
      owner.request('GET', `/v1/resources/${f.resource}/history`),
      owner.request('GET', '/v1/capabilities'),
      owner.request('GET', '/v1/home/files?prefix=matrix'),
      owner.request('GET', '/v1/home/file?path=matrix%2Fowner.json'),
      owner.request('GET', '/v1/messages?after=0&limit=100'),
      owner.request('GET', '/v1/transfers'),
      owner.request('GET', `/v1/a2a/tasks/${f.a2aTask}`),
      owner.request('GET', `/v1/a2a/tasks/${f.a2aEnded}`),
      runtime.request('GET', '/v1/transfers?role=runtime'),
      fetch(`${hub.url}/services/v1/handoff/${f.handoff}`, {
        headers: { authorization: `Bearer ${f.handoffOwnerToken}` },
      }).then(async (r) => ({ status: r.status, body: await r.json() })),
      admin(`/admin/v1/transfers/${f.transfer}`),
      admin(`/admin/v1/transfers/${f.terminable}`),
      admin('/admin/v1/principals?limit=500'),
    ])
    // What the refused principals would own, had a refused write gone through: read past HTTP,
    // which refuses them.
    const { home, resources, grants, transfers } = hub.ctx
    const theirs = await Promise.all(
      [agents.pending, agents.rejected, agents.suspended].map(async ({ principal }) => [
        await home.list(principal, {}),
        await resources.list(principal, {}),
        await grants.list(principal),
        await transfers.list(principal, {}),
      ]),
    )
    return [reads.map((r) => ({ status: r.status, body: r.body })), theirs]
  }

  const { identity } = hub.ctx
  for (const who of [...SIGNED_CALLERS, 'decided'] as const) {
    agents[who] = await signedAgent(hub, { clock })
    if (who === 'pending' || who === 'decided') continue
    const decision = who === 'suspended' ? 'suspend' : who === 'rejected' ? 'reject' : 'approve'
    await identity.decide(agents[who].principal, decision)
  }
  const { owner, outsider, runtime } = agents
  f.principal = owner.principal
  f.decided = agents.decided.principal
  f.resource = (
    await owner.call<{ id: string }>('POST', '/v1/resources', {
      namespace: 'matrix',
      kind: 'task',
      data: { v: 1 },
    })
  ).id
  const grant = async (to: SignedClient, actions: string[], expiresInMs: number) =>
    (
      await owner.call<{ id: string }>('POST', '/v1/capabilities', {
        resourceId: f.resource,
        subject: to.principal,
        actions,
        delegable: false,
        expiresAt: new Date(clock.now() + expiresInMs).toISOString(),
      })
    ).id
  const both = ['resource:read', 'resource:update']
  await grant(agents.granteeRead, ['resource:read'], 3 * 3600_000)
  await grant(agents.granteeUpdate, ['resource:update'], 3 * 3600_000)
  await grant(agents.expired, both, 60_000)
  f.revokedGrant = await grant(agents.revoked, both, 3 * 3600_000)
  await owner.call('DELETE', `/v1/capabilities/${f.revokedGrant}`)
  f.message = (
    await outsider.call<{ id: string }>('POST', '/v1/messages', {
      recipient: owner.principal,
      body: { note: 'for the owner' },
      idempotencyKey: 'matrix-seed',
    })
  ).id
  await owner.call('PUT', '/v1/home/file', {
    path: 'matrix/owner.json',
    expectedRevision: 0,
    content: '{"stage":"owner"}',
  })
  clock.advance(120_000)

  const handoff = async () => {
    const res = await fetch(`${hub.url}/services/v1/handoff`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload: { task: 'matrix' } }),
    })
    assert.equal(res.status, 201)
    return (await res.json()) as { handoff_id: string; owner_token: string }
  }
  const h = await handoff()
  f.handoff = h.handoff_id
  f.handoffOwnerToken = h.owner_token
  f.otherHandoffToken = (await handoff()).owner_token

  const mint = async (id: string, body: object) => {
    const res = await fetch(`${hub.url}/admin/v1/transfers/${id}/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    assert.equal(res.status, 201)
    return ((await res.json()) as { token: string }).token
  }
  const stage = async (note: string) =>
    (
      await owner.call<{ transferId: string }>('POST', '/v1/transfers', {
        snapshot: {
          systemPrompt: 'You are a careful agent.',
          messages: [{ role: 'user', content: note }],
          toolState: {},
          mcpConfig: { servers: [] },
        },
      })
    ).transferId
  // The transfer every cell acts on: provisioned and claimed by the runtime.
  f.transfer = await stage('matrix')
  f.tier = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 1000 }
  await owner.call('POST', `/v1/transfers/${f.transfer}/provision`, {
    ...f.tier,
    token: await mint(f.transfer, { scope: 'provision', ...f.tier }),
  })
  await runtime.call('POST', `/v1/transfers/${f.transfer}/claim`)
  // Live tokens for moves the transfer's state refuses: whoever holds one gets that far.
  f.provisionToken = await mint(f.transfer, { scope: 'provision', ...f.tier })
  f.activateToken = await mint(f.transfer, { scope: 'activate' })
  f.terminable = await stage('to terminate')
  const a2aTask = async (messageId: string) =>
    (
      await hub.ctx.a2a.send(owner.principal, {
        tenant: runtime.principal,
        message: { messageId, role: 'ROLE_USER', parts: [{ text: 'matrix' }] },
        configuration: { returnImmediately: true },
      })
    ).task.id
  f.a2aTask = await a2aTask('matrix-open')
  f.a2aEnded = await a2aTask('matrix-ended')
  await hub.ctx.a2a.setPushConfig(owner.principal, {
    taskId: f.a2aEnded,
    id: 'matrix-hook',
    url: 'https://93.184.215.14/matrix',
  })
  await hub.ctx.a2a.cancel(owner.principal, { id: f.a2aEnded })

  // A real hop: the owner's signed offer to granteeRead, which granteeRead accepted; it
  // carries a budget, on which granteeRead holds an amount.
  const hopNow = () => clock.now()
  const offer = signOffer({
    signer: await hopSigner(owner.identity),
    aud: agents.granteeRead.principal,
    dialog: 'ctx-matrix',
    ttlS: 300,
    now: hopNow,
    extensions: { budget: { unit: 'usd', amountMicros: 1_000_000 } },
  })
  f.hopOffer = offer.element as string
  f.hopDigest = offer.digest
  f.hopDelegate = agents.granteeRead.principal
  await owner.call('POST', '/v1/hops', { to: f.hopDelegate, handoff: { offer: f.hopOffer } })
  f.hopStatus = signStatus({
    signer: await hopSigner(agents.granteeRead.identity),
    offer: f.hopOffer,
    state: 'accepted',
    now: hopNow,
  }).element as string
  await agents.granteeRead.call('POST', '/v1/hops/statuses', { status: f.hopStatus })
  f.budgetHold = (
    await agents.granteeRead.call<{ holdId: string }>('POST', `/v1/budgets/${f.hopDigest}/holds`, {
      idempotencyKey: 'matrix-hold',
      amountMicros: 1,
    })
  ).holdId

  const now = () => Math.floor(clock.now() / 1000)
  mcp.anonymous = await mcpClient()
  for (const who of AGENT_ROLES) {
    mcp[who] = await mcpClient(signedFetch(agents[who].identity, { now }))
  }
  const unsignedTools = new Set((await mcp.anonymous.listTools()).tools.map((t) => t.name))
  const stop = async () => {
    for (const client of Object.values(mcp)) await client.close()
    await hub.stop()
  }
  return {
    hub,
    agents,
    f,
    mcp,
    unsignedTools,
    send,
    callTool,
    readState,
    stop,
    async close() {
      await stop()
      await hub.close()
    },
  }
}
