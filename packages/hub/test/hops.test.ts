import assert from 'node:assert/strict'
import { createPublicKey, verify } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  canonicalJson,
  createIdentity,
  fetchDiscovery,
  HopClient,
  hopSigner,
  type SignedClient,
} from '@baton/client'
import {
  createDigestRef,
  createSigner,
  grantDigest,
  type Handoff,
  handoffDigest,
  type Ref,
  signJws,
  signOffer,
  signStatus,
  toHandoff,
} from '@baton/context'
import { type GrantView, type HopView, hubGrantOctets } from '@baton/protocol'
import { ManualClock } from '../src/clock.js'
import {
  call,
  onPostgres,
  refusal,
  restartableHub,
  signedAgent,
  startTestHub,
  type TestHub,
  type TestStore,
  testStores,
} from './support.js'

const OPEN = { BATON_ADMISSION: 'open' }
const ADMIN_TOKEN = 'operator-token-for-the-hop-tests-0123456789'

interface Agent {
  principal: string
  client: SignedClient
  hops: HopClient
}

async function agent(hub: { url: string }, clock: ManualClock): Promise<Agent> {
  const client = await signedAgent(hub, { clock })
  return { principal: client.principal, client, hops: new HopClient(client) }
}

/** Checks a hub receipt against the hub key of discovery. */
async function assertReceipt(hub: { url: string }, receipt: string, want: Record<string, unknown>) {
  const discovery = await fetchDiscovery(`${hub.url}/.well-known/agent-net`)
  const [h, p, s] = receipt.split('.') as [string, string, string]
  const key = createPublicKey({ key: discovery.hubKey as never, format: 'jwk' })
  assert.equal(
    verify(null, Buffer.from(`${h}.${p}`, 'ascii'), key, Buffer.from(s, 'base64url')),
    true,
  )
  const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'))
  assert.equal(header.typ, 'baton-hop-receipt+jws')
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'))
  for (const [k, v] of Object.entries(want)) assert.deepEqual(payload[k], v, k)
}

