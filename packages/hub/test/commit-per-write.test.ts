import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { canonicalJson, HopClient, hopSigner, type SignedClient, signedFetch } from '@baton/client'
import { signOffer } from '@baton/context'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { sql } from 'kysely'
import { ManualClock } from '../src/clock.js'
import { countStatements } from '../src/store/transaction.js'
import { call, signedAgent, startTestHub, type TestHub, testStores } from './support.js'

type Body = Record<string, unknown>

const ADMIN = 'operator-token-for-the-commit-tests-0123456789'
const PROGRAM = { '+': [{ var: 'a' }, { var: 'b' }] }
const TIER = { tier: 'standard', budgetMicros: 1_000_000, rateMicrosPerSecond: 10 }

// Every signed operation that writes hands its request's pending admission (nonce, quota
// charge) to the first write it queues: each commits exactly once. One that forgot to pass it
// on would commit its write, and then the admission alone, twice.
for (const store of testStores) {
  describe(`every signed write commits once, its admission with it (${store.name})`, () => {
    let hub: TestHub
    let alice: SignedClient
    let bob: SignedClient
    let runtime: SignedClient
    before(async () => {
      hub = await startTestHub(store, {
        BATON_ADMISSION: 'open',
        BATON_ADMIN_TOKEN: ADMIN,
        BATON_COMPUTE_EMBEDDED: 'false',
        BATON_COMPUTE_RUNTIMES: '*',
      })
      alice = await signedAgent(hub)
      bob = await signedAgent(hub)
      runtime = await signedAgent(hub)
    })
    after(() => hub.close())

    /** Sends one signed request on an otherwise idle hub; answers its body and its commits. */
    async function once(
      who: SignedClient,
      method: string,
      path: string,
      status: number,
      body?: unknown,
    ): Promise<Body> {
      await hub.ctx.batcher.flush()
      const counts = countStatements(hub.ctx.database)
      const before = counts.commits
      const res = await who.request<Body>(method, path, body as object)
      await hub.ctx.batcher.flush()
      assert.equal(res.status, status, `${method} ${path}: ${JSON.stringify(res.body)}`)
      assert.equal(counts.commits - before, 1, `${method} ${path} commits once`)
      return res.body ?? {}
    }

    test('resources and grants', async () => {
      const resource = await once(alice, 'POST', '/v1/resources', 201, {
        namespace: 'n',
        kind: 'commits',
        data: { v: 1 },
      })
      await once(alice, 'PATCH', `/v1/resources/${resource.id}`, 200, {
        expectedVersion: 1,
        data: { v: 2 },
      })
      const grant = await once(alice, 'POST', '/v1/capabilities', 201, {
        resourceId: resource.id,
        subject: bob.principal,
        actions: ['resource:read'],
        delegable: false,
        expiresAt: new Date(Date.now() + 3600_000).toISOString(),
      })
      await once(alice, 'DELETE', `/v1/capabilities/${grant.id}`, 200)
    })

    test('messages and home files', async () => {
      const sent = await once(alice, 'POST', '/v1/messages', 201, {
        recipient: bob.principal,
        body: { task: 'commits' },
        idempotencyKey: 'commits-1',
      })
      await once(bob, 'POST', `/v1/messages/${sent.id}/ack`, 200)
      await once(alice, 'PUT', '/v1/home/file', 200, {
        path: 'commits/a.json',
        content: '{}',
        expectedRevision: 0,
      })
      await once(alice, 'DELETE', '/v1/home/file?path=commits%2Fa.json&expectedRevision=1', 200)
    })

    test('a session transfer, step by step', async () => {
      const staged = await once(alice, 'POST', '/v1/transfers', 201, {
        snapshot: {
          systemPrompt: 'You hand work on.',
          messages: [{ role: 'user', content: 'commits' }],
          toolState: {},
          mcpConfig: { servers: [] },
        },
      })
      const id = staged.transferId as string
      const mint = async (body: Body) => {
        const res = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
          body,
          token: ADMIN,
        })
        assert.equal(res.status, 201, JSON.stringify(res.body))
        return res.body.token as string
      }
      const provisionToken = await mint({ scope: 'provision', ...TIER })
      await once(alice, 'POST', `/v1/transfers/${id}/provision`, 200, {
        ...TIER,
        token: provisionToken,
      })
      await once(runtime, 'POST', `/v1/transfers/${id}/claim`, 200)
      const snapshot = await runtime.request<Body>('GET', `/v1/transfers/${id}/snapshot`)
      const canonical = canonicalJson(snapshot.body!.snapshot)
      const checksum = `sha-256:${createHash('sha256').update(canonical).digest('base64url')}`
      await once(runtime, 'POST', `/v1/transfers/${id}/push`, 200, { checksum })
      const activateToken = await mint({ scope: 'activate' })
      await once(alice, 'POST', `/v1/transfers/${id}/activate`, 200, { token: activateToken })
      await once(runtime, 'POST', `/v1/transfers/${id}/lease`, 200, { instance: 'commits-1' })
      await once(runtime, 'POST', `/v1/transfers/${id}/usage`, 200, {
        idempotencyKey: 'commits-usage-1',
        amountMicros: 5,
      })
    })

    test('a compute job, from heartbeat to result', async () => {
      const heartbeat = { runtimeId: 'commits-rt-0001', languages: ['json-expr-v1'] }
      await once(runtime, 'POST', '/v1/compute/runtimes', 200, heartbeat)
      const job = await once(alice, 'POST', '/v1/compute/jobs', 201, {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 1, b: 2 },
        idempotencyKey: 'commits-job-1',
      })
      const claimed = await once(runtime, 'POST', '/v1/compute/runtimes/commits-rt-0001/claim', 200)
      const lease = (claimed.job as Body).leaseId
      assert.equal((claimed.job as Body).jobId, job.jobId)
      await once(runtime, 'POST', `/v1/compute/jobs/${job.jobId}/lease`, 200, { leaseId: lease })
      await once(runtime, 'POST', `/v1/compute/jobs/${job.jobId}/result`, 200, {
        leaseId: lease,
        ok: true,
        output: 3,
        steps: 1,
      })
      const other = await once(alice, 'POST', '/v1/compute/jobs', 201, {
        language: 'json-expr-v1',
        program: PROGRAM,
        input: { a: 2, b: 2 },
        idempotencyKey: 'commits-job-2',
      })
      await once(alice, 'POST', `/v1/compute/jobs/${other.jobId}/cancel`, 200)
      await once(runtime, 'DELETE', '/v1/compute/runtimes/commits-rt-0001', 200)
    })

    test('an A2A task through its operations', async () => {
      const sent = await once(alice, 'POST', '/v1/a2a/messages', 200, {
        tenant: bob.principal,
        message: { messageId: 'commits-a2a-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
        configuration: { returnImmediately: true },
      })
      const taskId = (sent.task as Body).id as string
      await once(alice, 'POST', `/v1/a2a/tasks/${taskId}/push-configs`, 200, {
        id: 'commits-hook',
        url: 'https://93.184.215.14/commits',
      })
      await once(alice, 'DELETE', `/v1/a2a/tasks/${taskId}/push-configs/commits-hook`, 200)
      await once(alice, 'POST', `/v1/a2a/tasks/${taskId}/cancel`, 200, {})
    })

    test('an A2A task through the JSON-RPC binding', async () => {
      const rpc = (method: string, params: Body) => ({ jsonrpc: '2.0', id: 1, method, params })
      // A2A 1.0 §3.6.1: the version as a query parameter, since these calls set no headers.
      const endpoint = '/v1/a2a?A2A-Version=1.0'
      const sent = await once(
        alice,
        'POST',
        endpoint,
        200,
        rpc('SendMessage', {
          tenant: bob.principal,
          message: { messageId: 'commits-rpc-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
          configuration: { returnImmediately: true },
        }),
      )
      const taskId = ((sent.result as Body).task as Body).id as string
      await once(alice, 'POST', endpoint, 200, rpc('CancelTask', { id: taskId }))
      const refused = await once(alice, 'POST', endpoint, 409, rpc('CancelTask', { id: taskId }))
      assert.equal(((refused.error as Body).data as Body).code, 'a2a_task_not_cancelable')
    })

    test('a signed handoff context: offer and answer', async () => {
      const hops = new HopClient(alice)
      const counts = countStatements(hub.ctx.database)
      await hub.ctx.batcher.flush()
      let before = counts.commits
      const offered = await hops.offer({ to: bob.principal, dialog: 'commits', task: 'commits' })
      await hub.ctx.batcher.flush()
      assert.equal(offered.answer.retransmission, false)
      assert.equal(counts.commits - before, 1, 'the offer commits once')
      before = counts.commits
      const answered = await new HopClient(bob).answer(offered.handoff.offer as string, 'accepted')
      await hub.ctx.batcher.flush()
      assert.equal(answered.answer.hop.state, 'accepted')
      assert.equal(counts.commits - before, 1, 'the answer commits once')
    })

    /** Runs `fn` on an otherwise idle hub; answers its outcome and the commits it made. */
    async function commitsOf<T>(fn: () => Promise<T>): Promise<{ value: T; commits: number }> {
      await hub.ctx.batcher.flush()
      const counts = countStatements(hub.ctx.database)
      const before = counts.commits
      const value = await fn()
      await hub.ctx.batcher.flush()
      return { value, commits: counts.commits - before }
    }

    /** The code and reason of a refused call. */
    async function refusedWith(p: Promise<unknown>): Promise<string> {
      try {
        await p
      } catch (error) {
        const e = error as { code: string; context: Record<string, unknown> }
        return `${e.code}:${e.context.reason}`
      }
      assert.fail('the call was not refused')
    }

    // seed 003 check 4 remembers (iss, hop) with its digest: that record commits with the
    // offer's delivery (or its refusal, or the equivocation report) and the request's nonce.
    test('every path of a hop offer commits once, its replay record with it', async () => {
      const hops = new HopClient(alice)
      const signer = await hopSigner(alice.identity)
      const offered = await commitsOf(() => hops.offer({ to: bob.principal, dialog: 'commit-all' }))
      assert.equal(offered.value.answer.retransmission, false)
      assert.equal(offered.commits, 1, 'a delivered offer')
      const again = await commitsOf(() => hops.send(bob.principal, offered.value.handoff))
      assert.equal(again.value.retransmission, true)
      assert.equal(again.commits, 1, 'a retransmission')
      const other = signOffer({
        signer,
        aud: bob.principal,
        dialog: 'commit-all',
        task: 'other-octets',
        hop: offered.value.signed.claims.hop,
      })
      const equivocation = await commitsOf(() =>
        refusedWith(hops.send(bob.principal, { offer: other.element })),
      )
      assert.equal(equivocation.value, 'hop_refused:equivocation')
      assert.equal(equivocation.commits, 1, 'an equivocation and its report')
      // A chain whose prev does not name its element is refused after the replay check.
      const upstream = await new HopClient(runtime).offer({
        to: alice.principal,
        dialog: 'commit-all',
      })
      const stray = signOffer({ signer, aud: bob.principal, dialog: 'commit-all' })
      const broken = {
        offer: signOffer({ signer, aud: bob.principal, dialog: 'commit-all', prev: stray.element })
          .element,
        chain: [upstream.handoff.offer],
      }
      const refused = await commitsOf(() => refusedWith(hops.send(bob.principal, broken)))
      assert.equal(refused.value, 'hop_refused:broken-chain')
      assert.equal(refused.commits, 1, 'an offer refused after the replay check')
      const replayed = await commitsOf(() => refusedWith(hops.send(bob.principal, broken)))
      assert.equal(replayed.value, 'hop_refused:replay', 'its refusal was remembered')
      assert.equal(replayed.commits, 1)
      const answered = await commitsOf(() =>
        new HopClient(bob).answer(offered.value.handoff.offer as string, 'accepted'),
      )
      assert.equal(answered.value.answer.hop.state, 'accepted')
      assert.equal(answered.commits, 1, 'a status')
    })

    test('a delivery that fails leaves no replay record: the same offer is then delivered', async () => {
      const { db, caps } = hub.ctx.database
      const create =
        caps.name === 'sqlite'
          ? [
              `create trigger crash_delivery before insert on hop_deliveries
               begin select raise(abort, 'crash'); end`,
            ]
          : [
              `create function crash_delivery() returns trigger language plpgsql as
               $$ begin raise exception 'crash'; end $$`,
              `create trigger crash_delivery before insert on hop_deliveries
               for each row execute function crash_delivery()`,
            ]
      const drop =
        caps.name === 'sqlite'
          ? ['drop trigger crash_delivery']
          : ['drop trigger crash_delivery on hop_deliveries', 'drop function crash_delivery()']
      const hops = new HopClient(alice)
      const signed = signOffer({
        signer: await hopSigner(alice.identity),
        aud: bob.principal,
        dialog: 'commit-crash',
      })
      const { hop } = signed.claims
      const replayRows = async () =>
        (
          await db
            .selectFrom('hop_replay')
            .select('digest')
            .where('iss', '=', alice.principal)
            .where('hop', '=', hop)
            .execute()
        ).length
      for (const text of create) await sql.raw(text).execute(db)
      try {
        await assert.rejects(hops.send(bob.principal, { offer: signed.element }))
      } finally {
        for (const text of drop) await sql.raw(text).execute(db)
      }
      assert.equal(await replayRows(), 0, 'the replay record rolled back with the delivery')
      const sent = await hops.send(bob.principal, { offer: signed.element })
      assert.equal(sent.retransmission, false, 'delivered as new, not a replay')
      assert.equal(sent.hop.state, 'offered')
      assert.equal(await replayRows(), 1)
    })

    // push_state without a checksum reads the snapshot, then pushes: one tool call, one request,
    // so its nonce commits with the push, not alone after the read.
    test('an MCP tool call that reads and then writes commits once', async () => {
      const staged = await alice.request<Body>('POST', '/v1/transfers', {
        snapshot: {
          systemPrompt: 'You hand work on.',
          messages: [{ role: 'user', content: 'mcp commits' }],
          toolState: {},
          mcpConfig: { servers: [] },
        },
      })
      const id = staged.body!.transferId as string
      const minted = await call(hub, 'POST', `/admin/v1/transfers/${id}/tokens`, {
        body: { scope: 'provision', ...TIER },
        token: ADMIN,
      })
      const provisioned = await alice.request('POST', `/v1/transfers/${id}/provision`, {
        ...TIER,
        token: minted.body.token,
      })
      assert.equal(provisioned.status, 200)
      assert.equal((await runtime.request('POST', `/v1/transfers/${id}/claim`)).status, 200)
      const sign = signedFetch(runtime.identity)
      // No event stream after initialize, so only the tool call reaches the hub.
      const fetchNoStream: typeof fetch = async (input, init) =>
        init?.method === 'GET' ? new Response(null, { status: 405 }) : sign(input, init)
      const client = new Client({ name: 'commits', version: '1.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), { fetch: fetchNoStream }),
      )
      try {
        const pushed = await commitsOf(() =>
          client.callTool({ name: 'push_state', arguments: { transferId: id } }),
        )
        assert.equal(pushed.value.isError, undefined, JSON.stringify(pushed.value.content))
        assert.equal((pushed.value.structuredContent as Body).state, 'pushed')
        assert.equal(pushed.commits, 1, 'the read, the push and the nonce')
      } finally {
        await client.close()
      }
    })
  })
}

