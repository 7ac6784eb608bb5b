// One record of each feature, written through a hub's HTTP faces and services (the release
// fixtures are made with it, by scripts/make-fixture.ts) and read back through the services of
// whichever hub opens that data later.
import assert from 'node:assert/strict'
import { hopSigner } from '@baton/client'
import { signOffer } from '@baton/context'
import type { RunningHub } from '../src/hub.js'
import { signedAgent } from './support.js'

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
}

/** Makes one record of each feature on a hub with open admission and compute enabled. */
export async function seedRecords(hub: RunningHub, version: string): Promise<Records> {
  const madeAt = hub.ctx.clock.now()
  const owner = await signedAgent(hub)
  const other = await signedAgent(hub)
  const created = await fetch(`${hub.url}/services/v1/handoff`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payload: { task: 'fixture' } }),
  })
  assert.equal(created.status, 201)
  const handoff = (await created.json()) as { handoff_id: string; owner_token: string }
  const resource = await owner.call<{ id: string }>('POST', '/v1/resources', {
    namespace: 'fixture',
    kind: 'note/v1',
    data: { text: 'kept across releases' },
  })
  const grant = await owner.call<{ id: string }>('POST', '/v1/capabilities', {
    resourceId: resource.id,
    subject: other.principal,
    actions: ['resource:read'],
    delegable: false,
    expiresAt: new Date(madeAt + 3 * 3600_000).toISOString(),
  })
  const message = await owner.call<{ id: string }>('POST', '/v1/messages', {
    recipient: other.principal,
    body: { note: 'fixture' },
    idempotencyKey: 'fixture-message',
  })
  await owner.call('PUT', '/v1/home/file', {
    path: 'fixture/state.json',
    expectedRevision: 0,
    content: '{"stage":"fixture"}',
  })
  const transfer = await owner.call<{ transferId: string }>('POST', '/v1/transfers', {
    snapshot: {
      systemPrompt: 'You are a careful agent.',
      messages: [{ role: 'user', content: 'fixture' }],
      toolState: {},
      mcpConfig: { servers: [] },
    },
  })
  const job = await hub.ctx.compute.submit(owner.principal, {
    language: 'json-expr-v1',
    program: { '+': [{ var: 'a' }, { var: 'b' }] },
    input: { a: 2, b: 3 },
    idempotencyKey: 'fixture-job',
  } as Parameters<typeof hub.ctx.compute.submit>[1])
  const offer = signOffer({
    signer: await hopSigner(owner.identity),
    aud: other.principal,
    dialog: 'ctx-fixture',
    ttlS: 300,
    now: () => hub.ctx.clock.now(),
  })
  await owner.call('POST', '/v1/hops', { to: other.principal, handoff: { offer: offer.element } })
  const task = await hub.ctx.a2a.send(owner.principal, {
    tenant: other.principal,
    message: { messageId: 'fixture-task', role: 'ROLE_USER', parts: [{ text: 'fixture' }] },
    configuration: { returnImmediately: true },
  })
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
}
