import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hopSigner, type SignedClient, signedFetch } from '@baton/client'
import { signOffer, signStatus } from '@baton/context'
import { ERRORS, type ErrorCode } from '@baton/protocol'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ManualClock } from '../src/clock.js'
import { operationErrors } from '../src/ops/auth.js'
import type { Operation } from '../src/ops/operation.js'
import { COMPOSITE_TOOLS, OPERATIONS } from '../src/ops/registry.js'
import {
  AGENT_ROLES,
  CALLERS,
  CASES,
  type Caller,
  type Expect,
  type Fixture,
  HIDDEN_CODES,
  handoffToken,
  missingLike,
  SIGNED_CALLERS,
} from './matrix-cases.js'
import { signedAgent, startTestHub, type TestHub, testStores, toolAnswer } from './support.js'

// Every operation of the registry against every kind of caller, on both stores. What a cell
// answers follows from the operation's `auth` for the callers it refuses before the service
// sees them, and from the operation's row of CASES for those who get through.

const ADMIN = 'matrix-operator-token-0123456789abcdef'

/** What `caller` must be answered for `op`: `ok` (its success status) or an error code. */
function expected(op: Operation, caller: Caller): Expect {
  const row = CASES[op.name]!.expect
  switch (op.auth) {
    case 'none':
      return row[caller] ?? row.others ?? 'ok'
    case 'handoff-token':
      // The owner holds the handoff's own token; a signature is no token at all.
      if (caller === 'owner') return row.owner ?? 'ok'
      if (caller === 'otherToken' || caller === 'operator') return 'handoff_not_found'
      return 'token_missing'
    case 'signature':
      if (caller === 'anonymous' || caller === 'otherToken' || caller === 'operator') {
        return 'signature_missing'
      }
      if (caller === 'pending') return row.pending ?? 'admission_pending'
      if (caller === 'rejected') return row.rejected ?? 'admission_rejected'
      if (caller === 'suspended') return row.suspended ?? 'principal_suspended'
      return row[caller] ?? row.others ?? 'ok'
    case 'operator':
      return caller === 'operator' ? (row.operator ?? 'ok') : 'admin_token_invalid'
  }
}

interface Answer {
  status: number
  body: Record<string, unknown>
}

/** The answer as a cell reads it: `ok`, or the code of a refusal (`?` when it has none). */
function outcome(op: Operation, a: Answer): string {
  if (a.status === (op.status ?? 200)) return 'ok'
  return typeof a.body.code === 'string' ? a.body.code : `? ${a.status}`
}

/**
 * The callers of an operation's MCP tool at /mcp: every admitted signer; for a token handoff, the
 * holder of the handoff's token and of another's (the token is an argument); unsigned too for an
 * operation that needs no auth. Pending, rejected and suspended signers are refused the session.
 */
