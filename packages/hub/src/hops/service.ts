import { createHash, sign } from 'node:crypto'
import {
  DEFAULT_SKEW_MS,
  grantDigest,
  type Handoff,
  type HandoffVerification,
  type HopRecord,
  type HopStanding,
  isStatusClaims,
  nextHopState,
  type ParsedElement,
  type RefPolicy,
  type RefResult,
  readElement,
  type StatusClaims,
  type TrustedKey,
  TrustStore,
  verifyHandoff,
  verifyStatus,
} from '@baton/context'
import {
  type AnsweredHopView,
  type AnswerHandoffInput,
  BatonError,
  type GrantOutcomeView,
  type GrantView,
  HOP_LIMITS,
  HOP_RECEIPT_TYPE,
  type HopChainView,
  type HopDeliveryView,
  type HopInboxQuery,
  type HopInboxView,
  type HopView,
  hubGrantOctets,
  type OfferedHopView,
  type OfferHandoffInput,
} from '@baton/protocol'
import type { BudgetService } from '../budgets/service.js'
import type { Clock } from '../clock.js'
import type { EventBus } from '../events/bus.js'
import type { HubSigner } from '../identity/hub-key.js'
import type { IdentityService } from '../identity/service.js'
import { didKeyResolver } from '../identity/verify.js'
import type { Database } from '../store/database.js'
import { countStates } from '../store/operator-reads.js'
import type { HopDeliveryRow, HopRow, HopStatusRow } from '../store/schema.js'
import type { Carrying, Tx, WriteBatcher } from '../store/transaction.js'
import { type HandedTrace, traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'
import { HubReplayStore } from './store.js'

/** What the hop service needs from the rest of the hub. */
export interface HopDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  bus: EventBus
  /** The hub's key, which signs every delivery receipt. */
  signer: HubSigner
  /** How the hub checks an offer's references (the binding to resources, handoffs, transfers). */
  refs?: (caller: string) => RefPolicy | undefined
  /** The grants a principal issued or holds, against which an offer's `grant` is checked. */
  grants?: { list(principal: string): Promise<{ capabilities: GrantView[] }> }
  /** Whose admission decides whether an offer's recipient is an agent of this hub. */
  identity: Pick<IdentityService, 'findPrincipal'>
  /** Budgets carried by offers: opened when an offer is delivered, closed when its hop ends. */
  budgets?: Pick<BudgetService, 'open' | 'hopEnded' | 'ledger'>
}

/** The event topic of a principal's hop inbox; an event is a hint to re-read. */
export const hopInboxTopic = (principal: string) => `hops:${principal}`

/** How many compiled trust stores (by the did:keys they hold) are kept. */
const TRUST_CACHE_SIZE = 1000
/** Thrown inside a status transaction when the hop moved after it was read. */
const MOVED = new Error('hop moved')
/** The checks after the replay check: an offer refused by one of them was remembered. */
const AFTER_REPLAY = new Set(['dialog', 'chain', 'refs', 'policy'])
const DIGEST_RE = /^[A-Za-z0-9_-]{43}$/
const iso = (ms: number) => new Date(ms).toISOString()
const sha256 = (text: string) => createHash('sha256').update(text, 'ascii').digest('base64url')

type Db = Database['db']

/** A delivery the hub writes in the transaction of the change that caused it. */
interface Delivery {
  recipient: string
  kind: HopDeliveryView['kind']
  offer: string
  element: string
  /** The W3C trace context of the request that caused it, for the recipient to continue. */
  trace?: HandedTrace | undefined
}

/**
 * The hub as a delegation witness (seed 003): it runs the seven checks on every offer with the
 * admitted principals as its trust configuration, delivers offers and statuses durably to a hop
 * inbox with a hub-signed receipt, keeps each hop's lifecycle, and answers retransmissions,
 * equivocation and cancellation as the draft says. HTTP and MCP call these same functions.
 */
export class HopService {
  /** The replay store every instance shares, over the hub's database. */
  readonly replay: HubReplayStore
  /** Compiled trust stores by the did:keys they hold, least recently used out first. */
  private readonly trustCache = new Lru<string, TrustStore>(TRUST_CACHE_SIZE)

  constructor(private readonly deps: HopDeps) {
    this.replay = new HubReplayStore(deps.database)
  }

