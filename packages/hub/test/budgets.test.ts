// Issue 28: budgets that follow the delegation chain. Three agents, assistant → planner → coder,
// on each store: a budget on the first hop, part of it reserved for the second when it is
// delivered, spends counted in both, refusals before anything is charged (a crossing recorded and
// delivered to the delegator with a hub-signed receipt), holds settled or released at expiry, and
// cancel (and its propagation), completion and expiry releasing what was unspent to the parent.
import assert from 'node:assert/strict'
import { createHash, createPublicKey, verify } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { SendMessageRequest } from '@a2a-js/sdk'
import { AgentCardResolver, ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client'
import {
  a2aFetch,
  addressTo,
  BudgetClient,
  fetchDiscovery,
  HopClient,
  hopSigner,
  type SignedClient,
  signedFetch,
} from '@baton/client'
import { signOffer, toHandoff, withA2AHandoff } from '@baton/context'
import { BUDGET_CROSSING_TYPE, type BudgetView, type OfferBudget } from '@baton/protocol'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ManualClock } from '../src/clock.js'
import { countStatements } from '../src/store/transaction.js'
import {
  refusal,
  restartableHub,
  signedAgent,
  startTestHub,
  type TestHub,
  testStores,
  toolAnswer,
} from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }
// The tests release expired holds and budgets themselves (ctx.budgets.reap), at the moment they
// choose: the periodic reaper is set to run far less often than the suite lasts.
const MANUAL_REAP = { BATON_BUDGET_REAP_INTERVAL_MS: '3600000' }
const usd = (amountMicros: number, extra: Partial<OfferBudget> = {}): OfferBudget => ({
  unit: 'usd',
  amountMicros,
  ...extra,
})

interface Agent {
  principal: string
  client: SignedClient
  hops: HopClient
  budgets: BudgetClient
}

async function agent(hub: { url: string }, clock: ManualClock): Promise<Agent> {
  const client = await signedAgent(hub, { clock })
  return {
    principal: client.principal,
    client,
    hops: new HopClient(client),
    budgets: new BudgetClient(client),
  }
}

/** The same identity, signing to another hub (or the same data after a restart). */
async function again(hub: { url: string }, who: Agent, clock: ManualClock): Promise<Agent> {
  const { SignedClient } = await import('@baton/client')
  const client = await SignedClient.connect(
    `${hub.url}/.well-known/agent-net`,
    who.client.identity,
    {
      maxRetryWaitMs: 0,
      now: () => Math.floor(clock.now() / 1000),
    },
  )
  return { ...who, client, hops: new HopClient(client), budgets: new BudgetClient(client) }
}

/** One hop's ledger figures, to compare whole. */
const figures = (b: BudgetView) => ({
  granted: b.grantedMicros,
  reserved: b.reservedMicros,
  held: b.heldMicros,
  spent: b.spentMicros,
  remaining: b.remainingMicros,
  released: b.releasedMicros,
  state: b.state,
})

/** The ledger of one hop as `who` reads it through the chain view. */
async function ledgerOf(who: Agent, digest: string): Promise<BudgetView> {
  const { budgets } = await who.budgets.read(digest)
  const found = budgets.find((b) => b.hop === digest)
  assert.ok(found, `the ledger of ${digest}`)
  return found
}

/** Checks a hub receipt against the hub key of discovery; answers its payload. */
async function checkReceipt(
  hub: { url: string },
  receipt: string,
): Promise<Record<string, unknown>> {
  const discovery = await fetchDiscovery(`${hub.url}/.well-known/agent-net`)
  const [h, p, s] = receipt.split('.') as [string, string, string]
  const key = createPublicKey({ key: discovery.hubKey as never, format: 'jwk' })
  assert.equal(
    verify(null, Buffer.from(`${h}.${p}`, 'ascii'), key, Buffer.from(s, 'base64url')),
    true,
    'the receipt verifies with the hub key',
  )
  assert.equal(
    JSON.parse(Buffer.from(h, 'base64url').toString('utf8')).typ,
    'baton-hop-receipt+jws',
  )
  return JSON.parse(Buffer.from(p, 'base64url').toString('utf8'))
}