for (const store of testStores) {
  describe(`signed handoff contexts through the hub (${store.name})`, () => {
    let hub: TestHub
    const clock = new ManualClock(Date.now())
    const now = () => clock.now()
    let assistant: Agent
    let planner: Agent
    let coder: Agent
    let outsider: Agent

    before(async () => {
      hub = await startTestHub(store, { ...OPEN, BATON_ADMIN_TOKEN: ADMIN_TOKEN }, { clock })
      assistant = await agent(hub, clock)
      planner = await agent(hub, clock)
      coder = await agent(hub, clock)
      outsider = await agent(hub, clock)
    })
    after(() => hub.close())

    /** The draft's example: the assistant hands a task to the planner, who hands part to the coder. */
    async function delegate(dialog: string) {
      const first = await assistant.hops.offer({
        to: planner.principal,
        dialog,
        task: 'task-42',
        now,
      })
      const second = await planner.hops.offer({
        to: coder.principal,
        dialog,
        task: 'task-42',
        after: first.handoff,
        now,
      })
      return { first, second }
    }

    test('offer, chain, accept and complete, each delivered with a hub receipt', async () => {
      const { first, second } = await delegate('ctx-7c1e')
      assert.equal(first.answer.retransmission, false)
      assert.equal(first.answer.hop.state, 'offered')
      assert.equal(first.answer.hop.digest, first.signed.digest)
      assert.equal(second.answer.hop.prev, first.signed.digest)
      assert.deepEqual(second.answer.hop.chain, [first.handoff.offer])

      const coderInbox = await coder.hops.inbox()
      const delivered = coderInbox.deliveries.find((d) => d.offer === second.signed.digest)!
      assert.equal(delivered.kind, 'offer')
      assert.equal(delivered.element, second.handoff.offer)
      assert.deepEqual(delivered.chain, [first.handoff.offer])
      await assertReceipt(hub, delivered.receipt, {
        kind: 'offer',
        recipient: coder.principal,
        offer: second.signed.digest,
        elementDigest: handoffDigest(second.handoff.offer),
      })

      const accepted = await coder.hops.answer(second.handoff.offer as string, 'accepted', { now })
      assert.equal(accepted.answer.hop.state, 'accepted')
      const completed = await coder.hops.answer(second.handoff.offer as string, 'completed', {
        now,
      })
      assert.equal(completed.answer.hop.state, 'completed')

      const seen = await planner.hops.read(second.signed.digest)
      assert.equal(seen.state, 'completed')
      assert.deepEqual(
        seen.statuses.map((s) => s.state),
        ['accepted', 'completed'],
      )
      assert.equal(seen.lastStatus, completed.signed.element)
      const plannerInbox = await planner.hops.inbox()
      const statuses = plannerInbox.deliveries.filter(
        (d) => d.kind === 'status' && d.offer === second.signed.digest,
      )
      assert.deepEqual(
        statuses.map((d) => d.element),
        [accepted.signed.element, completed.signed.element],
      )

      // The chain view walks prev across the hops the caller took part in.
      const plannerChain = await planner.hops.chain(second.signed.digest)
      assert.deepEqual(
        plannerChain.hops.map((h) => h.digest),
        [first.signed.digest, second.signed.digest],
      )
      const coderChain = await coder.hops.chain(second.signed.digest)
      assert.deepEqual(
        coderChain.hops.map((h) => h.digest),
        [second.signed.digest],
      )
      const assistantChain = await assistant.hops.chain(first.signed.digest)
      assert.deepEqual(
        assistantChain.hops.map((h) => h.digest),
        [first.signed.digest],
      )
    })

    test('the dashboard draws a chain hop by hop with states and receipts', async () => {
      const { first, second } = await delegate('ctx-dashboard')
      await coder.hops.answer(second.handoff.offer as string, 'accepted', { now })
      const signIn = await call(hub, 'POST', '/dashboard/session', { body: { token: ADMIN_TOKEN } })
      assert.equal(signIn.status, 200)
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!
      const chain = await call(hub, 'GET', `/dashboard/api/hops/${second.signed.digest}`, {
        headers: { cookie },
      })
      assert.equal(chain.status, 200)
      const hops = chain.body.hops as HopView[]
      assert.deepEqual(
        hops.map((h) => [h.digest, h.state, h.statuses.length]),
        [
          [first.signed.digest, 'offered', 0],
          [second.signed.digest, 'accepted', 1],
        ],
      )
      assert.ok(hops.every((h) => h.receipt.split('.').length === 3))
      const list = await call(hub, 'GET', '/dashboard/api/hops', { headers: { cookie } })
      assert.ok((list.body.hops as HopView[]).some((h) => h.digest === second.signed.digest))
      const missing = await call(hub, 'GET', `/dashboard/api/hops/${'A'.repeat(43)}`, {
        headers: { cookie },
      })
      assert.equal(missing.status, 404)
      const anonymous = await call(hub, 'GET', `/dashboard/api/hops/${second.signed.digest}`)
      assert.equal(anonymous.status, 401)
    })

    test('bad input is a 4xx with a stable code and delivers nothing', async () => {
      const before = (await coder.hops.inbox()).deliveries.length
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
      const junk = [
        'not a jws',
        'a.b.c',
        `${b64({ alg: 'none' })}.${b64({ iss: planner.principal })}.`,
        `${b64({ alg: 'EdDSA', kid: planner.principal, typ: 'x' })}.${b64([1, 2])}.AAAA`,
        `${b64({ alg: 'EdDSA' })}.${b64({ iss: 7, v: 1 })}.${'A'.repeat(86)}`,
        '.'.repeat(40),
      ]
      for (const offer of junk) {
        const r = await refusal(planner.hops.send(coder.principal, { offer }))
        assert.equal(r.code, 'hop_refused', offer)
        const s = await refusal(coder.hops.sendStatus(offer))
        assert.ok(['hop_refused', 'hop_not_found'].includes(s.code), offer)
      }
      const shapes: [string, string, unknown][] = [
        ['POST', '/v1/hops', { to: coder.principal }],
        ['POST', '/v1/hops', { to: coder.principal, handoff: { offer: 'x'.repeat(20_000) } }],
        ['POST', '/v1/hops', { to: coder.principal, handoff: { offer: 'a.b.c', chain: 'no' } }],
        ['POST', '/v1/hops', { to: coder.principal, handoff: { offer: 'a.b.c' }, extra: 1 }],
        ['POST', '/v1/hops/statuses', { status: 42 }],
        ['GET', '/v1/hops/inbox?after=abc', undefined],
        ['GET', '/v1/hops/inbox?limit=1000', undefined],
        ['GET', `/v1/hops/${'x'.repeat(200)}`, undefined],
        ['GET', '/v1/hops/%00/chain', undefined],
      ]
      for (const [method, p, body] of shapes) {
        const res = await planner.client.request<{ code?: string }>(method, p, body as object)
        assert.ok(res.status >= 400 && res.status < 500, `${method} ${p}: ${res.status}`)
        assert.equal(typeof res.body.code, 'string')
      }
      assert.equal((await coder.hops.inbox()).deliveries.length, before)
    })

    test('nothing is readable by a third party: it answers like a missing hop', async () => {
      const { first, second } = await delegate('ctx-private')
      const missing = 'A'.repeat(43)
      for (const [who, digest] of [
        [outsider, first.signed.digest],
        [outsider, second.signed.digest],
        [assistant, second.signed.digest],
        [outsider, missing],
      ] as const) {
        const read = await refusal(who.hops.read(digest))
        const chain = await refusal(who.hops.chain(digest))
        assert.equal(read.code, 'hop_not_found')
        assert.equal(chain.code, 'hop_not_found')
      }
      const status = signStatus({
        signer: await hopSigner(outsider.client.identity),
        offer: {
          claims: { ...first.signed.claims, aud: outsider.principal },
          digest: first.signed.digest,
        },
        state: 'accepted',
        now,
      })
      const answered = await refusal(outsider.hops.sendStatus(status.element as string))
      assert.equal(answered.code, 'hop_not_found')
    })

    test('a retransmission of identical octets is answered with the last status, once delivered', async () => {
      const { second } = await delegate('ctx-retransmit')
      const accepted = await coder.hops.answer(second.handoff.offer as string, 'accepted', { now })
      const again = await planner.hops.send(coder.principal, second.handoff)
      assert.equal(again.retransmission, true)
      assert.equal(again.hop.state, 'accepted')
      assert.equal(again.hop.lastStatus, accepted.signed.element)
      const inbox = await coder.hops.inbox()
      assert.equal(
        inbox.deliveries.filter((d) => d.kind === 'offer' && d.offer === second.signed.digest)
          .length,
        1,
      )
      // The same status twice is one status.
      const repeat = await coder.hops.sendStatus(accepted.signed.element as string)
      assert.equal(repeat.retransmission, true)
      assert.equal((await coder.hops.read(second.signed.digest)).statuses.length, 1)
    })

    test('equivocation is refused and reported to both sides', async () => {
      const { second } = await delegate('ctx-equivocate')
      const signer = await hopSigner(planner.client.identity)
      const other = signOffer({
        signer,
        aud: coder.principal,
        dialog: 'ctx-equivocate',
        task: 'task-43',
        hop: second.signed.claims.hop,
        prev: second.handoff.chain![0]!,
        now,
      })
      const handoff: Handoff = { offer: other.element, chain: second.handoff.chain! }
      const r = await refusal(planner.hops.send(coder.principal, handoff))
      assert.equal(r.code, 'hop_refused')
      assert.equal(r.context.reason, 'equivocation')
      assert.equal(r.context.firstDigest, second.signed.digest)
      for (const side of [planner, coder]) {
        const inbox = await side.hops.inbox()
        const notice = inbox.deliveries.find(
          (d) => d.kind === 'equivocation' && d.offer === second.signed.digest,
        )
        assert.equal(notice?.element, other.element)
      }
      assert.ok((await coder.hops.read(second.signed.digest)).flags.includes('equivocation'))
      await assert.rejects(coder.hops.read(other.digest), { code: 'hop_not_found' })
    })

    test('a canceled status propagates down the chain', async () => {
      const { first, second } = await delegate('ctx-cancel')
      await coder.hops.answer(second.handoff.offer as string, 'accepted', { now })
      const canceled = await assistant.hops.answer(first.handoff.offer as string, 'canceled', {
        now,
      })
      assert.equal(canceled.answer.hop.state, 'canceled')
      assert.deepEqual(canceled.answer.propagated, [second.signed.digest])
      const downstream = await coder.hops.read(second.signed.digest)
      assert.ok(downstream.flags.includes('upstream-canceled'))
      assert.equal(downstream.state, 'accepted')
      const inbox = await coder.hops.inbox()
      const notice = inbox.deliveries.find(
        (d) => d.kind === 'upstream-canceled' && d.offer === second.signed.digest,
      )
      assert.equal(notice?.element, canceled.signed.element)
      // The planner, told by the status itself, cancels its own offer; the coder's hop ends.
      const own = await planner.hops.answer(second.handoff.offer as string, 'canceled', { now })
      assert.equal(own.answer.hop.state, 'canceled')
    })

    test('three agents: a cancel raced with a late completion reads as the cancel, the late outcome visible to both sides', async () => {
      const { first, second } = await delegate('ctx-race')
      const upstream = first.handoff.offer as string
      const downstream = second.handoff.offer as string
      await coder.hops.answer(downstream, 'accepted', { now })
      // The assistant cancels before the planner has answered; the planner, already at work,
      // answers accepted and then completed, and its coder completes too after the planner's cancel.
      const cancel = await assistant.hops.answer(upstream, 'canceled', { now })
      assert.equal(cancel.answer.changed, true)
      const lateAccept = await planner.hops.answer(upstream, 'accepted', { now })
      assert.equal(lateAccept.answer.changed, false)
      assert.equal(lateAccept.answer.hop.state, 'canceled')
      const lateDone = await planner.hops.answer(upstream, 'completed', { now })
      assert.equal(lateDone.answer.changed, true)
      assert.equal(lateDone.answer.hop.state, 'canceled')
      assert.equal(lateDone.answer.hop.outcome, 'completed')
      await planner.hops.answer(downstream, 'canceled', { now })
      const coderDone = await coder.hops.answer(downstream, 'completed', { now })
      assert.equal(coderDone.answer.changed, true)

      for (const [hop, delegator, delegatee] of [
        [first.signed.digest, assistant, planner],
        [second.signed.digest, planner, coder],
      ] as const) {
        for (const side of [delegator, delegatee]) {
          const seen = await side.hops.read(hop)
          assert.equal(seen.state, 'canceled')
          assert.equal(seen.outcome, 'completed')
          assert.ok(seen.flags.includes('outcome-after-cancel'))
          assert.ok(seen.statuses.some((s) => s.state === 'canceled'))
        }
      }
      const told = (await assistant.hops.inbox()).deliveries.filter(
        (d) => d.kind === 'status' && d.offer === first.signed.digest,
      )
      assert.deepEqual(
        told.map((d) => d.element),
        [lateAccept.signed.element, lateDone.signed.element],
      )
      // The late outcome is the delegate's only one: another is a conflict, which says both.
      const r = await refusal(planner.hops.answer(upstream, 'failed', { now }))
      assert.equal(r.code, 'hop_state_conflict')
      assert.deepEqual([r.context.state, r.context.outcome], ['canceled', 'completed'])
    })

    test('a status that changes nothing says so', async () => {
      const { second } = await delegate('ctx-unchanged')
      const offer = second.handoff.offer as string
      const post = (status: unknown) =>
        coder.client.request<{ changed: boolean; hop: HopView; retransmission: boolean }>(
          'POST',
          '/v1/hops/statuses',
          { status },
        )
      const nonterminal = await coder.hops.answer(offer, 'rejected', { reason: 'stale', now })
      assert.equal(nonterminal.answer.changed, false)
      const accepted = await coder.hops.answer(offer, 'accepted', { now })
      assert.equal(accepted.answer.changed, true)
      const again = await post(accepted.signed.element)
      assert.equal(again.status, 200)
      assert.deepEqual([again.body.changed, again.body.retransmission], [false, true])
      const done = await coder.hops.answer(offer, 'completed', { now })
      assert.deepEqual([done.answer.changed, done.answer.hop.outcome], [true, 'completed'])
      clock.advance(1000) // a new accepted, not the identical octets again
      const lateAccept = await coder.hops.answer(offer, 'accepted', { now })
      assert.deepEqual(
        [lateAccept.answer.changed, lateAccept.answer.retransmission],
        [false, false],
      )
      assert.equal(lateAccept.answer.hop.state, 'completed')
      // A cancel after the outcome is recorded and flagged, and changes neither state nor outcome.
      const cancel = await planner.hops.answer(offer, 'canceled', { now })
      assert.equal(cancel.answer.changed, false)
      assert.equal(cancel.answer.hop.state, 'completed')
      assert.ok(cancel.answer.hop.flags.includes('canceled-after-end'))
    })

    test('a malformed element with a good signature is refused as malformed, not bad-signature', async () => {
      const plannerSigner = await hopSigner(planner.client.identity)
      const good = signOffer({ signer: plannerSigner, aud: coder.principal, dialog: 'ctx-m', now })
      const sign = (typ: string, claims: object) =>
        signJws(
          { alg: plannerSigner.alg, kid: plannerSigner.kid, typ },
          Buffer.from(JSON.stringify(claims), 'utf8'),
          plannerSigner.alg,
          plannerSigner.key,
        ) as string
      const fiveChars = sign('handoff-offer+jwt', { ...good.claims, hop: 'abcde' })
      const r = await refusal(planner.hops.send(coder.principal, { offer: fiveChars }))
      assert.deepEqual(
        [r.code, r.context.reason, r.context.check],
        ['hop_refused', 'malformed', 'signature'],
      )
      const tampered = `${fiveChars.slice(0, -6)}${fiveChars.at(-6) === 'A' ? 'B' : 'A'}${fiveChars.slice(-5)}`
      const t = await refusal(planner.hops.send(coder.principal, { offer: tampered }))
      assert.equal(t.context.reason, 'bad-signature')
      // A status with a 5-character hop, signed well by a party of a real hop, is malformed too.
      const { second } = await delegate('ctx-malformed')
      const coderSigner = await hopSigner(coder.client.identity)
      const status = signJws(
        { alg: coderSigner.alg, kid: coderSigner.kid, typ: 'handoff-status+jwt' },
        Buffer.from(
          JSON.stringify({
            v: 1,
            typ: 'status',
            hop: 'abcde',
            offer: second.signed.digest,
            iss: coder.principal,
            aud: planner.principal,
            iat: Math.floor(now() / 1000),
            state: 'accepted',
          }),
          'utf8',
        ),
        coderSigner.alg,
        coderSigner.key,
      ) as string
      const s = await refusal(coder.hops.sendStatus(status))
      assert.deepEqual([s.code, s.context.reason], ['hop_refused', 'malformed'])
      assert.equal((await planner.hops.read(second.signed.digest)).state, 'offered')
    })

    test('lifecycle: stale and replay rejections are not terminal; a second answer conflicts', async () => {
      const { second } = await delegate('ctx-lifecycle')
      const offer = second.handoff.offer as string
      const nonterminal = await coder.hops.answer(offer, 'rejected', { reason: 'replay', now })
      assert.equal(nonterminal.answer.hop.state, 'offered')
      await coder.hops.answer(offer, 'accepted', { now })
      const r = await refusal(coder.hops.answer(offer, 'rejected', { reason: 'policy', now }))
      assert.equal(r.code, 'hop_state_conflict')
      assert.equal(r.context.state, 'accepted')
      // Only the delegator may cancel: the delegate's own cancel is addressed to itself.
      const wrong = signStatus({
        signer: await hopSigner(coder.client.identity),
        offer: {
          claims: { ...second.signed.claims, iss: coder.principal },
          digest: second.signed.digest,
        },
        state: 'canceled',
        now,
      })
      const r2 = await refusal(coder.hops.sendStatus(wrong.element as string))
      assert.equal(r2.code, 'hop_refused')
      assert.equal(r2.context.reason, 'wrong-audience')
    })

    test('an offer with no status expires at the delegator; a later status replaces it', async () => {
      const { second } = await delegate('ctx-expiry')
      clock.advance(10 * 60_000)
      assert.equal((await planner.hops.read(second.signed.digest)).state, 'expired')
      const late = await coder.hops.answer(second.handoff.offer as string, 'completed', { now })
      assert.equal(late.answer.hop.state, 'completed')
    })

    test('refs naming a resource version or a transfer are checked over the stored octets', async () => {
      const data = { plan: ['parse', 'patch'], n: 1 }
      const made = await assistant.client.call<{ id: string; version: number }>(
        'POST',
        '/v1/resources',
        {
          namespace: 'plans',
          kind: 'plan',
          data,
        },
      )
      const snapshot = {
        systemPrompt: 'You are the coder.',
        messages: [{ role: 'user', content: 'patch it' }],
        toolState: {},
        mcpConfig: { servers: [] },
      }
      const transfer = await assistant.client.call<{ transferId: string; checksum: string }>(
        'POST',
        '/v1/transfers',
        { snapshot },
      )
      const hidden = await outsider.client.call<{ id: string }>('POST', '/v1/resources', {
        namespace: 'plans',
        kind: 'plan',
        data,
      })
      const resourceRef = {
        ...createDigestRef(JSON.stringify(data)),
        resource: made.id,
        version: 1,
      }
      const transferRef = {
        ...createDigestRef(canonicalJson(snapshot)),
        transfer: transfer.transferId,
      }
      assert.equal(`sha-256:${transferRef.digest}`, transfer.checksum)
      const handoffRef = { ...createDigestRef('payload'), handoff: 'h_unknown' }
      const plainRef = createDigestRef('a prompt')
      const otherKind = { kind: 'scitt-receipt', digest: createDigestRef('receipt').digest }
      const offered = await assistant.hops.offer({
        to: planner.principal,
        dialog: 'ctx-refs',
        refs: [resourceRef, transferRef, handoffRef, plainRef, otherKind],
        now,
      })
      assert.deepEqual(
        offered.answer.hop.refs.map((r) => r.outcome),
        ['verified', 'verified', 'unverifiable', 'unverifiable', 'not-checked'],
      )
      assert.deepEqual(
        (await planner.hops.read(offered.signed.digest)).refs.map((r) => r.outcome),
        ['verified', 'verified', 'unverifiable', 'unverifiable', 'not-checked'],
      )
      const mismatch = await refusal(
        assistant.hops.offer({
          to: planner.principal,
          dialog: 'ctx-refs',
          refs: [{ ...resourceRef, digest: createDigestRef('other').digest }],
          now,
        }),
      )
      assert.equal(mismatch.context.reason, 'ref-mismatch')
      for (const ref of [
        { ...resourceRef, version: 2 },
        { ...resourceRef, resource: hidden.id },
        { ...transferRef, transfer: 'tr_AAAAAAAAAAAAAAAAAAAAAA' },
      ]) {
        const r = await refusal(
          assistant.hops.offer({ to: planner.principal, dialog: 'ctx-refs', refs: [ref], now }),
        )
        assert.equal(r.code, 'hop_refused')
        assert.equal(r.context.reason, 'unverifiable-ref')
      }
    })

    test("an offer's grant is checked against the grants its delegator issued or holds", async () => {
      const resource = async (owner: Agent) =>
        owner.client.call<{ id: string }>('POST', '/v1/resources', {
          namespace: 'plans',
          kind: 'plan',
          data: { step: 1 },
        })
      const issue = (owner: Agent, resourceId: string, subject: string, ttlMs: number) =>
        owner.client.call<GrantView>('POST', '/v1/capabilities', {
          resourceId,
          subject,
          actions: ['resource:read'],
          expiresAt: new Date(clock.now() + ttlMs).toISOString(),
        })
      const mine = await resource(assistant)
      const theirs = await resource(outsider)
      const issued = await issue(assistant, mine.id, planner.principal, 3_600_000)
      const short = await issue(assistant, mine.id, planner.principal, 60_000)
      const hidden = await issue(outsider, theirs.id, coder.principal, 3_600_000)
      const digestOf = (g: GrantView) => grantDigest(hubGrantOctets(g))
      const offer = (grant: string, refs?: Ref[]) =>
        assistant.hops.offer({
          to: planner.principal,
          dialog: 'ctx-grant',
          grant,
          ...(refs === undefined ? {} : { refs }),
          now,
        })

      const bound = await offer(digestOf(issued))
      assert.deepEqual(bound.answer.hop.grant, {
        digest: digestOf(issued),
        outcome: 'verified',
        status: 'active',
      })
      assert.deepEqual((await planner.hops.read(bound.signed.digest)).grant, bound.answer.hop.grant)
      // Held, not issued: the planner's own offer onward binds the grant it holds.
      const onward = await planner.hops.offer({
        to: coder.principal,
        dialog: 'ctx-grant',
        grant: digestOf(issued),
        after: bound.handoff,
        now,
      })
      assert.equal(onward.answer.hop.grant?.outcome, 'verified')

      await assistant.client.call('DELETE', `/v1/capabilities/${issued.id}`)
      assert.deepEqual((await planner.hops.read(bound.signed.digest)).grant, {
        digest: digestOf(issued),
        outcome: 'verified',
        status: 'revoked',
      })
      const lapsing = await offer(digestOf(short))
      assert.equal(lapsing.answer.hop.grant?.status, 'active')
      clock.advance(61_000)
      assert.deepEqual((await assistant.hops.read(lapsing.signed.digest)).grant, {
        digest: digestOf(short),
        outcome: 'verified',
        status: 'expired',
      })

      // A grant the delegator may not see answers exactly like a digest of nothing at all.
      const unseen = await offer(digestOf(hidden))
      const nothing = await offer(createDigestRef('no such grant').digest)
      assert.deepEqual(unseen.answer.hop.grant, {
        digest: digestOf(hidden),
        outcome: 'unverifiable',
      })
      assert.deepEqual(nothing.answer.hop.grant, {
        digest: createDigestRef('no such grant').digest,
        outcome: 'unverifiable',
      })
      assert.equal(unseen.answer.hop.state, nothing.answer.hop.state)
      const plain = await assistant.hops.offer({ to: planner.principal, dialog: 'ctx-grant', now })
      assert.equal(plain.answer.hop.grant, null)

      // A `digest` ref naming a grant is checked over its terms, like a resource version.
      const grantRef = (g: GrantView) => ({ ...createDigestRef(hubGrantOctets(g)), grant: g.id })
      const named = await offer(digestOf(short), [grantRef(short)])
      assert.deepEqual(
        named.answer.hop.refs.map((r) => r.outcome),
        ['verified'],
      )
      const mismatch = await refusal(
        offer(digestOf(short), [{ ...grantRef(short), digest: digestOf(hidden) }]),
      )
      assert.equal(mismatch.context.reason, 'ref-mismatch')
      const refusals = []
      for (const ref of [grantRef(hidden), { ...grantRef(short), grant: 'gr_nosuchgrant' }]) {
        refusals.push(await refusal(offer(digestOf(short), [ref])))
      }
      for (const r of refusals) {
        assert.equal(r.code, 'hop_refused')
        assert.equal(r.context.reason, 'unverifiable-ref')
        assert.equal(r.context.check, 'refs')
      }
    })

    test('every reason code the checks can reach is answered through the hub', async () => {
      const reasons = new Map<string, string>()
      const expect = async (name: string, p: Promise<unknown>) => {
        const r = await refusal(p)
        assert.equal(r.code, 'hop_refused', name)
        reasons.set(name, r.context.reason as string)
      }
      const plannerSigner = await hopSigner(planner.client.identity)
      const base = { signer: plannerSigner, aud: coder.principal, dialog: 'ctx-reasons', now }

      const good = signOffer(base).element as string
      const [h, p] = good.split('.')
      const tampered = `${h}.${p}.${'A'.repeat(86)}`
      await expect('bad-signature', planner.hops.send(coder.principal, { offer: tampered }))

      // A kid other than the did:key names no trusted key.
      const thumbKid = await createSigner({
        iss: planner.principal,
        key: planner.client.identity.privateKey,
      })
      await expect(
        'untrusted-key',
        planner.hops.send(coder.principal, {
          offer: signOffer({ ...base, signer: thumbKid }).element,
        }),
      )
      // A signer that is not an admitted principal is untrusted, in the chain too.
      const stranger = createIdentity(hub.url)
      const strangerSigner = await hopSigner(stranger)
      const upstream = signOffer({ ...base, signer: strangerSigner, aud: planner.principal })
      await expect(
        'untrusted-key (chain)',
        planner.hops.send(coder.principal, {
          offer: signOffer({ ...base, prev: upstream.element }).element,
          chain: [upstream.element],
        }),
      )
      await expect(
        'wrong-audience',
        planner.hops.send(outsider.principal, { offer: signOffer(base).element }),
      )
      // seed 003: the 300-second maximum lifetime is part of freshness.
      await expect(
        'stale',
        planner.hops.send(coder.principal, { offer: signOffer({ ...base, ttlS: 400 }).element }),
      )
      await expect(
        'stale (expired)',
        planner.hops.send(coder.principal, {
          offer: signOffer({ ...base, iat: Math.floor(now() / 1000) - 1000 }).element,
        }),
      )
      // An offer refused after the replay check was remembered: its retransmission is `replay`.
      const first = await assistant.hops.offer({
        to: planner.principal,
        dialog: 'ctx-reasons',
        now,
      })
      const broken = signOffer({ ...base, prev: signOffer(base).element })
      const brokenHandoff = { offer: broken.element, chain: [first.handoff.offer] }
      await expect('broken-chain', planner.hops.send(coder.principal, brokenHandoff))
      await expect('replay', planner.hops.send(coder.principal, brokenHandoff))
      // The coder hands back to the assistant, who appears earlier in the chain.
      const second = await planner.hops.offer({
        to: coder.principal,
        dialog: 'ctx-reasons',
        after: first.handoff,
        now,
      })
      const coderSigner = await hopSigner(coder.client.identity)
      const back = signOffer({
        signer: coderSigner,
        aud: assistant.principal,
        dialog: 'ctx-reasons',
        prev: second.handoff.offer,
        now,
      })
      await expect(
        'cycle',
        coder.hops.send(
          assistant.principal,
          toHandoff(back, { after: second.handoff, chain: true }),
        ),
      )
      await expect(
        'too-deep',
        planner.hops.send(coder.principal, {
          offer: signOffer(base).element,
          chain: Array.from({ length: 16 }, () => first.handoff.offer as string),
        }),
      )
      // The sender of an offer must be its iss.
      await expect(
        'policy',
        coder.hops.send(planner.principal, {
          offer: signOffer({ ...base, aud: planner.principal }).element,
        }),
      )
      assert.deepEqual(Object.fromEntries(reasons), {
        'bad-signature': 'bad-signature',
        'untrusted-key': 'untrusted-key',
        'untrusted-key (chain)': 'untrusted-key',
        'wrong-audience': 'wrong-audience',
        stale: 'stale',
        'stale (expired)': 'stale',
        'broken-chain': 'broken-chain',
        replay: 'replay',
        cycle: 'cycle',
        'too-deep': 'too-deep',
        policy: 'policy',
      })
    })

    test('a signer suspended between two checks is refused at once, and trusted again once approved', async () => {
      const [a, b, c] = [await agent(hub, clock), await agent(hub, clock), await agent(hub, clock)]
      const dialog = 'ctx-admission'
      const first = await a.hops.offer({ to: b.principal, dialog, now })
      const bSigner = await hopSigner(b.client.identity)
      const chained = () =>
        toHandoff(
          signOffer({ signer: bSigner, aud: c.principal, dialog, prev: first.handoff.offer, now }),
          { after: first.handoff, chain: true },
        )
      const check = () => hub.ctx.hops.check(b.principal, c.principal, chained())
      assert.equal((await check()).ok, true)
      for (const [decision, trusted] of [
        ['suspend', false],
        ['approve', true],
        ['reject', false],
      ] as const) {
        await hub.ctx.identity.decide(a.principal, decision)
        const r = await check()
        if (trusted) assert.equal(r.ok, true, decision)
        else {
          assert.equal(!r.ok && r.reason, 'untrusted-key', decision)
          assert.equal(!r.ok && r.check, 'chain', decision)
          assert.equal(!r.ok && r.index, 0, decision)
        }
      }
      // the same refusal through the hub's face
      const refused = await refusal(b.hops.send(c.principal, chained()))
      assert.equal(refused.code, 'hop_refused')
      assert.equal(refused.context.reason, 'untrusted-key')
    })

    test('the same chain checked again after a suspension is refused at once', async () => {
      const [a, b, c] = [await agent(hub, clock), await agent(hub, clock), await agent(hub, clock)]
      const dialog = 'ctx-admission-same'
      const first = await a.hops.offer({ to: b.principal, dialog, now })
      const bSigner = await hopSigner(b.client.identity)
      const offer = signOffer({
        signer: bSigner,
        aud: c.principal,
        dialog,
        prev: first.handoff.offer,
        now,
      })
      // identical octets each time: the parse is reused, the admission never is
      const same = toHandoff(offer, { after: first.handoff, chain: true })
      const check = () => hub.ctx.hops.check(b.principal, c.principal, same)
      assert.equal((await check()).ok, true)
      await hub.ctx.identity.decide(a.principal, 'suspend')
      const r = await check()
      assert.equal(!r.ok && r.reason, 'untrusted-key')
      assert.equal(!r.ok && r.index, 0)
      await hub.ctx.identity.decide(a.principal, 'approve')
      assert.equal((await check()).ok, true)
      await hub.ctx.identity.decide(b.principal, 'suspend')
      const current = await check()
      assert.equal(!current.ok && current.reason, 'untrusted-key')
      assert.equal(!current.ok && current.check, 'signature')
    })

    test('several failing elements answer the reason the sequential order gives', async () => {
      const a = await agent(hub, clock)
      const b = await agent(hub, clock)
      const c = await agent(hub, clock)
      const d = await agent(hub, clock)
      const dialog = 'ctx-order'
      const one = await a.hops.offer({ to: b.principal, dialog, now })
      const two = await b.hops.offer({ to: c.principal, dialog, after: one.handoff, now })
      const cSigner = await hopSigner(c.client.identity)
      const chain = [one.handoff.offer, two.handoff.offer] as string[]
      const badSig = (e: string) => `${e.slice(0, -3)}${e.endsWith('AAA') ? 'BBA' : 'AAA'}`
      const stranger = await hopSigner(createIdentity(hub.url))
      const untrusted = signOffer({ signer: stranger, aud: c.principal, dialog, now })
        .element as string
      const send = (elements: string[], offer?: string) =>
        refusal(
          c.hops.send(d.principal, {
            offer:
              offer ??
              (signOffer({ signer: cSigner, aud: d.principal, dialog, prev: chain[1], now })
                .element as string),
            chain: elements,
          }),
        )
      const cases: [string, () => Promise<{ context: Record<string, unknown> }>, object][] = [
        [
          'two bad signatures',
          () => send([badSig(chain[0]!), badSig(chain[1]!)]),
          { reason: 'bad-signature', check: 'chain', index: 0 },
        ],
        [
          'a bad signature, then an untrusted key',
          () => send([badSig(chain[0]!), untrusted]),
          { reason: 'bad-signature', check: 'chain', index: 0 },
        ],
        [
          'an untrusted key, then a bad signature',
          () => send([untrusted, badSig(chain[1]!)]),
          { reason: 'untrusted-key', check: 'chain', index: 0 },
        ],
        [
          'malformed, then a bad signature',
          () => send(['a.b', badSig(chain[1]!)]),
          { reason: 'bad-signature', check: 'chain', index: 0 },
        ],
        [
          'too deep, with bad signatures',
          () => send(Array.from({ length: 16 }, () => badSig(chain[0]!))),
          { reason: 'too-deep', check: 'chain', index: 16 },
        ],
        [
          'a bad current offer before a bad chain',
          () =>
            send(
              [badSig(chain[0]!), chain[1]!],
              badSig(
                signOffer({ signer: cSigner, aud: d.principal, dialog, prev: chain[1], now })
                  .element as string,
              ),
            ),
          { reason: 'bad-signature', check: 'signature' },
        ],
      ]
      for (const [name, send, want] of cases) {
        const { context } = await send()
        const got = { reason: context.reason, check: context.check, index: context.index }
        assert.deepEqual(got, { index: undefined, ...want }, name)
      }
    })
  })

  describe(`the hop replay store is shared and durable (${store.name})`, () => {
    test('a retransmission after a restart and on another instance is still a retransmission', async () => {
      const clock = new ManualClock(Date.now())
      const now = () => clock.now()
      const db = await restartableHub(store, OPEN, clock)
      let one = await db.start()
      const planner = await agent(one, clock)
      const coder = await agent(one, clock)
      const sent = await planner.hops.offer({ to: coder.principal, dialog: 'ctx-restart', now })
      const signer = await hopSigner(planner.client.identity)
      const equivocating = signOffer({
        signer,
        aud: coder.principal,
        dialog: 'ctx-restart',
        task: 'another task',
        hop: sent.signed.claims.hop,
        now,
      })
      await one.stop()
      one = await db.start()
      const instances = [one]
      if (store.name === 'postgres') instances.push(await db.start())
      try {
        for (const hub of instances) {
          const p = new HopClient(await signedAgentAs(hub, planner, clock))
          const again = await p.send(coder.principal, sent.handoff)
          assert.equal(again.retransmission, true)
          assert.equal(again.hop.digest, sent.signed.digest)
          await assert.rejects(
            p.send(coder.principal, { offer: equivocating.element }),
            (e: unknown) => {
              const err = e as { code: string; context: { reason: string } }
              return err.code === 'hop_refused' && err.context.reason === 'equivocation'
            },
          )
        }
      } finally {
        for (const hub of instances) await hub.stop()
        await db.drop()
      }
    })
  })
}