  /**
   * Witnesses an offer from `sender` to `input.to`: the seven checks, then durable delivery.
   * seed 003: a retransmission of identical octets is answered with the hop as it stands (its
   * last status included) and is not delivered again; other octets for the same sender and hop
   * are equivocation, refused and reported to both parties of the first offer.
   */
  async offer(
    sender: string,
    { to, handoff }: OfferHandoffInput,
    { carry, trace }: Carrying = {},
  ): Promise<OfferedHopView> {
    const offerIss = issuerOf(handoff.offer, HOP_LIMITS.maxElementOctets)
    if (offerIss !== undefined && offerIss !== sender) {
      throw refused('policy', 'sender', 'Only the offer iss may post it to the hub')
    }
    const recipient = await this.deps.identity.findPrincipal(this.deps.database.db, to)
    if (recipient?.state !== 'approved') {
      throw new BatonError('recipient_unknown', 'No admitted agent has this principal', {
        field: 'to',
      })
    }
    const options = this.verifyOptions(sender, to)
    // The checks only read the replay store; what they would remember commits below, in the
    // transaction of the offer's outcome, with the request's nonce: one commit on every path.
    const replay = this.replay.noting()
    const result = await verifyHandoff(handoff, { ...options, replay })
    if (result.ok) return this.settle(handoff, result, replay.noted, { carry, trace })
    if (result.reason === 'replay' && result.retransmission === true && result.digest) {
      const known = await store.findHop(this.deps.database.db, result.digest)
      if (known)
        return { hop: await this.toView(this.deps.database.db, known), retransmission: true }
      const record = await this.replay.get(
        result.claims!.iss,
        result.claims!.hop,
        this.deps.clock.now(),
      )
      // seed 003: the hop was seen and refused; its identical octets are not processed again
      if (record?.data?.refused !== undefined) throw refusal(result)
      // Remembered but never delivered (by another writer of the store, or another instance is
      // delivering): the identical octets are checked again, without the replay check.
      const again = await verifyHandoff(handoff, options)
      if (!again.ok) throw refusal(again)
      return this.settle(handoff, again, undefined, { carry, trace })
    }
    if (result.reason === 'equivocation' && result.firstDigest) {
      const { firstDigest } = result
      await this.deps.batcher
        .carrying(carry)
        .run((tx) => this.reportEquivocation(tx, firstDigest, handoff.offer as string))
    } else if (AFTER_REPLAY.has(result.check) && replay.noted?.digest === result.digest) {
      // Remembered by the replay check, then refused: a retransmission answers `replay`.
      return this.settle(handoff, result, replay.noted, { carry, trace })
    }
    throw refusal(result)
  }

  /**
   * The transaction of an offer's outcome, with the request's nonce: the replay record the
   * checks noted (marked refused for an offer a later check refused), written conditionally,
   * and the delivery. When another writer (another instance) remembered the (iss, hop) first,
   * the offer is decided again from the record found, as if it had been found by the checks.
   */
  private async settle(
    handoff: Handoff,
    result: HandoffVerification,
    noted: HopRecord | undefined,
    { carry, trace }: Carrying,
  ): Promise<OfferedHopView> {
    const digest = result.digest!
    const outcome = await this.deps.batcher.carrying(carry).run(
      async (tx): Promise<{ hop: HopRow; retransmission: boolean } | { error: BatonError }> => {
        const now = this.deps.clock.now()
        let prior: HopRecord | undefined
        if (noted) {
          const record = result.ok ? noted : { ...noted, data: { refused: result.reason } }
          prior = await store.claimReplay(tx.db, record, now)
          // seed 003: same sender and hop with different octets is equivocation
          if (prior && prior.digest !== digest) {
            await this.reportEquivocation(tx, prior.digest, handoff.offer as string)
            return { error: replayRefusal('equivocation', { firstDigest: prior.digest, digest }) }
          }
          if (!prior && !result.ok) return { error: refusal(result) }
        }
        const retransmission = noted === undefined || prior !== undefined
        const existing = await store.findHop(tx.db, digest)
        if (existing) return { hop: existing, retransmission }
        if (prior?.data?.refused !== undefined)
          return { error: replayRefusal('replay', { digest }) }
        if (!result.ok) return { error: refusal(result) }
        return { hop: await this.insertOffer(tx, handoff, result, now, trace), retransmission }
      },
      // The same offer delivered at once on two instances: the loser's re-run finds the winner's.
      { rerunOnUniqueViolation: true },
    )
    if ('error' in outcome) throw outcome.error
    return {
      hop: await this.toView(this.deps.database.db, outcome.hop),
      retransmission: outcome.retransmission,
    }
  }