function toolCallers(op: Operation): Caller[] {
  if (op.tool === false && !CASES[op.name]?.tool) return []
  switch (op.auth) {
    case 'none':
      return ['anonymous', ...AGENT_ROLES]
    case 'handoff-token':
      return ['owner', 'otherToken']
    case 'signature':
      return [...AGENT_ROLES]
    case 'operator':
      return []
  }
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

test('the matrix has a row for every operation of the registry and for nothing else', () => {
  const names = OPERATIONS.map((op) => op.name).sort()
  assert.deepEqual(Object.keys(CASES).sort(), names)
})

test('every operation a composite tool reaches is called through a tool in the matrix', () => {
  for (const c of COMPOSITE_TOOLS) {
    for (const op of c.ops) {
      if (op.tool !== false) continue
      assert.notEqual(CASES[op.name]!.tool, undefined, `${op.name} (reached by ${c.name})`)
    }
  }
})

for (const store of testStores) {
  describe(`authorization matrix (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    const agents = {} as Record<(typeof SIGNED_CALLERS)[number] | 'decided', SignedClient>
    const f = {} as Fixture
    const mcp = {} as Record<'anonymous' | (typeof AGENT_ROLES)[number], Client>
    let unsignedTools: Set<string>

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
        >(
          op.method,
          path,
          raw ? raw.text : (body as object),
          raw ? { 'content-type': raw.type } : {},
        )
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

    before(async () => {
      hub = await startTestHub(
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
        await agents.granteeRead.call<{ holdId: string }>(
          'POST',
          `/v1/budgets/${f.hopDigest}/holds`,
          { idempotencyKey: 'matrix-hold', amountMicros: 1 },
        )
      ).holdId

      const now = () => Math.floor(clock.now() / 1000)
      mcp.anonymous = await mcpClient()
      for (const who of AGENT_ROLES) {
        mcp[who] = await mcpClient(signedFetch(agents[who].identity, { now }))
      }
      unsignedTools = new Set((await mcp.anonymous.listTools()).tools.map((t) => t.name))
    })
    after(async () => {
      for (const client of Object.values(mcp)) await client.close()
      await hub.close()
    })

    for (const op of OPERATIONS) {
      test(`${op.method} ${op.path} (${op.name})`, async () => {
        const row = CASES[op.name]
        assert.ok(row, `${op.name} has no row in the matrix`)
        const want = Object.fromEntries(CALLERS.map((c) => [c, expected(op, c)]))
        const seen: Record<string, string> = {}
        const check = async (caller: Caller) => {
          const { path, body } = row.request(f, caller)
          const a = await send(op, caller, path, body)
          seen[caller] = outcome(op, a)
          if (seen[caller] !== want[caller]) return
          if (want[caller] === 'ok') return
          const code = want[caller] as ErrorCode
          assert.equal(a.status, ERRORS[code].status, `${caller}: the status of ${code}`)
          assert.ok(operationErrors(op).includes(code), `${op.name} does not declare ${code}`)
          const id = row.hides?.(f)
          if (!id || !HIDDEN_CODES.includes(code)) return
          // A caller who may not see the item is answered exactly as for an id that is not there.
          const missing = missingLike(id)
          const b = await send(op, caller, path.replace(id, missing), body)
          const strip = (x: Answer) =>
            JSON.stringify(x).replaceAll(id, '<id>').replaceAll(missing, '<id>')
          assert.equal(strip(a), strip(b), `${caller} tells ${op.name}'s item from a missing one`)
        }
        // The same cells through the operation's MCP tool, which must answer each caller alike.
        const viaTool: Record<string, string> = {}
        const checkTool = async (caller: Caller) => {
          const { path, body } = row.request(f, caller)
          const a = await callTool(op, caller, path, body)
          viaTool[caller] = a.outcome
          const id = row.hides?.(f)
          if (!id || !HIDDEN_CODES.includes(a.outcome as ErrorCode)) return
          const missing = missingLike(id)
          const b = await callTool(op, caller, path, body, { id, missing })
          const strip = (t: string) => t.replaceAll(id, '<id>').replaceAll(missing, '<id>')
          assert.equal(strip(a.text), strip(b.text), `${caller} tells the item from a missing one`)
        }
        const recorded = (c: Caller) => row.records?.includes(c) ?? false
        const isRefused = (c: Caller) => want[c] !== 'ok' && !recorded(c)
        const tools = toolCallers(op)
        const writes = op.method !== 'GET'
        const stateBefore = writes ? await readState() : undefined
        await Promise.all(CALLERS.filter(isRefused).map(check))
        await Promise.all(tools.filter(isRefused).map(checkTool))
        if (writes) assert.deepEqual(await readState(), stateBefore, 'a refusal changed state')
        await Promise.all(CALLERS.filter((c) => !isRefused(c)).map(check))
        await Promise.all(tools.filter((c) => !isRefused(c)).map(checkTool))
        assert.deepEqual(seen, want)
        assert.deepEqual(viaTool, Object.fromEntries(tools.map((c) => [c, want[c]])), 'over MCP')
        const toolName = op.tool ? op.tool.name : row.tool?.(f, 'owner').name
        if (toolName && op.auth === 'signature') {
          assert.equal(unsignedTools.has(toolName), false, 'offered to an unsigned session')
        }
      })
    }

    // A write that takes no body still parses one it is sent: its answer must be declared too.
    test('a body an operation cannot read is refused with a code the operation declares', async () => {
      const bodies = [
        { type: 'application/json', text: '{', code: 'invalid_json' },
        { type: 'text/plain', text: 'not json', code: 'unsupported_media_type' },
      ] as const
      for (const op of OPERATIONS) {
        if (op.method === 'GET') continue
        const caller: Caller = op.auth === 'operator' ? 'operator' : 'owner'
        const { path } = CASES[op.name]!.request(f, caller)
        for (const raw of bodies) {
          const a = await send(op, caller, path, undefined, raw)
          assert.equal(a.body.code, raw.code, `${op.name}: ${raw.type}`)
          assert.equal(a.status, ERRORS[raw.code].status, `${op.name}: ${raw.type}`)
          assert.ok(
            operationErrors(op).includes(raw.code),
            `${op.name} does not declare ${raw.code}`,
          )
        }
      }
    })

    test('pending, rejected and suspended signers are refused an MCP session, as under /v1', async () => {
      const now = () => Math.floor(clock.now() / 1000)
      for (const [who, code] of [
        ['pending', 'admission_pending'],
        ['rejected', 'admission_rejected'],
        ['suspended', 'principal_suspended'],
      ] as const) {
        const res = await signedFetch(agents[who].identity, { now })(`${hub.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
        assert.equal(res.status, ERRORS[code].status, who)
        assert.equal(((await res.json()) as { code: string }).code, code, who)
      }
    })

    test('listings show the resource only to its owner and its live read grantee', async () => {
      for (const who of AGENT_ROLES) {
        const list = await agents[who].call<{ resources: { id: string }[] }>(
          'GET',
          '/v1/resources?namespace=matrix',
        )
        const listed = list.resources.some((r) => r.id === f.resource)
        assert.equal(listed, who === 'owner' || who === 'granteeRead', who)
      }
    })
  })
}