type Instance = Awaited<ReturnType<Awaited<ReturnType<typeof restartableHub>>['start']>>

/** Two hub instances on one fresh PostgreSQL database, with one manual clock; stopped after. */
async function onTwoInstances(
  store: TestStore,
  run: (h: { a: Instance; b: Instance; clock: ManualClock; now: () => number }) => Promise<void>,
): Promise<void> {
  const clock = new ManualClock(Date.now())
  const db = await restartableHub(store, OPEN, clock)
  const a = await db.start()
  const b = await db.start()
  try {
    await run({ a, b, clock, now: () => clock.now() })
  } finally {
    await a.stop()
    await b.stop()
    await db.drop()
  }
}

describe('statuses racing on two instances (postgres)', { skip: onPostgres.skip }, () => {
  const store = onPostgres.store!
  test('accepted and completed sent at once to two instances both count', () =>
    onTwoInstances(store, async ({ a, b, clock, now }) => {
      const planner = await agent(a, clock)
      const coder = await agent(a, clock)
      const coderOnB = new HopClient(await signedAgentAs(b, coder, clock))
      const offers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          planner.hops.offer({ to: coder.principal, dialog: 'ctx-race', task: `t${i}`, now }),
        ),
      )
      const signer = await hopSigner(coder.client.identity)
      await Promise.all(
        offers.flatMap((o) => [
          coder.hops.sendStatus(
            signStatus({ signer, offer: o.signed.element, state: 'accepted', now })
              .element as string,
          ),
          coderOnB.sendStatus(
            signStatus({ signer, offer: o.signed.element, state: 'completed', now })
              .element as string,
          ),
        ]),
      )
      for (const o of offers) {
        const hop = await planner.hops.read(o.signed.digest)
        assert.equal(hop.state, 'completed')
        assert.equal(hop.statuses.length, 2)
      }
    }))
})