  /**
   * Runs the seven checks on a Handoff object from `sender` to `to` as the hub would, without the
   * replay check and without delivering anything (for tools and benchmarks); `offload: false`
   * checks the signatures on the event loop instead, to compare.
   */
  async check(
    sender: string,
    to: string,
    handoff: Handoff,
    how: { offload?: boolean } = {},
  ): Promise<HandoffVerification> {
    const options = this.verifyOptions(sender, to)
    return verifyHandoff(handoff, { ...options, offload: how.offload ?? options.offload })
  }

  /**
   * The checks as the hub runs them: the keys of the did:keys the elements name (from the parse
   * the checks use), admission read for their issuers while a chain's signatures are checked off
   * the event loop, all at once (the current offer's on it meanwhile), so a long chain neither
   * holds the loop nor waits on one core, nor waits for the database before its first verify.
   */
  private verifyOptions(sender: string, to: string) {
    return {
      trust: (elements: readonly ParsedElement[]) => this.keysFor(elements),
      // Admission is read afresh on every check, in one query, and never cached: a principal
      // suspended a moment ago is untrusted at once.
      admitted: async (issuers: readonly string[]) =>
        new Set(await store.admittedAmong(this.deps.database.db, [...issuers].sort())),
      offload: true,
      audience: to,
      now: () => this.deps.clock.now(),
      maxElementOctets: HOP_LIMITS.maxElementOctets,
      refs: this.deps.refs?.(sender),
    }
  }