for (const store of testStores) {
  describe(`budgets down a delegation chain (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.now())
    const now = () => clock.now()
    let assistant: Agent
    let planner: Agent
    let coder: Agent
    let outsider: Agent

    before(async () => {
      hub = await startTestHub(
        store,
        { ...OPEN, ...MANUAL_REAP, BATON_BUDGET_MAX_REPORTERS: '2' },
        {
          clock,
        },
      )
      assistant = await agent(hub, clock)
      planner = await agent(hub, clock)
      coder = await agent(hub, clock)
      outsider = await agent(hub, clock)
    })
    after(() => hub.close())

    /** assistant → planner with 1,000,000; planner → coder with 600,000 reserved from it. */
    async function chain(dialog: string, ttlS = 300) {
      const first = await assistant.hops.offer({
        to: planner.principal,
        dialog,
        budget: usd(1_000_000),
        ttlS,
        now,
      })
      const second = await planner.hops.offer({
        to: coder.principal,
        dialog,
        after: first.handoff,
        budget: usd(600_000),
        ttlS,
        now,
      })
      return { first, second, h1: first.signed.digest, h2: second.signed.digest }
    }

    test('the issue’s walk: reserve down the chain, spends in both, refusals recorded, cancel releases', async () => {
      const { first, second, h1, h2 } = await chain('ctx-budget-walk')
      // The first hop's budget is a root; the second's is reserved from it on delivery.
      assert.equal(first.answer.hop.budget?.grantedMicros, 1_000_000)
      assert.equal(first.answer.hop.budget?.parent, null)
      assert.deepEqual(figures(second.answer.hop.budget!), {
        granted: 600_000,
        reserved: 0,
        held: 0,
        spent: 0,
        remaining: 600_000,
        released: 0,
        state: 'open',
      })
      assert.equal(second.answer.hop.budget?.parent, h1)
      assert.deepEqual(figures(await ledgerOf(planner, h1)), {
        granted: 1_000_000,
        reserved: 600_000,
        held: 0,
        spent: 0,
        remaining: 400_000,
        released: 0,
        state: 'open',
      })

      // The coder's spends count against both: spent on each, moved from reserved on the first.
      const spent = await coder.budgets.spend(h2, 100_000, { idempotencyKey: 'coder-call-1' })
      assert.equal(spent.repeated, false)
      assert.equal(spent.budget.spentMicros, 100_000)
      assert.equal(spent.budget.remainingMicros, 500_000)
      assert.deepEqual(figures(await ledgerOf(planner, h1)), {
        granted: 1_000_000,
        reserved: 500_000,
        held: 0,
        spent: 100_000,
        remaining: 400_000,
        released: 0,
        state: 'open',
      })
      // Each key charges once; the same key with another amount is a conflict.
      const repeated = await coder.budgets.spend(h2, 100_000, { idempotencyKey: 'coder-call-1' })
      assert.equal(repeated.repeated, true)
      assert.equal(repeated.budget.spentMicros, 100_000)
      const conflict = await refusal(coder.budgets.spend(h2, 5, { idempotencyKey: 'coder-call-1' }))
      assert.equal(conflict.code, 'idempotency_conflict')

      // A sub-offer for more than remains is refused with its own code; nothing is reserved.
      const greedy = signOffer({
        signer: await hopSigner(planner.client.identity),
        aud: coder.principal,
        dialog: 'ctx-budget-walk',
        prev: first.signed.element,
        ttlS: 300,
        now,
        extensions: { budget: usd(400_001) },
      })
      const tooMuch = await refusal(
        planner.hops.send(
          coder.principal,
          toHandoff(greedy, { after: first.handoff, chain: true }),
        ),
      )
      assert.equal(tooMuch.code, 'budget_insufficient')
      assert.equal(tooMuch.context.parent, h1)
      assert.equal(tooMuch.context.requestedMicros, 400_001)
      assert.equal(tooMuch.context.remainingMicros, 400_000)
      assert.equal((await ledgerOf(planner, h1)).reservedMicros, 500_000)
      const inbox = await coder.hops.inbox()
      assert.equal(
        inbox.deliveries.some((d) => d.offer === greedy.digest),
        false,
        'the refused sub-offer was not delivered',
      )

      // A spend that would cross is refused before anything is charged, and the delegator is told.
      const crossing = await refusal(
        coder.budgets.spend(h2, 500_001, { idempotencyKey: 'coder-call-2' }),
      )
      assert.equal(crossing.code, 'budget_exceeded')
      assert.equal(crossing.context.requestedMicros, 500_001)
      assert.equal(crossing.context.remainingMicros, 500_000)
      assert.equal((await ledgerOf(coder, h2)).spentMicros, 100_000)
      assert.equal((await ledgerOf(coder, h2)).crossings, 1)
      const told = (await planner.hops.inbox()).deliveries.filter(
        (d) => d.kind === 'budget-crossing' && d.offer === h2,
      )
      assert.equal(told.length, 1, 'one crossing delivered to the delegator')
      const notice = JSON.parse(told[0]!.element)
      assert.deepEqual(
        {
          type: notice.type,
          hop: notice.hop,
          kind: notice.kind,
          key: notice.key,
          requested: notice.requestedMicros,
          remaining: notice.remainingMicros,
          reporter: notice.reporter,
        },
        {
          type: BUDGET_CROSSING_TYPE,
          hop: h2,
          kind: 'spend',
          key: 'coder-call-2',
          requested: 500_001,
          remaining: 500_000,
          reporter: coder.principal,
        },
      )
      const receipt = await checkReceipt(hub, told[0]!.receipt)
      assert.equal(receipt.kind, 'budget-crossing')
      assert.equal(receipt.recipient, planner.principal)
      assert.equal(receipt.offer, h2)
      assert.equal(
        receipt.elementDigest,
        createHash('sha256').update(told[0]!.element, 'ascii').digest('base64url'),
      )
      // The same refused key answers the same refusal, and is not delivered twice.
      const again_ = await refusal(
        coder.budgets.spend(h2, 500_001, { idempotencyKey: 'coder-call-2' }),
      )
      assert.equal(again_.code, 'budget_exceeded')
      assert.equal(
        (await planner.hops.inbox()).deliveries.filter((d) => d.kind === 'budget-crossing').length,
        1,
      )

      // Reserve before a call, settle after it: the hold is released and what it cost charged.
      const hold = await coder.budgets.reserve(h2, 200_000, { idempotencyKey: 'coder-hold-1' })
      assert.equal(hold.state, 'held')
      assert.equal(hold.budget.heldMicros, 200_000)
      assert.equal(hold.budget.remainingMicros, 300_000)
      const settled = await coder.budgets.settle(h2, hold.holdId, 150_000)
      assert.equal(settled.state, 'settled')
      assert.deepEqual(figures(settled.budget), {
        granted: 600_000,
        reserved: 0,
        held: 0,
        spent: 250_000,
        remaining: 350_000,
        released: 0,
        state: 'open',
      })
      assert.equal((await coder.budgets.settle(h2, hold.holdId, 150_000)).repeated, true)
      assert.equal(
        (await refusal(coder.budgets.settle(h2, hold.holdId, 1))).code,
        'idempotency_conflict',
      )
      assert.deepEqual(figures(await ledgerOf(planner, h1)), {
        granted: 1_000_000,
        reserved: 350_000,
        held: 0,
        spent: 250_000,
        remaining: 400_000,
        released: 0,
        state: 'open',
      })

      // The planner cancels the second hop: what the coder left unspent goes back to the first.
      const canceled = await planner.hops.answer(second.handoff.offer as string, 'canceled', {
        now,
      })
      assert.equal(canceled.answer.hop.budget?.state, 'closed')
      assert.equal(canceled.answer.hop.budget?.closedReason, 'canceled')
      assert.equal(canceled.answer.hop.budget?.releasedMicros, 350_000)
      assert.deepEqual(figures(await ledgerOf(planner, h1)), {
        granted: 1_000_000,
        reserved: 0,
        held: 0,
        spent: 250_000,
        remaining: 750_000,
        released: 0,
        state: 'open',
      })
      const closed = await refusal(coder.budgets.spend(h2, 1, { idempotencyKey: 'late' }))
      assert.equal(closed.code, 'budget_closed')
      assert.equal(closed.context.reason, 'canceled')
      // What was released may be reserved again: 700,000 of the 750,000 left.
      const next = await planner.hops.offer({
        to: coder.principal,
        dialog: 'ctx-budget-walk',
        after: first.handoff,
        budget: usd(700_000),
        ttlS: 300,
        now,
      })
      assert.equal(next.answer.hop.budget?.grantedMicros, 700_000)
      assert.equal((await ledgerOf(planner, h1)).remainingMicros, 50_000)
    })

    test('parties only: a third party is answered as for a missing id; roles are kept', async () => {
      const { h1, h2 } = await chain('ctx-budget-parties')
      for (const digest of [h1, h2]) {
        const missing = await refusal(outsider.budgets.read(digest))
        assert.equal(missing.code, 'budget_not_found')
        const spend = await refusal(outsider.budgets.spend(digest, 1))
        assert.equal(spend.code, 'budget_not_found')
      }
      const nothing = await refusal(outsider.budgets.read('A'.repeat(43)))
      assert.equal(nothing.code, 'budget_not_found')
      // Each sees the budgets of the hops it took part in.
      assert.deepEqual(
        (await assistant.budgets.read(h1)).budgets.map((b) => b.hop),
        [h1],
      )
      assert.deepEqual(
        (await planner.budgets.read(h2)).budgets.map((b) => b.hop),
        [h1, h2],
      )
      assert.deepEqual(
        (await coder.budgets.read(h2)).budgets.map((b) => b.hop),
        [h2],
      )
      // The delegator grants; only the delegate (or a reporter it names) reports.
      assert.equal((await refusal(assistant.budgets.spend(h1, 1))).code, 'budget_forbidden')
      assert.equal((await refusal(planner.budgets.reserve(h2, 1))).code, 'budget_forbidden')
      assert.equal(
        (await refusal(planner.budgets.nameReporters(h2, [outsider.principal]))).code,
        'budget_forbidden',
      )
      // A hop without a budget has none.
      const plain = await assistant.hops.offer({ to: planner.principal, dialog: 'plain', now })
      assert.equal(plain.answer.hop.budget, null)
      assert.equal(
        (await refusal(planner.budgets.spend(plain.signed.digest, 1))).code,
        'budget_not_found',
      )
    })

    test('a runtime the delegate names reports spend for it, within the cap on reporters', async () => {
      const { h1, h2 } = await chain('ctx-budget-reporters')
      const runtime = await agent(hub, clock)
      assert.equal((await refusal(runtime.budgets.spend(h2, 1))).code, 'budget_not_found')
      const named = await coder.budgets.nameReporters(h2, [runtime.principal])
      assert.deepEqual(named.reporters, [runtime.principal])
      const spent = await runtime.budgets.spend(h2, 42, { idempotencyKey: 'runtime-1' })
      assert.equal(spent.budget.spentMicros, 42)
      assert.equal((await ledgerOf(planner, h1)).spentMicros, 42)
      // A reporter sees that hop's budget, and nothing above it.
      assert.deepEqual(
        (await runtime.budgets.read(h2)).budgets.map((b) => b.hop),
        [h2],
      )
      const over = await refusal(
        coder.budgets.nameReporters(h2, [runtime.principal, outsider.principal, planner.principal]),
      )
      assert.equal(over.code, 'budget_limit_reached')
      assert.equal(over.context.scope, 'reporters')
      assert.equal(over.context.limit, 2)
      await coder.budgets.nameReporters(h2, [])
      assert.equal((await refusal(runtime.budgets.spend(h2, 1))).code, 'budget_not_found')
    })

    test('cancel propagates: canceling the first hop closes every budget below it', async () => {
      const { first, h1, h2 } = await chain('ctx-budget-propagate')
      await coder.budgets.spend(h2, 10_000, { idempotencyKey: 'before-cancel' })
      const hold = await coder.budgets.reserve(h2, 20_000)
      const canceled = await assistant.hops.answer(first.handoff.offer as string, 'canceled', {
        now,
      })
      assert.deepEqual(canceled.answer.propagated, [h2])
      const top = await ledgerOf(planner, h1)
      assert.equal(top.state, 'closed')
      assert.equal(top.releasedMicros, 990_000)
      const below = await ledgerOf(coder, h2)
      assert.equal(below.state, 'closed')
      assert.equal(below.closedReason, 'upstream')
      assert.equal(below.heldMicros, 0)
      const late = await refusal(coder.budgets.settle(h2, hold.holdId, 20_000))
      assert.equal(late.code, 'budget_closed')
      assert.equal((await refusal(coder.budgets.reserve(h2, 1))).code, 'budget_closed')
    })

    test('completion releases the unspent part to the parent in the status transaction', async () => {
      const { second, h1, h2 } = await chain('ctx-budget-complete')
      await coder.budgets.spend(h2, 123_456, { idempotencyKey: 'work' })
      const done = await coder.hops.answer(second.handoff.offer as string, 'completed', { now })
      assert.equal(done.answer.hop.budget?.closedReason, 'completed')
      assert.deepEqual(figures(await ledgerOf(planner, h1)), {
        granted: 1_000_000,
        reserved: 0,
        held: 0,
        spent: 123_456,
        remaining: 876_544,
        released: 0,
        state: 'open',
      })
    })

    test('holds are released at their expiry; a late settle is a plain spend that must fit', async () => {
      const { h2 } = await chain('ctx-budget-holds')
      const hold = await coder.budgets.reserve(h2, 300_000, { ttlSeconds: 5 })
      assert.equal(hold.expiresAt, new Date(clock.now() + 5_000).toISOString())
      clock.advance(6_000)
      assert.ok((await hub.ctx.budgets.reap()) >= 1)
      const released = await ledgerOf(coder, h2)
      assert.equal(released.heldMicros, 0)
      assert.equal(released.remainingMicros, 600_000)
      const late = await coder.budgets.settle(h2, hold.holdId, 250_000)
      assert.equal(late.state, 'settled')
      assert.equal(late.budget.spentMicros, 250_000)
      // A hold above what remains is refused and recorded; nothing is held.
      const big = await refusal(coder.budgets.reserve(h2, 350_001, { idempotencyKey: 'big' }))
      assert.equal(big.code, 'budget_exceeded')
      assert.equal(big.context.kind, 'hold')
      assert.equal((await ledgerOf(coder, h2)).heldMicros, 0)
      // A settle above its hold is charged only when the excess fits.
      const small = await coder.budgets.reserve(h2, 10_000)
      const over = await refusal(coder.budgets.settle(h2, small.holdId, 360_001))
      assert.equal(over.code, 'budget_exceeded')
      assert.equal(over.context.remainingMicros, 350_000)
      const ok = await coder.budgets.settle(h2, small.holdId, 350_000)
      assert.equal(ok.budget.remainingMicros, 0)
    })

    test('a budget ends with its offer’s expiry, and the reaper releases it to the parent', async () => {
      const first = await assistant.hops.offer({
        to: planner.principal,
        dialog: 'ctx-budget-expiry',
        budget: usd(1_000_000),
        ttlS: 300,
        now,
      })
      const second = await planner.hops.offer({
        to: coder.principal,
        dialog: 'ctx-budget-expiry',
        after: first.handoff,
        budget: usd(100_000, { exp: Math.floor(clock.now() / 1000) + 30 }),
        ttlS: 120,
        now,
      })
      const h2 = second.signed.digest
      assert.equal((await ledgerOf(planner, first.signed.digest)).reservedMicros, 100_000)
      clock.advance(31_000)
      const lapsed = await ledgerOf(coder, h2)
      assert.equal(lapsed.state, 'expired', 'a read answers the expiry at once')
      assert.equal((await refusal(coder.budgets.spend(h2, 1))).code, 'budget_expired')
      await hub.ctx.budgets.reap()
      assert.equal((await ledgerOf(planner, first.signed.digest)).reservedMicros, 0)
      assert.equal((await ledgerOf(planner, first.signed.digest)).remainingMicros, 1_000_000)
    })

    test('an A2A task carries a budgeted hop: reserved when sent, released when the task ends', async () => {
      const first = await assistant.hops.offer({
        to: planner.principal,
        dialog: 'ctx-budget-a2a',
        budget: usd(1_000_000),
        ttlS: 300,
        now,
      })
      const signed = signOffer({
        signer: await hopSigner(planner.client.identity),
        aud: coder.principal,
        dialog: 'ctx-budget-a2a',
        prev: first.signed.element,
        ttlS: 300,
        now,
        extensions: { budget: usd(500_000) },
      })
      const card = await AgentCardResolver.default.resolve(hub.url)
      const toCoder = await new ClientFactory({
        transports: [
          new JsonRpcTransportFactory({
            fetchImpl: a2aFetch(planner.client.identity, { now: () => Math.floor(now() / 1000) }),
          }),
        ],
        clientConfig: { polling: true },
      }).createFromAgentCard(addressTo(card, coder.principal))
      const message = withA2AHandoff(
        { messageId: 'budget-a2a-1', role: 'ROLE_USER', parts: [{ text: 'write the tests' }] },
        toHandoff(signed, { after: first.handoff, chain: true }),
      )
      const task = (await toCoder.sendMessage(
        SendMessageRequest.fromJSON({ message, configuration: { returnImmediately: true } }),
      )) as { id: string }
      const h2 = signed.digest
      assert.equal((await ledgerOf(planner, first.signed.digest)).reservedMicros, 500_000)
      await coder.budgets.spend(h2, 100_000, { idempotencyKey: 'a2a-work' })
      // The planner cancels the task: the hop's budget closes and releases what was unspent.
      await toCoder.cancelTask({ tenant: '', id: task.id, metadata: undefined })
      const closed = await ledgerOf(coder, h2)
      assert.equal(closed.state, 'closed')
      assert.equal(closed.closedReason, 'canceled')
      assert.deepEqual(figures(await ledgerOf(planner, first.signed.digest)), {
        granted: 1_000_000,
        reserved: 0,
        held: 0,
        spent: 100_000,
        remaining: 900_000,
        released: 0,
        state: 'open',
      })
    })

    test('over MCP: reserve_budget, settle_budget and report_spend act as the signed identity', async () => {
      const { h1, h2 } = await chain('ctx-budget-mcp')
      const mcp = new Client({ name: 'budget-test', version: '1.0.0' })
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
          fetch: signedFetch(coder.client.identity, { now: () => Math.floor(now() / 1000) }),
        }),
      )
      try {
        const names = new Set((await mcp.listTools()).tools.map((t) => t.name))
        for (const name of [
          'read_budget',
          'report_spend',
          'reserve_budget',
          'settle_budget',
          'name_budget_reporters',
        ]) {
          assert.ok(names.has(name), name)
        }
        const call = async (name: string, args: Record<string, unknown>) =>
          toolAnswer(await mcp.callTool({ name, arguments: args }))
        const held = await call('reserve_budget', {
          digest: h2,
          idempotencyKey: 'mcp-hold',
          amountMicros: 80_000,
        })
        assert.equal(held.isError, false, JSON.stringify(held.body))
        const settled = await call('settle_budget', {
          digest: h2,
          hold: held.body.holdId,
          amountMicros: 60_000,
        })
        assert.equal((settled.body.budget as BudgetView).spentMicros, 60_000)
        const spent = await call('report_spend', {
          digest: h2,
          idempotencyKey: 'mcp-spend',
          amountMicros: 40_000,
        })
        assert.equal((spent.body.budget as BudgetView).spentMicros, 100_000)
        // A refusal is a tool error with the same code and context as over HTTP.
        const over = await call('report_spend', {
          digest: h2,
          idempotencyKey: 'mcp-over',
          amountMicros: 500_001,
        })
        assert.equal(over.isError, true)
        assert.equal(over.body.code, 'budget_exceeded')
        assert.equal(over.body.remainingMicros, 500_000)
        const read = await call('read_budget', { digest: h2 })
        assert.deepEqual(
          (read.body.budgets as BudgetView[]).map((b) => b.hop),
          [h2],
        )
        assert.equal((await ledgerOf(planner, h1)).spentMicros, 100_000)
      } finally {
        await mcp.close()
      }
    })

    test('the SDK wraps a call in reserve and settle: never called when the hold is refused', async () => {
      const first = await assistant.hops.offer({
        to: coder.principal,
        dialog: 'ctx-budget-sdk',
        budget: usd(100_000, { rateMicrosPerSecond: 1_000 }),
        ttlS: 300,
        now,
      })
      const h = first.signed.digest
      const budget = coder.budgets.of(h)
      let ms = 0
      const wall = { now: () => ms }
      // Settled with what the call passes, plus wall time at the budget's rate (2.5 s × 1000/s).
      const answer = await budget.run(
        40_000,
        async (settle) => {
          ms += 2_500
          await settle(30_000)
          return 'done'
        },
        wall,
      )
      assert.equal(answer, 'done')
      assert.equal((await ledgerOf(coder, h)).spentMicros, 32_500)
      // A call that settles nothing is charged its whole estimate, whether it returns or throws.
      await budget.run(10_000, async () => 'unsettled', { meterWallTime: false })
      await assert.rejects(
        budget.run(5_000, async () => {
          throw new Error('the model failed')
        }),
        /the model failed/,
      )
      assert.equal((await ledgerOf(coder, h)).spentMicros, 47_500)
      assert.equal((await ledgerOf(coder, h)).heldMicros, 0)
      // A hold that does not fit is refused before the call runs.
      let called = false
      const refused = await refusal(
        budget.run(60_000, async () => {
          called = true
        }),
      )
      assert.equal(refused.code, 'budget_exceeded')
      assert.equal(called, false)
      // A settle above the hold that does not fit: the hold is charged, the crossing thrown.
      const over = await refusal(
        budget.run(
          50_000,
          async (settle) => {
            await settle(60_000)
          },
          { meterWallTime: false },
        ),
      )
      assert.equal(over.code, 'budget_exceeded')
      assert.equal(over.context.kind, 'settle')
      const after_ = await ledgerOf(coder, h)
      assert.equal(after_.spentMicros, 97_500)
      assert.equal(after_.heldMicros, 0)
      assert.equal(after_.remainingMicros, 2_500)
    })

    test('malformed and misplaced budgets are refused, and nothing is delivered', async () => {
      const signer = await hopSigner(assistant.client.identity)
      const offerWith = (budget: unknown, extra: Record<string, unknown> = {}) =>
        signOffer({
          signer,
          aud: planner.principal,
          dialog: 'ctx-budget-bad',
          ttlS: 120,
          now,
          extensions: { budget },
          ...extra,
        })
      const cases: [string, unknown, string, string][] = [
        ['a unit with capitals', { unit: 'USD', amountMicros: 1 }, 'budget_invalid', 'budget.unit'],
        ['no amount', { unit: 'usd' }, 'budget_invalid', 'budget.amountMicros'],
        [
          'a fractional amount',
          { unit: 'usd', amountMicros: 1.5 },
          'budget_invalid',
          'budget.amountMicros',
        ],
        ['an unknown member', { unit: 'usd', amountMicros: 1, cap: 2 }, 'budget_invalid', 'budget'],
        [
          'an expiry after the offer’s',
          { unit: 'usd', amountMicros: 1, exp: Math.floor(clock.now() / 1000) + 121 },
          'budget_invalid',
          'budget.exp',
        ],
      ]
      for (const [what, budget, code, field] of cases) {
        const offer = offerWith(budget)
        const refused = await refusal(assistant.hops.send(planner.principal, toHandoff(offer)))
        assert.equal(refused.code, code, what)
        assert.equal(refused.context.field, field, what)
        assert.equal(
          (await planner.hops.inbox()).deliveries.some((d) => d.offer === offer.digest),
          false,
          what,
        )
      }
      // A sub-budget counts its parent's unit, and only the parent's delegate passes it on.
      const { first } = await chain('ctx-budget-misplaced')
      const tokens = await refusal(
        planner.hops.offer({
          to: coder.principal,
          dialog: 'ctx-budget-misplaced',
          after: first.handoff,
          budget: { unit: 'tokens', amountMicros: 1 },
          now,
        }),
      )
      assert.equal(tokens.code, 'budget_unit_mismatch')
      assert.equal(tokens.context.unit, 'usd')
      const stranger = await refusal(
        outsider.hops.offer({
          to: coder.principal,
          dialog: 'ctx-budget-misplaced',
          after: first.handoff,
          chain: false,
          budget: usd(1),
          now,
        }),
      )
      assert.equal(stranger.code, 'budget_forbidden')
    })
  })

  describe(`budgets survive a restart (${store.name})`, () => {
    test('ledgers, holds and crossings are all there after the hub restarts', async () => {
      const clock = new ManualClock(Date.now())
      const now = () => clock.now()
      const db = await restartableHub(store, OPEN, clock)
      let hub = await db.start()
      try {
        const assistant = await agent(hub, clock)
        const planner = await agent(hub, clock)
        const coder = await agent(hub, clock)
        const first = await assistant.hops.offer({
          to: planner.principal,
          dialog: 'ctx-restart',
          budget: usd(1_000_000),
          ttlS: 300,
          now,
        })
        const second = await planner.hops.offer({
          to: coder.principal,
          dialog: 'ctx-restart',
          after: first.handoff,
          budget: usd(600_000),
          ttlS: 300,
          now,
        })
        const h1 = first.signed.digest
        const h2 = second.signed.digest
        await coder.budgets.spend(h2, 100_000, { idempotencyKey: 'before' })
        const hold = await coder.budgets.reserve(h2, 50_000, { idempotencyKey: 'held' })
        await refusal(coder.budgets.spend(h2, 999_999, { idempotencyKey: 'crossing' }))
        const before = (await planner.budgets.read(h2)).budgets.map(figures)
        await hub.stop()
        hub = await db.start()
        const p = await again(hub, planner, clock)
        const c = await again(hub, coder, clock)
        assert.deepEqual((await p.budgets.read(h2)).budgets.map(figures), before)
        // The acknowledged spend and hold stand: their keys answer as repeats.
        assert.equal(
          (await c.budgets.spend(h2, 100_000, { idempotencyKey: 'before' })).repeated,
          true,
        )
        assert.equal(
          (await c.budgets.reserve(h2, 50_000, { idempotencyKey: 'held' })).repeated,
          true,
        )
        const settled = await c.budgets.settle(h2, hold.holdId, 40_000)
        assert.equal(settled.budget.spentMicros, 140_000)
        assert.equal((await ledgerOf(p, h1)).spentMicros, 140_000)
        const crossings = (await p.hops.inbox()).deliveries.filter(
          (d) => d.kind === 'budget-crossing',
        )
        assert.equal(crossings.length, 1)
        assert.equal(
          (await refusal(c.budgets.spend(h2, 999_999, { idempotencyKey: 'crossing' }))).code,
          'budget_exceeded',
        )
      } finally {
        await hub.stop()
        await db.drop()
      }
    })
  })

  describe(`a root budget's tree is capped (${store.name})`, () => {
    test('a sub-offer past BATON_BUDGET_MAX_TREE is refused, reserving nothing', async () => {
      const clock = new ManualClock(Date.now())
      const now = () => clock.now()
      const hub = await startTestHub(store, { ...OPEN, BATON_BUDGET_MAX_TREE: '2' }, { clock })
      try {
        const [a, b, c, d] = [
          await agent(hub, clock),
          await agent(hub, clock),
          await agent(hub, clock),
          await agent(hub, clock),
        ]
        const first = await a.hops.offer({
          to: b.principal,
          dialog: 'ctx-tree',
          budget: usd(1_000),
          ttlS: 300,
          now,
        })
        // The root and one sub-budget: the tree is full.
        const second = await b.hops.offer({
          to: c.principal,
          dialog: 'ctx-tree',
          after: first.handoff,
          budget: usd(100),
          ttlS: 300,
          now,
        })
        const refused = await refusal(
          c.hops.offer({
            to: d.principal,
            dialog: 'ctx-tree',
            after: second.handoff,
            budget: usd(10),
            ttlS: 300,
            now,
          }),
        )
        assert.equal(refused.code, 'budget_limit_reached')
        assert.deepEqual(refused.context, { scope: 'tree', limit: 2 })
        assert.equal((await ledgerOf(c, second.signed.digest)).reservedMicros, 0)
        assert.equal((await ledgerOf(b, first.signed.digest)).reservedMicros, 100)
      } finally {
        await hub.close()
      }
    })
  })

  describe(`reports that arrive together are decided as one (${store.name})`, () => {
    test('a batch of reserves, settles and spends takes a few statements, each answered as alone', async () => {
      const clock = new ManualClock(Date.now())
      const now = () => clock.now()
      const hub = await startTestHub(store, { ...OPEN, ...MANUAL_REAP }, { clock })
      try {
        const assistant = await agent(hub, clock)
        const coder = await agent(hub, clock)
        const first = await assistant.hops.offer({
          to: coder.principal,
          dialog: 'ctx-batch',
          budget: usd(100_000),
          ttlS: 300,
          now,
        })
        const hop = first.signed.digest
        const svc = hub.ctx.budgets
        const counts = countStatements(hub.ctx.database)
        // Eight reserves started together. Each is read (who may report) before it is queued; on
        // SQLite those reads answer at once and the eight share one transaction, while on
        // PostgreSQL they answer apart and two transactions commit at once, so how many share a
        // batch varies there and only SQLite's count is held to a bound.
        const bounded = store.name === 'sqlite'
        let before = counts.statements
        const reserves = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            svc.reserve(coder.principal, hop, { idempotencyKey: `r-${i}`, amountMicros: 10_000 }),
          ),
        )
        const reserveStatements = counts.statements - before
        // Eight reads, then one transaction of nine statements (its reads, its writes, its ends).
        if (bounded) assert.ok(reserveStatements <= 18, `${reserveStatements} for eight reserves`)
        // Each answered with the ledger as it stood after it: every step of 10,000 once.
        assert.deepEqual(
          reserves.map((h) => h.budget.heldMicros).sort((x, y) => x - y),
          Array.from({ length: 8 }, (_, i) => 10_000 * (i + 1)),
        )
        // A key again: the same hold; another amount under it: a conflict.
        const again = await svc.reserve(coder.principal, hop, {
          idempotencyKey: 'r-0',
          amountMicros: 10_000,
        })
        assert.equal(again.repeated, true)
        assert.equal(again.holdId, reserves[0]!.holdId)
        await assert.rejects(
          svc.reserve(coder.principal, hop, { idempotencyKey: 'r-0', amountMicros: 7 }),
          { code: 'idempotency_conflict' },
        )

        // The eight holds settled together, each for what its call cost.
        before = counts.statements
        const settles = await Promise.all(
          reserves.map((h, i) =>
            svc.settle(
              coder.principal,
              { digest: hop, hold: h.holdId },
              { amountMicros: 1_000 * (i + 1) },
            ),
          ),
        )
        const settleStatements = counts.statements - before
        // Sixteen reads (the budget, the hold), then one transaction.
        if (bounded) assert.ok(settleStatements <= 26, `${settleStatements} for eight settles`)
        assert.deepEqual(
          settles.map((h) => [h.state, h.settledMicros, h.repeated]),
          reserves.map((_, i) => ['settled', 1_000 * (i + 1), false]),
        )
        const resettled = await svc.settle(
          coder.principal,
          { digest: hop, hold: reserves[3]!.holdId },
          { amountMicros: 4_000 },
        )
        assert.equal(resettled.repeated, true)

        // Two spends together fit; a third would cross and is refused; a key again repeats.
        const spent = await Promise.all([
          svc.spend(coder.principal, hop, { idempotencyKey: 's-1', amountMicros: 20_000 }),
          svc.spend(coder.principal, hop, { idempotencyKey: 's-2', amountMicros: 20_000 }),
        ])
        assert.deepEqual(
          spent.map((s) => s.repeated),
          [false, false],
        )
        await assert.rejects(
          svc.spend(coder.principal, hop, { idempotencyKey: 's-3', amountMicros: 30_000 }),
          { code: 'budget_exceeded' },
        )
        const repeat = await svc.spend(coder.principal, hop, {
          idempotencyKey: 's-1',
          amountMicros: 20_000,
        })
        assert.equal(repeat.repeated, true)
        const [ledger] = (await svc.read(coder.principal, hop)).budgets
        // 36,000 settled and 40,000 spent of 100,000; nothing held; the crossing counted.
        assert.deepEqual(
          {
            spent: ledger!.spentMicros,
            held: ledger!.heldMicros,
            holds: ledger!.holds,
            remaining: ledger!.remainingMicros,
            crossings: ledger!.crossings,
          },
          { spent: 76_000, held: 0, holds: 0, remaining: 24_000, crossings: 1 },
        )
      } finally {
        await hub.close()
      }
    })
  })
}