// A read that finds a transfer past its TTL writes its expiry; on a long poll that write carries
// the request's nonce, as a plain status read's does.
for (const store of testStores) {
  describe(`a read that writes an expiry commits once (${store.name})`, () => {
    let hub: TestHub
    let alice: SignedClient
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 12))
    before(async () => {
      hub = await startTestHub(
        store,
        { BATON_ADMISSION: 'open', BATON_TRANSFER_TTL_SECONDS: '60' },
        { clock },
      )
      alice = await signedAgent(hub, { clock })
    })
    after(() => hub.close())

    const stage = async () => {
      const res = await alice.request<Body>('POST', '/v1/transfers', {
        snapshot: { systemPrompt: 'x', messages: [], toolState: {}, mcpConfig: { servers: [] } },
      })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      return res.body!.transferId as string
    }
    const commitsOf = async (path: string) => {
      await hub.ctx.batcher.flush()
      const counts = countStatements(hub.ctx.database)
      const before = counts.commits
      const res = await alice.request<Body>('GET', path)
      await hub.ctx.batcher.flush()
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body!.state, 'terminated')
      assert.equal(res.body!.endReason, 'expired')
      return counts.commits - before
    }

    test('a status read and a wait that expire the transfer each commit once', async () => {
      const read = await stage()
      const waited = await stage()
      clock.advance(61_000)
      assert.equal(await commitsOf(`/v1/transfers/${read}`), 1, 'status read')
      assert.equal(await commitsOf(`/v1/transfers/${waited}/wait?seconds=0`), 1, 'wait')
    })
  })
}