  /**
   * Witnesses a signed status from `sender` for a hop it is a party to, moves the hop's state
   * and delivers the status to the other party. A repeat of the same octets answers the same.
   */
  async answer(
    sender: string,
    { status }: AnswerHandoffInput,
    { carry, trace }: Carrying = {},
  ): Promise<AnsweredHopView> {
    let parsed: ParsedElement
    try {
      parsed = readElement(status, HOP_LIMITS.maxElementOctets).parsed
    } catch {
      throw refused('bad-signature', 'signature', 'The status is not a signed status element')
    }
    if (!isStatusClaims(parsed.payload)) {
      // Its members name no hop to check it against, so it is opened on its own: a good signature
      // over malformed members is `malformed`, anything else `bad-signature` or `untrusted-key`.
      // Opening is the first step of verifyStatus and fails here before any binding is looked at.
      const opened = verifyStatus(status, {
        trust: await this.trustFor([parsed]),
        audience: sender,
        now: () => this.deps.clock.now(),
        maxElementOctets: HOP_LIMITS.maxElementOctets,
      })
      const reason = opened.ok ? 'bad-signature' : opened.reason
      throw refused(reason, 'signature', 'The status is not a well-formed signed status')
    }
    const claims: StatusClaims = parsed.payload
    const db = this.deps.database.db
    const row = await store.findHop(db, claims.offer)
    if (!row || (row.iss !== sender && row.aud !== sender)) throw notFound(claims.offer)
    if (claims.iss !== sender) {
      throw refused('policy', 'sender', 'Only the status iss may post it to the hub')
    }
    const verified = verifyStatus(status, {
      trust: await this.trustFor([parsed]),
      audience: sender === row.iss ? row.aud : row.iss,
      offer: row.element,
      now: () => this.deps.clock.now(),
      maxElementOctets: HOP_LIMITS.maxElementOctets,
    })
    if (!verified.ok) throw refused(verified.reason, 'status', 'The status failed verification')
    const digest = verified.digest
    const run = () =>
      this.deps.batcher.carrying(carry).run(async (tx) => {
        if (await store.findStatus(tx.db, digest)) {
          const current = (await store.findHop(tx.db, row.digest))!
          return { hop: current, retransmission: true, changed: false, propagated: [] as string[] }
        }
        const current = (await store.findHop(tx.db, row.digest))!
        const now = this.deps.clock.now()
        const next = nextState(current, claims)
        const { changed } = next
        const flags = JSON.parse(current.flags) as string[]
        if (next.flag && !flags.includes(next.flag)) flags.push(next.flag)
        const moved = await store.updateHop(tx.db, current.digest, current.version, {
          state: next.state,
          outcome: next.outcome,
          flags: JSON.stringify(flags),
          updated_at: now,
        })
        // Another instance moved the hop after it was read: this status is decided again.
        if (!moved) throw MOVED
        // Issue 28: the status that ends a hop releases its budget in the same transaction.
        if (next.state !== current.state) {
          await this.deps.budgets?.hopEnded(tx, current.digest, next.state, now)
        }
        const deliveries: Delivery[] = [
          { recipient: claims.aud, kind: 'status', offer: current.digest, element: status, trace },
        ]
        const propagated: string[] = []
        if (claims.state === 'canceled') {
          await this.propagateCancel(tx.db, current, status, now, deliveries, propagated)
        }
        const [first] = await this.deliver(tx, deliveries, now)
        await store.insertStatus(tx.db, {
          digest,
          offer: current.digest,
          iss: claims.iss,
          state: claims.state,
          reason: claims.reason ?? null,
          element: status,
          receipt: first!.receipt,
          sequence: first!.sequence,
          created_at: now,
        })
        return {
          hop: (await store.findHop(tx.db, current.digest))!,
          retransmission: false,
          changed,
          propagated,
        }
      })
    let out:
      | { hop: HopRow; retransmission: boolean; changed: boolean; propagated: string[] }
      | undefined
    for (let attempt = 1; out === undefined; attempt++) {
      try {
        out = await run()
      } catch (error) {
        // The same status raced on two instances (the loser finds the winner's row), or another
        // status moved the hop first (this one is decided against the new state).
        const raced = error === MOVED || this.deps.database.caps.isUniqueViolation(error)
        if (!raced || attempt >= 5) {
          if (error === MOVED) {
            throw new BatonError('hop_state_conflict', 'The hop kept moving; read it and retry', {
              state: (await store.findHop(db, row.digest))?.state,
            })
          }
          throw error
        }
      }
    }
    return {
      hop: await this.toView(db, out.hop),
      retransmission: out.retransmission,
      changed: out.changed,
      propagated: out.propagated,
    }
  }

  /** A hop the caller is the delegator or delegate of; any other answers like a missing one. */
  async read(caller: string, digest: string): Promise<HopView> {
    const row = await this.visible(caller, digest)
    return this.toView(this.deps.database.db, row)
  }

  /**
   * The delegation chain through a hop: its prev links upward and the offers naming it downward,
   * as far as the caller took part in each hop, oldest first.
   */
  async chain(caller: string, digest: string): Promise<HopChainView> {
    const start = await this.visible(caller, digest)
    return this.walk(start, (r) => r.iss === caller || r.aud === caller)
  }

  /** The operator's view: the most recently changed hops, newest first. */
  async recent(limit = 100): Promise<HopView[]> {
    const db = this.deps.database.db
    const rows = await store.recentHops(db, limit)
    return Promise.all(rows.map((r) => this.toView(db, r)))
  }

  /** The operator's view of a delegation chain through any hop, or undefined when none. */
  async operatorChain(digest: string): Promise<HopChainView | undefined> {
    // The dashboard's path is no operation's: its digest arrives as the text it is.
    if (!DIGEST_RE.test(digest)) return undefined
    const start = await store.findHop(this.deps.database.db, digest)
    return start && this.walk(start, () => true)
  }

  private async walk(start: HopRow, party: (r: HopRow) => boolean): Promise<HopChainView> {
    const db = this.deps.database.db
    const up: HopRow[] = []
    const seen = new Set([start.digest])
    let at = start
    while (at.prev && !seen.has(at.prev) && up.length < HOP_LIMITS.maxChainElements) {
      const parent = await store.findHop(db, at.prev)
      if (!parent || !party(parent)) break
      seen.add(parent.digest)
      up.unshift(parent)
      at = parent
    }
    const down: HopRow[] = []
    const queue = [start]
    while (queue.length > 0 && down.length < HOP_LIMITS.maxChainElements) {
      for (const child of await store.childrenOf(db, queue.shift()!.digest)) {
        if (seen.has(child.digest) || !party(child)) continue
        seen.add(child.digest)
        down.push(child)
        queue.push(child)
      }
    }
    const rows = [...up, start, ...down]
    return { hops: await Promise.all(rows.map((r) => this.toView(db, r))) }
  }

