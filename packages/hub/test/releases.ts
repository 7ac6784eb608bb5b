// One record of each feature, written through a hub's HTTP faces and services (the release
// fixtures are made with it, by scripts/make-fixture.ts) and read back through the services of
// whichever hub opens that data later.
import assert from 'node:assert/strict'
import { BudgetClient, HopClient, hopSigner } from '@baton/client'
import { signOffer } from '@baton/context'
import type { RunningHub } from '../src/hub.js'
import { signedAgent } from './support.js'

/** The trace context the records are written in (migrations 014, 016, 017 keep it). */
export const FIXTURE_TRACE = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  tracestate: 'baton=fixture',
}
const traced = { traceparent: FIXTURE_TRACE.traceparent, tracestate: FIXTURE_TRACE.tracestate }

/** The ids of the records `seedRecords` made, kept beside a fixture as `records.json`. */
export interface Records {
  version: string
  /** When they were made: a hub reading them runs on a clock set here, before anything expires. */
  madeAt: number
  owner: string
  other: string
  handoff: { id: string; ownerToken: string }
  resource: string
  grant: string
  message: string
  homePath: string
  transfer: string
  computeJob: string
  hop: string
  a2aTask: string
  /** The labels of the two agents (migrations 015 and 018); absent in fixtures made before. */
  labels?: { ownerAgent: string; otherOperator: string }
  /** The trace context the writes carried; absent in fixtures made before it was kept. */
  trace?: typeof FIXTURE_TRACE
  /**
   * A hop whose offer carries a budget (migration 024), with a spend and an open hold of its
   * delegate on it; absent in fixtures made before budgets.
   */
  budget?: { hop: string; spentMicros: number; heldMicros: number; hold: string }
}