// seed 003: two offers with the same sender and hop but different octets are equivocation; the
// replay record commits with the delivery, so two instances racing on one (iss, hop) decide it
// inside their transactions: exactly one offer is delivered, the other is equivocation.
describe('offers racing on two instances (postgres)', { skip: onPostgres.skip }, () => {
  const store = onPostgres.store!
  test('one (iss, hop) with different octets at once: one delivered, one equivocation', () =>
    onTwoInstances(store, async ({ a, b, clock, now }) => {
      const planner = await agent(a, clock)
      const coder = await agent(a, clock)
      const plannerOnB = new HopClient(await signedAgentAs(b, planner, clock))
      const signer = await hopSigner(planner.client.identity)
      const pairs = Array.from({ length: 12 }, (_, i) => {
        const first = signOffer({
          signer,
          aud: coder.principal,
          dialog: 'ctx-race',
          task: `a${i}`,
          now,
        })
        const other = signOffer({
          signer,
          aud: coder.principal,
          dialog: 'ctx-race',
          task: `b${i}`,
          hop: first.claims.hop,
          now,
        })
        return [first, other] as const
      })
      const answers = await Promise.all(
        pairs.map(([first, other]) =>
          Promise.allSettled([
            planner.hops.send(coder.principal, { offer: first.element }),
            plannerOnB.send(coder.principal, { offer: other.element }),
          ]),
        ),
      )
      for (const [i, settled] of answers.entries()) {
        const delivered = settled.filter((r) => r.status === 'fulfilled')
        const refused = settled.filter((r) => r.status === 'rejected')
        assert.equal(delivered.length, 1, `pair ${i}: one delivered`)
        assert.equal(refused.length, 1, `pair ${i}: one refused`)
        const hop = (delivered[0] as PromiseFulfilledResult<{ hop: HopView }>).value.hop
        const err = (refused[0] as PromiseRejectedResult).reason as {
          code: string
          context: Record<string, unknown>
        }
        assert.equal(err.code, 'hop_refused')
        assert.equal(err.context.reason, 'equivocation')
        assert.equal(err.context.firstDigest, hop.digest)
        assert.ok(pairs[i]!.some((o) => o.digest === hop.digest))
        const rows = await a.ctx.database.db
          .selectFrom('hops')
          .select('digest')
          .where('iss', '=', planner.principal)
          .where('hop', '=', pairs[i]![0].claims.hop)
          .execute()
        assert.deepEqual(rows, [{ digest: hop.digest }], `pair ${i}: one hop kept`)
      }
    }))
})

/** The same identity, signing to another hub instance on the same database. */
async function signedAgentAs(hub: { url: string }, who: Agent, clock: ManualClock) {
  const { SignedClient } = await import('@baton/client')
  return SignedClient.connect(`${hub.url}/.well-known/agent-net`, who.client.identity, {
    maxRetryWaitMs: 0,
    now: () => Math.floor(clock.now() / 1000),
  })
}