  /** The caller's hop inbox after an exclusive sequence, oldest first. */
  async inbox(recipient: string, input: HopInboxQuery = {}): Promise<HopInboxView> {
    const after = input.after ?? 0
    const limit = input.limit ?? HOP_LIMITS.defaultPageSize
    const db = this.deps.database.db
    const rows = await store.listDeliveries(db, { recipient, after, limit })
    const deliveries: HopDeliveryView[] = []
    for (const r of rows) {
      const view: HopDeliveryView = {
        sequence: r.sequence,
        kind: r.kind as HopDeliveryView['kind'],
        offer: r.offer,
        element: r.element,
        receipt: r.receipt,
        createdAt: iso(r.created_at),
        ...traceFields(r),
      }
      if (r.kind === 'offer') {
        const hop = await store.findHop(db, r.offer)
        if (hop) view.chain = JSON.parse(hop.chain) as string[]
      }
      deliveries.push(view)
    }
    return { deliveries, nextAfter: rows.at(-1)?.sequence ?? after }
  }

  /** Forgets replay records past their horizon; answers how many. */
  cleanup(): Promise<number> {
    return this.replay.sweep(this.deps.clock.now())
  }

  private async visible(caller: string, digest: string): Promise<HopRow> {
    const row = await store.findHop(this.deps.database.db, digest)
    if (!row || (row.iss !== caller && row.aud !== caller)) throw notFound(digest)
    return row
  }

  /**
   * The trust configuration for these elements: each issuer that is an admitted did:key is
   * trusted with the key its identifier names, under the `kid` of the identifier itself or of its
   * DID URL (`did:key:z…#z…`). Any other issuer is untrusted. The issuers looked up are those the
   * elements' protected `kid`s name.
   */
  private async trustFor(elements: readonly ParsedElement[]): Promise<TrustStore> {
    const named = namedIssuers(elements)
    // Admission is read afresh, in one query, and never cached.
    const admitted = await store.admittedAmong(this.deps.database.db, named)
    return this.trustOf(admitted)
  }

  /**
   * The keys of every did:key these elements' protected `kid`s name, admitted or not: a did:key
   * names its key, so nothing here needs the database; admission is asked apart.
   */
  private keysFor(elements: readonly ParsedElement[]): TrustStore {
    return this.trustOf(namedIssuers(elements))
  }

  /** A compiled trust store holding these did:keys (sorted), reused while the set recurs. */
  private trustOf(issuers: readonly string[]): TrustStore {
    const cacheKey = issuers.join(' ')
    const cached = this.trustCache.get(cacheKey)
    if (cached) return cached
    const config: Record<string, TrustedKey[]> = {}
    for (const iss of issuers) {
      const keys = keysOf(iss)
      if (keys) config[iss] = keys
    }
    const trust = new TrustStore(config)
    this.trustCache.set(cacheKey, trust)
    return trust
  }

  /** Delivers a verified offer and keeps its hop, in the caller's transaction. */
  private async insertOffer(
    tx: Tx,
    handoff: Handoff,
    verified: Extract<HandoffVerification, { ok: true }>,
    now: number,
    trace: HandedTrace | undefined,
  ): Promise<HopRow> {
    const c = verified.claims
    const element = handoff.offer as string
    // Issue 28: a sub-offer's budget is reserved from its parent's in the delivering transaction.
    await this.deps.budgets?.open(
      tx,
      {
        digest: verified.digest,
        claims: c as typeof c & Record<string, unknown>,
        refs: verified.refs as readonly { ref: Record<string, unknown>; outcome: string }[],
      },
      now,
    )
    const [delivered] = await this.deliver(
      tx,
      [{ recipient: c.aud, kind: 'offer', offer: verified.digest, element, trace }],
      now,
    )
    const row: HopRow = {
      digest: verified.digest,
      iss: c.iss,
      hop: c.hop,
      aud: c.aud,
      dialog: c.dialog,
      task: c.task ?? null,
      prev: c.prev ?? null,
      element,
      chain: JSON.stringify(handoff.chain ?? []),
      refs: JSON.stringify(verified.refs satisfies readonly RefResult[]),
      state: 'offered',
      outcome: null,
      version: 1,
      receipt: delivered!.receipt,
      flags: JSON.stringify(verified.partial && c.prev ? ['partial-chain'] : []),
      iat: c.iat,
      exp: c.exp,
      created_at: now,
      updated_at: now,
      ...traceColumns(trace),
    }
    await store.insertHop(tx.db, row)
    return row
  }