/** Makes one record of each feature on a hub with open admission and compute enabled. */
export async function seedRecords(hub: RunningHub, version: string): Promise<Records> {
  const madeAt = hub.ctx.clock.now()
  const owner = await signedAgent(hub)
  const other = await signedAgent(hub)
  // Labels (015, 018): the owner names itself, the operator names the other agent.
  await owner.call('PUT', '/v1/me/label', { label: 'fixture owner' })
  await hub.ctx.identity.setOperatorLabel(other.principal, 'fixture other')
  // Every write below carries the same trace context, kept with it (014, 016, 017).
  const send = <T>(method: string, path: string, body: object) =>
    owner.request<T>(method, path, body, traced).then((r) => {
      assert.ok(r.status < 300, `${method} ${path}: ${JSON.stringify(r.body)}`)
      return r.body
    })
  const created = await fetch(`${hub.url}/services/v1/handoff`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...traced },
    body: JSON.stringify({ payload: { task: 'fixture' } }),
  })
  assert.equal(created.status, 201)
  const handoff = (await created.json()) as { handoff_id: string; owner_token: string }
  const moved = await fetch(`${hub.url}/services/v1/handoff/${handoff.handoff_id}/accepted`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${handoff.owner_token}`,
      ...traced,
    },
    body: JSON.stringify({ from: 'offered' }),
  })
  assert.equal(moved.status, 200)
  const resource = await send<{ id: string }>('POST', '/v1/resources', {
    namespace: 'fixture',
    kind: 'note/v1',
    data: { text: 'kept across releases' },
  })
  const grant = await send<{ id: string }>('POST', '/v1/capabilities', {
    resourceId: resource.id,
    subject: other.principal,
    actions: ['resource:read'],
    delegable: false,
    expiresAt: new Date(madeAt + 3 * 3600_000).toISOString(),
  })
  const message = await send<{ id: string }>('POST', '/v1/messages', {
    recipient: other.principal,
    body: { note: 'fixture' },
    idempotencyKey: 'fixture-message',
  })
  await send('PUT', '/v1/home/file', {
    path: 'fixture/state.json',
    expectedRevision: 0,
    content: '{"stage":"fixture"}',
  })
  const transfer = await send<{ transferId: string }>('POST', '/v1/transfers', {
    snapshot: {
      systemPrompt: 'You are a careful agent.',
      messages: [{ role: 'user', content: 'fixture' }],
      toolState: {},
      mcpConfig: { servers: [] },
    },
  })
  const job = await hub.ctx.compute.submit(
    owner.principal,
    {
      language: 'json-expr-v1',
      program: { '+': [{ var: 'a' }, { var: 'b' }] },
      input: { a: 2, b: 3 },
      idempotencyKey: 'fixture-job',
    } as Parameters<typeof hub.ctx.compute.submit>[1],
    { trace: traced },
  )
  const offer = signOffer({
    signer: await hopSigner(owner.identity),
    aud: other.principal,
    dialog: 'ctx-fixture',
    ttlS: 300,
    now: () => hub.ctx.clock.now(),
  })
  await send('POST', '/v1/hops', { to: other.principal, handoff: { offer: offer.element } })
  // The delegate's outcome (013) arrives after the delegator's cancel: the hop stays canceled,
  // the outcome beside it.
  const hops = new HopClient(owner)
  await hops.answer(offer.element as string, 'canceled', { now: () => hub.ctx.clock.now() })
  await new HopClient(other).answer(offer.element as string, 'completed', {
    now: () => hub.ctx.clock.now(),
  })
  // A budget on a delegation (024): granted by the owner, spent and held on by the other.
  const budgeted = signOffer({
    signer: await hopSigner(owner.identity),
    aud: other.principal,
    dialog: 'ctx-fixture-budget',
    ttlS: 300,
    now: () => hub.ctx.clock.now(),
    extensions: { budget: { unit: 'usd', amountMicros: 1_000_000, rateMicrosPerSecond: 10 } },
  })
  await send('POST', '/v1/hops', { to: other.principal, handoff: { offer: budgeted.element } })
  const budgets = new BudgetClient(other)
  await budgets.spend(budgeted.digest, 250_000, { idempotencyKey: 'fixture-spend' })
  const hold = await budgets.reserve(budgeted.digest, 100_000, {
    idempotencyKey: 'fixture-hold',
    ttlSeconds: 3600,
  })
  const task = await hub.ctx.a2a.send(
    owner.principal,
    {
      tenant: other.principal,
      message: { messageId: 'fixture-task', role: 'ROLE_USER', parts: [{ text: 'fixture' }] },
      configuration: { returnImmediately: true },
    },
    undefined,
    undefined,
    { trace: traced },
  )
  return {
    version,
    madeAt,
    owner: owner.principal,
    other: other.principal,
    handoff: { id: handoff.handoff_id, ownerToken: handoff.owner_token },
    resource: resource.id,
    grant: grant.id,
    message: message.id,
    homePath: 'fixture/state.json',
    transfer: transfer.transferId,
    computeJob: job.jobId,
    hop: offer.digest,
    a2aTask: task.task.id,
    labels: { ownerAgent: 'fixture owner', otherOperator: 'fixture other' },
    trace: FIXTURE_TRACE,
    budget: { hop: budgeted.digest, spentMicros: 250_000, heldMicros: 100_000, hold: hold.holdId },
  }
}

/** Reads every record back through the hub's services, asserting each is there as it was made. */
export async function readRecords(hub: RunningHub, r: Records): Promise<void> {
  const { ctx } = hub
  const handoff = await ctx.handoffs.read(r.handoff.id, r.handoff.ownerToken)
  assert.equal(handoff.handoff_id, r.handoff.id)
  const resource = await ctx.resources.get(r.owner, r.resource)
  assert.deepEqual(resource.data, { text: 'kept across releases' })
  const grants = await ctx.grants.list(r.owner)
  assert.ok(
    grants.capabilities.some((g) => g.id === r.grant),
    'the grant',
  )
  assert.equal((await ctx.resources.get(r.other, r.resource)).id, r.resource, 'read by the grantee')
  const inbox = await ctx.messages.list(r.other, { after: 0, limit: 100 })
  assert.ok(
    inbox.messages.some((m) => m.id === r.message),
    'the message',
  )
  const home = await ctx.home.read(r.owner, r.homePath)
  assert.equal(home.content, '{"stage":"fixture"}')
  assert.equal((await ctx.transfers.get(r.owner, r.transfer)).transferId, r.transfer)
  assert.equal((await ctx.compute.get(r.owner, r.computeJob)).jobId, r.computeJob)
  assert.equal((await ctx.hops.read(r.owner, r.hop)).digest, r.hop)
  const task = (await ctx.a2a.get(r.owner, { id: r.a2aTask })) as {
    id?: string
    task?: { id: string }
  }
  assert.equal(task.id ?? task.task?.id, r.a2aTask)
  // The hub key sealed by the release that wrote the data still opens.
  await ctx.identity.hubPrivateKey()
  if (r.labels) {
    const owner = await ctx.identity.get(r.owner)
    assert.equal(owner.agentLabel, r.labels.ownerAgent)
    const other = await ctx.identity.get(r.other)
    assert.equal(other.operatorLabel, r.labels.otherOperator)
    assert.equal(other.label, r.labels.otherOperator)
  }
  if (r.budget) {
    const [ledger] = (await ctx.budgets.read(r.owner, r.budget.hop)).budgets
    assert.equal(ledger?.spentMicros, r.budget.spentMicros, 'the budget spent')
    assert.equal(ledger?.heldMicros, r.budget.heldMicros, 'the budget held')
    assert.equal(ledger?.grantedMicros, 1_000_000, 'the budget granted')
    const hop = await ctx.hops.read(r.other, r.budget.hop)
    assert.equal(hop.budget?.remainingMicros, 650_000, 'the budget remaining')
  }
  if (r.trace) {
    // Whoever reads a record continues the trace it was written in, its tracestate with it.
    const hop = await ctx.hops.read(r.owner, r.hop)
    assert.equal(hop.state, 'canceled')
    assert.equal(hop.outcome, 'completed')
    const views: [string, unknown][] = [
      ['handoff', handoff],
      ['resource', resource],
      ['grant', grants.capabilities.find((g) => g.id === r.grant)],
      ['message', inbox.messages.find((m) => m.id === r.message)],
      ['home file', home],
      ['transfer', await ctx.transfers.get(r.owner, r.transfer)],
      ['hop', hop],
    ]
    for (const [what, view] of views) {
      const { traceparent, tracestate } = view as { traceparent?: string; tracestate?: string }
      assert.deepEqual({ traceparent, tracestate }, r.trace, what)
    }
  }
}