  /**
   * seed 003: a receiver that sees a second offer with the same sender and hop must not accept
   * it; the hub flags the first hop and tells both of its parties, with the conflicting octets.
   */
  private async reportEquivocation(tx: Tx, firstDigest: string, second: string): Promise<void> {
    const first = await store.findHop(tx.db, firstDigest)
    if (!first) return
    const flags = JSON.parse(first.flags) as string[]
    const now = this.deps.clock.now()
    if (!flags.includes('equivocation')) {
      flags.push('equivocation')
      await store.updateHop(tx.db, first.digest, first.version, {
        flags: JSON.stringify(flags),
        updated_at: now,
      })
    }
    await this.deliver(
      tx,
      [first.iss, first.aud].map((recipient) => ({
        recipient,
        kind: 'equivocation' as const,
        offer: first.digest,
        element: second,
      })),
      now,
    )
  }

  /**
   * seed 003: a canceled status follows the chain downward to every offer whose prev names the
   * canceled one. The hub cannot sign for the downstream delegators; it flags each downstream hop
   * and delivers the cancel to both of its parties, once per party, so each can cancel its own.
   */
  private async propagateCancel(
    db: Db,
    canceled: HopRow,
    status: string,
    now: number,
    deliveries: Delivery[],
    propagated: string[],
  ): Promise<void> {
    const told = new Set([canceled.iss, canceled.aud])
    const seen = new Set([canceled.digest])
    const queue = [canceled.digest]
    while (queue.length > 0) {
      for (const child of await store.childrenOf(db, queue.shift()!)) {
        if (seen.has(child.digest)) continue
        seen.add(child.digest)
        queue.push(child.digest)
        propagated.push(child.digest)
        const flags = JSON.parse(child.flags) as string[]
        if (!flags.includes('upstream-canceled')) {
          flags.push('upstream-canceled')
          await store.updateHop(db, child.digest, child.version, {
            flags: JSON.stringify(flags),
            updated_at: now,
          })
        }
        for (const recipient of [child.iss, child.aud]) {
          if (told.has(recipient)) continue
          told.add(recipient)
          deliveries.push({
            recipient,
            kind: 'upstream-canceled',
            offer: child.digest,
            element: status,
          })
        }
      }
    }
  }

  /** Writes deliveries with their receipts in the caller's transaction; answers the receipts. */
  private async deliver(
    tx: { db: Db; afterCommit(fn: () => void): void },
    deliveries: readonly Delivery[],
    now: number,
  ): Promise<{ receipt: string; sequence: number }[]> {
    const receipts: { receipt: string; sequence: number }[] = []
    for (const d of deliveries) {
      const sequence = await store.nextSequence(tx.db)
      const receipt = this.signReceipt({
        v: 1,
        kind: d.kind,
        sequence,
        recipient: d.recipient,
        offer: d.offer,
        elementDigest: sha256(d.element),
        deliveredAt: iso(now),
      })
      const row: HopDeliveryRow = {
        sequence,
        recipient: d.recipient,
        kind: d.kind,
        offer: d.offer,
        element: d.element,
        receipt,
        created_at: now,
        ...traceColumns(d.trace),
      }
      await store.insertDelivery(tx.db, row)
      receipts.push({ receipt, sequence })
      tx.afterCommit(() =>
        this.deps.bus.publish({
          topic: hopInboxTopic(d.recipient),
          type: `hop.${d.kind}`,
          at: now,
          data: { sequence, offer: d.offer },
        }),
      )
    }
    return receipts
  }

  /**
   * Delivers a hub notice about a hop (a budget crossing) to one of its parties' hop inbox, with
   * a hub-signed receipt over its digest, in the caller's transaction.
   */
  async deliverNotice(
    tx: Tx,
    d: { recipient: string; offer: string; element: string },
    now: number,
  ): Promise<{ receipt: string; sequence: number }> {
    const [delivered] = await this.deliver(tx, [{ ...d, kind: 'budget-crossing' }], now)
    return delivered!
  }

  private signReceipt(payload: Record<string, unknown>): string {
    const { kid, privateKey } = this.deps.signer
    const header = b64u(JSON.stringify({ alg: 'EdDSA', kid, typ: HOP_RECEIPT_TYPE }))
    const body = b64u(JSON.stringify(payload))
    const signature = sign(null, Buffer.from(`${header}.${body}`, 'ascii'), privateKey)
    return `${header}.${body}.${signature.toString('base64url')}`
  }

  /**
   * The offer's `grant` as checked now, against the grants its delegator issued or holds: a grant
   * is never deleted and its terms never change, so only its status (revoked, expired) moves.
   */
  // seed 003: grant is the digest of a credential; a receiver must not report verified unchecked
  private async grantOutcome(row: HopRow): Promise<GrantOutcomeView | null> {
    const digest = claimOf(row.element, 'grant')
    if (digest === undefined) return null
    if (this.deps.grants === undefined) return { digest, outcome: 'not-checked' }
    const { capabilities } = await this.deps.grants.list(row.iss)
    const grant = capabilities.find((g) => grantDigest(hubGrantOctets(g)) === digest)
    // A grant the delegator may not see digests nothing here, exactly like no grant at all.
    if (grant === undefined) return { digest, outcome: 'unverifiable' }
    return { digest, outcome: 'verified', status: grant.status }
  }

  private async toView(db: Db, row: HopRow): Promise<HopView> {
    const statuses = await store.statusesOf(db, row.digest)
    const now = this.deps.clock.now()
    // seed 003: an offer past exp with no status is expired at the delegator; a later verified
    // status still counts and replaces it
    const state =
      row.state === 'offered' && now >= (row.exp + DEFAULT_SKEW_MS / 1000) * 1000
        ? 'expired'
        : (row.state as HopView['state'])
    return {
      digest: row.digest,
      hop: row.hop,
      iss: row.iss,
      aud: row.aud,
      dialog: row.dialog,
      task: row.task,
      prev: row.prev,
      state,
      outcome: row.outcome as HopView['outcome'],
      flags: JSON.parse(row.flags) as string[],
      offer: row.element,
      chain: JSON.parse(row.chain) as string[],
      refs: JSON.parse(row.refs),
      grant: await this.grantOutcome(row),
      receipt: row.receipt,
      statuses: statuses.map(toStatusView),
      lastStatus: statuses.at(-1)?.element ?? null,
      budget: (await this.deps.budgets?.ledger(db, row.digest)) ?? null,
      iat: row.iat,
      exp: row.exp,
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
      ...traceFields(row),
    }
  }

  /** How many hops are in each state, for the operator's overview. */
  async operatorCounts(): Promise<Record<string, number>> {
    return countStates(this.deps.database.db, 'hops')
  }
}

/**
 * The state and outcome a hop takes on a verified status, by the context library's one rule
 * (`nextHopState`, seed 003): a cancel stays visible with a late outcome beside it, and a status
 * answers whether it changed the hop. A contradiction of an earlier status is a conflict.
 */
function nextState(
  row: HopRow,
  c: StatusClaims,
): { state: string; outcome: string | null; flag?: string; changed: boolean } {
  const standing = {
    state: row.state as HopStanding['state'],
    ...(row.outcome === null ? {} : { outcome: row.outcome as HopStanding['outcome'] }),
  }
  const next = nextHopState(standing, c)
  if (next === 'conflict') throw conflict(row, c.state)
  return {
    state: next.state,
    outcome: next.outcome ?? null,
    changed: next.changed,
    ...(next.flag === undefined ? {} : { flag: next.flag }),
  }
}

function conflict(row: HopRow, wanted: string): BatonError {
  const now = row.outcome === null ? row.state : `${row.state} (${row.outcome})`
  return new BatonError('hop_state_conflict', `The hop is ${now}; it cannot become ${wanted}`, {
    state: row.state,
    outcome: row.outcome,
  })
}

function toStatusView(row: HopStatusRow) {
  return {
    digest: row.digest,
    iss: row.iss,
    state: row.state,
    reason: row.reason,
    status: row.element,
    receipt: row.receipt,
    receivedAt: iso(row.created_at),
  }
}

/** Each did:key's public key; the identity verifier's resolver imports each once and keeps it. */
const resolveDidKey = didKeyResolver()

/** A did:key's public key under both forms of its `kid`; null for an identifier naming none. */
function keysOf(iss: string): TrustedKey[] | null {
  const key = resolveDidKey(iss)
  if (!key) return null
  const fragment = iss.slice('did:key:'.length)
  return [
    { key, kid: iss },
    { key, kid: `${iss}#${fragment}` },
  ]
}

/** The did:keys the elements' protected `kid`s name, each once, sorted. */
function namedIssuers(elements: readonly ParsedElement[]): string[] {
  const named = new Set<string>()
  for (const e of elements) {
    const iss = kidIssuerOf(e.kid)
    if (iss !== undefined) named.add(iss)
  }
  return [...named].sort()
}

/**
 * The did:key a protected `kid` names (the identifier itself or its DID URL), unverified: it only
 * picks which admitted keys the checks may use, and an element whose `iss` is not the issuer its
 * `kid` names is untrusted either way.
 */
function kidIssuerOf(kid: string): string | undefined {
  return kid.startsWith('did:key:') ? kid.split('#', 1)[0] : undefined
}

/**
 * The unverified `iss` of an element, to tell who posts it; undefined when it has none. It is
 * read from the parse the checks use next, or, for an element that does not parse, from its
 * payload alone (the checks then refuse it).
 */
function issuerOf(element: string | Uint8Array, maxOctets: number): string | undefined {
  try {
    const iss = readElement(element, maxOctets).parsed.payload.iss
    return typeof iss === 'string' ? iss : undefined
  } catch {
    return typeof element === 'string' ? claimOf(element, 'iss') : undefined
  }
}

/** One string member of a JWS element's payload, unverified; undefined when absent. */
function claimOf(element: string, member: string): string | undefined {
  if (element.length > HOP_LIMITS.maxElementOctets) return undefined
  const first = element.indexOf('.')
  const second = element.indexOf('.', first + 1)
  if (first < 0 || second < 0) return undefined
  try {
    const payload = JSON.parse(
      Buffer.from(element.slice(first + 1, second), 'base64url').toString('utf8'),
    )
    const value = payload?.[member]
    return typeof value === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

function refusal(r: Extract<HandoffVerification, { ok: false }>): BatonError {
  return refused(r.reason, r.check, 'The hub refused the offer', {
    ...(r.index === undefined ? {} : { index: r.index }),
    ...(r.firstDigest === undefined ? {} : { firstDigest: r.firstDigest }),
    ...(r.digest === undefined ? {} : { digest: r.digest }),
  })
}

/** The refusal of the replay check, for an offer decided again inside its transaction. */
function replayRefusal(reason: 'replay' | 'equivocation', extra: Record<string, unknown>) {
  return refused(reason, 'replay', 'The hub refused the offer', extra)
}

function refused(
  reason: string,
  check: string,
  message: string,
  extra: Record<string, unknown> = {},
): BatonError {
  return new BatonError('hop_refused', `${message}: ${reason} (${check})`, {
    reason,
    check,
    ...extra,
  })
}

function notFound(digest: string): BatonError {
  return new BatonError('hop_not_found', `No hop ${JSON.stringify(digest)} that you took part in`)
}

function b64u(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url')
}

/** A bounded map that drops its least recently used entry when full. */
class Lru<K, V> {
  private readonly map = new Map<K, V>()

  constructor(private readonly size: number) {}

  get(key: K): V | undefined {
    const value = this.map.get(key)
    if (value !== undefined) {
      this.map.delete(key)
      this.map.set(key, value)
    }
    return value
  }

  set(key: K, value: V): void {
    this.map.delete(key)
    if (this.map.size >= this.size) this.map.delete(this.map.keys().next().value as K)
    this.map.set(key, value)
  }
}
