import {
  ANSWERED_HOP_RETENTION_MS,
  DEFAULT_SKEW_MS,
  OPEN_HOP_RETENTION_MS,
  RETRANSMIT_BASE_MS,
  RETRANSMIT_CAP_MS,
} from './constants.js'
import type { SignedElement } from './digest.js'
import { ContextError, type ReasonCode } from './errors.js'
import { type Signer, type TrustConfig, type TrustStore, toTrustStore } from './keys.js'
import {
  type Handoff,
  isOfferClaims,
  type OfferClaims,
  type SignedOffer,
  type SignOfferInput,
  signOffer,
  toHandoff,
} from './offer.js'
import { parseElement } from './open.js'
import type { Ref } from './refs.js'
import { type HopRecord, MemoryReplayStore, type ReplayStore } from './replay-store.js'
import {
  isNonterminalRejection,
  type SignedStatus,
  type StatusReason,
  type StatusState,
  signStatus,
  verifyStatus,
} from './status.js'
import { parseHandoff, type VerifiedHandoff, type VerifyOptions, verifyHandoff } from './verify.js'

/** The delegate's view of a hop it received. */
export type DelegateHopState =
  | 'received'
  | 'accepted'
  | 'rejected'
  | 'completed'
  | 'failed'
  | 'canceled'

/** The delegator's view of a hop it issued; `expired` is local and provisional. */
export type DelegatorHopState =
  | 'offered'
  | 'expired'
  | 'accepted'
  | 'rejected'
  | 'completed'
  | 'failed'
  | 'canceled'

/** Identifies a received hop: its sender and hop identifier. */
export interface HopKey {
  /** The sender of the offer. */
  readonly iss: string
  /** The hop identifier. */
  readonly hop: string
}

/** What the delegate keeps for a received hop (the JSON `data` of its HopRecord). */
export interface DelegateHop {
  /** The offer exactly as received (COSE bytes as base64url). */
  readonly offer: string
  /** The offer's serialization. */
  readonly offerForm: 'jws' | 'cose'
  /** The offer's handoff digest. */
  readonly digest: string
  /** The hop's state. */
  readonly state: DelegateHopState
  /** Whether the work was taken. */
  readonly taken: boolean
  /** Whether accepted or rejected was sent (at most one per hop). */
  readonly decision?: 'accepted' | 'rejected'
  /** Whether completed or failed was sent (at most one per hop). */
  readonly outcome?: 'completed' | 'failed'
  /** The last status sent, exactly as sent (COSE bytes as base64url). */
  readonly last?: string
  /** The last status's serialization. */
  readonly lastForm?: 'jws' | 'cose'
  /** Digest of a conflicting offer with the same (iss, hop). */
  readonly equivocation?: string
  /** Whether the delegator canceled the hop. */
  readonly canceled?: boolean
  /** Conditions for the operator: `equivocation`, `outcome-unknown`, `canceled-after-end`. */
  readonly flags: readonly string[]
}

/** What the delegator keeps for a hop it issued. */
export interface DelegatorHop {
  /** The offer exactly as sent (COSE bytes as base64url), for identical retransmission. */
  readonly offer: string
  /** The offer's serialization. */
  readonly offerForm: 'jws' | 'cose'
  /** The chain as sent, oldest first, each element with its serialization. */
  readonly chain?: readonly { readonly x: string; readonly xForm: 'jws' | 'cose' }[]
  /** The delegate. */
  readonly aud: string
  /** The offer's expiry, NumericDate seconds. */
  readonly exp: number
  /** The digest of the upstream offer this one continues, if any. */
  readonly prev?: string
  /** The last verified state; `offered` until a status arrives. */
  readonly state: Exclude<DelegatorHopState, 'expired'>
  /** Whether this agent canceled the hop. */
  readonly canceled?: boolean
  /** The delegate's outcome, also when it came after this agent's cancel. */
  readonly outcome?: 'completed' | 'failed'
  /** Races made visible: `outcome-after-cancel`, `canceled-after-end`. */
  readonly flags?: readonly string[]
  /** Statuses that contradicted an earlier one from the delegate (digests). */
  readonly conflicts: readonly string[]
}

/** The outcome of receiving a handoff. */
export type ReceiveOutcome =
  | {
      /** A new hop passed every check; the agent now accepts, takes or rejects it. */
      readonly kind: 'new'
      /** The verification result. */
      readonly verified: VerifiedHandoff
    }
  | {
      /** The offer failed a check. */
      readonly kind: 'rejected'
      /** The reason code. */
      readonly reason: ReasonCode
      /** The rejected status to send, when one can be signed (the offer verified and is ours). */
      readonly status?: SignedStatus
    }
  | {
      /** The identical offer again: not processed again. */
      readonly kind: 'retransmission'
      /** What to send back: the last status as identical octets, or nothing for now. */
      readonly resend?: SignedElement
    }
  | {
      /** Another offer with the same sender and hop: never accepted, never answered. */
      readonly kind: 'equivocation'
      /** The digest of the first offer. */
      readonly firstDigest: string
      /** A rejection of the first offer to send, when it was neither taken nor answered. */
      readonly rejectFirst?: SignedStatus
      /** True when work on the first offer was taken: stop it if possible, then report. */
      readonly stopWork: boolean
    }

/** The outcome of receiving a status. */
export interface StatusOutcome {
  /** Whether the status verified and applied to a known hop. */
  readonly ok: boolean
  /** Why not, when not. */
  readonly reason?: ReasonCode
  /** The hop's state after the status. */
  readonly state?: DelegateHopState | DelegatorHopState
  /** The delegate's outcome, beside a state that does not show it (a canceled hop's). */
  readonly outcome?: 'completed' | 'failed'
  /**
   * Whether the status changed the hop (its state or outcome); false for a repeat of what the
   * hop already shows, a nonterminal rejection or a conflict.
   */
  readonly changed?: boolean
  /** True for a nonterminal rejection (stale or replay): the delegator may retransmit. */
  readonly nonterminal?: boolean
  /** True when the status contradicted an earlier one (flagged, not applied). */
  readonly conflict?: boolean
  /** `canceled` statuses for every offer this agent issued whose prev is the canceled hop. */
  readonly propagate?: readonly SignedStatus[]
}

/** How a HandoffAgent is built. */
export interface HandoffAgentOptions {
  /** This agent's signer; its `iss` is this agent's identifier. */
  readonly signer: Signer
  /** Trust configuration for offers and statuses it receives. */
  readonly trust: TrustConfig | TrustStore
  /** Store of received hops (also the replay store); default in memory. */
  readonly received?: ReplayStore
  /** Store of issued hops; default in memory. */
  readonly issued?: ReplayStore
  /** Clock in epoch milliseconds (default Date.now). */
  readonly now?: () => number
  /** Further verification options (dialog, chain policy, refs, limits). */
  readonly verify?: Omit<VerifyOptions, 'trust' | 'audience' | 'replay' | 'now'>
}

/**
 * One agent's hop state machine, as delegate and as delegator, with every lifecycle rule of the
 * seed: at most one decision and one outcome per hop, nonterminal stale/replay rejections,
 * implied acceptance, provisional local expiry, identical resends, equivocation and cancellation.
 */
export class HandoffAgent {
  private readonly signer: Signer
  private readonly trust: TrustStore
  private readonly received: ReplayStore
  private readonly issued: ReplayStore
  private readonly now: () => number
  private readonly verifyOptions: HandoffAgentOptions['verify']
  private readonly locks = new Map<string, Promise<unknown>>()

  /** Builds an agent from its signer, trust configuration and stores. */
  constructor(options: HandoffAgentOptions) {
    this.signer = options.signer
    this.trust = toTrustStore(options.trust)
    this.received = options.received ?? new MemoryReplayStore()
    this.issued = options.issued ?? new MemoryReplayStore()
    this.now = options.now ?? Date.now
    this.verifyOptions = options.verify
  }

  /** This agent's identifier. */
  get id(): string {
    return this.signer.iss
  }

  private get skewMs(): number {
    return this.verifyOptions?.skewMs ?? DEFAULT_SKEW_MS
  }

  // ---- delegate role ----

  /**
   * Receives a handoff: verifies it and applies the seed's replay, retransmission and
   * equivocation rules. `overrides` adds per-message checks, e.g. the host protocol's dialog.
   */
  async receive(
    handoff: Handoff | unknown,
    overrides: Omit<VerifyOptions, 'trust' | 'audience' | 'replay' | 'now'> = {},
  ): Promise<ReceiveOutcome> {
    const key = peekKey(handoff)
    const run = () => this.receiveLocked(handoff, overrides)
    return key === undefined ? run() : this.lock(`in\n${key.iss}\n${key.hop}`, run)
  }

  private async receiveLocked(
    handoff: Handoff | unknown,
    overrides: Omit<VerifyOptions, 'trust' | 'audience' | 'replay' | 'now'>,
  ): Promise<ReceiveOutcome> {
    const r = await verifyHandoff(handoff, {
      ...this.verifyOptions,
      ...overrides,
      trust: this.trust,
      audience: this.id,
      replay: this.received,
      now: this.now,
    })
    const nowMs = this.now()
    if (r.ok) {
      const data: DelegateHop = {
        ...encodeElement(r.element, 'offer'),
        digest: r.digest,
        state: 'received',
        taken: false,
        flags: [],
      }
      await this.saveReceived(r.claims, r.digest, data, r.claims.exp * 1000 + this.skewMs)
      return { kind: 'new', verified: r }
    }
    const claims = r.claims
    // seed 003: a hop this agent remembers is answered by its lifecycle rules even once the offer
    // is no longer fresh: identical octets are a retransmission, never processed again (the last
    // status goes back); other octets are equivocation, for which no status is ever sent
    if (r.check === 'freshness' && claims !== undefined && r.digest !== undefined) {
      const known = await this.received.get(claims.iss, claims.hop, nowMs)
      if (known !== undefined && known.digest === r.digest) {
        return { kind: 'retransmission', ...(await this.resendFor(claims)) }
      }
      if (known !== undefined) return this.onEquivocation(claims, r.digest, known.digest)
    }
    if (r.reason === 'replay' && r.retransmission === true && claims !== undefined) {
      return { kind: 'retransmission', ...(await this.resendFor(claims)) }
    }
    if (r.reason === 'equivocation' && claims !== undefined) {
      return this.onEquivocation(claims, r.digest!, r.firstDigest!)
    }
    // only an offer that verified and names this agent can be answered, and only with a reason of
    // the seed's vocabulary (a malformed offer has no members to answer anyway)
    if (claims === undefined || claims.aud !== this.id || r.reason === 'malformed')
      return { kind: 'rejected', reason: r.reason }
    const offer = { claims, digest: r.digest! }
    const status = signStatus({
      signer: this.signer,
      offer,
      state: 'rejected',
      reason: r.reason,
      now: this.now,
    })
    // seed 003: a rejection with reason stale or replay is not terminal and never sets state;
    // an offer rejected before the replay check was not remembered, so neither is its answer
    const remembered = r.check !== 'signature' && r.check !== 'audience' && r.check !== 'freshness'
    if (remembered && r.reason !== 'stale' && r.reason !== 'replay') {
      const record = await this.received.get(claims.iss, claims.hop, nowMs)
      if (record !== undefined && record.digest === r.digest) {
        const element = parseHandoff(handoff).offer
        await this.saveReceived(claims, r.digest!, {
          ...encodeElement(element, 'offer'),
          digest: r.digest!,
          state: 'rejected',
          taken: false,
          decision: 'rejected',
          ...encodeElement(status.element, 'last'),
          flags: [],
        })
      }
    }
    return { kind: 'rejected', reason: r.reason, status }
  }

  private async resendFor(c: OfferClaims): Promise<{ resend?: SignedElement }> {
    const rec = await this.received.get(c.iss, c.hop, this.now())
    const data = rec?.data as DelegateHop | undefined
    if (rec === undefined || data === undefined) return {}
    // seed 003: resend the last status as identical octets; if the work was taken and nothing
    // was sent, send accepted; if undecided, send nothing for now
    if (data.last !== undefined) return { resend: decodeElement(data.last, data.lastForm) }
    if (data.taken) {
      const s = this.sign(data, 'accepted')
      await this.saveReceived(c, rec.digest, {
        ...data,
        state: 'accepted',
        decision: 'accepted',
        ...encodeElement(s.element, 'last'),
      })
      return { resend: s.element }
    }
    return {}
  }

  private async onEquivocation(
    second: OfferClaims,
    secondDigest: string,
    firstDigest: string,
  ): Promise<ReceiveOutcome> {
    const rec = await this.received.get(second.iss, second.hop, this.now())
    const data = rec?.data as DelegateHop | undefined
    // seed 003: the second offer is never accepted and never answered
    if (rec === undefined || data === undefined) {
      return { kind: 'equivocation', firstDigest, stopWork: false }
    }
    const flags = addFlag(data.flags, 'equivocation')
    // seed 003: neither taken nor answered: reject the first with reason equivocation
    if (!data.taken && data.decision === undefined) {
      const s = this.sign(data, 'rejected', { reason: 'equivocation' })
      await this.saveReceived(second, rec.digest, {
        ...data,
        state: 'rejected',
        decision: 'rejected',
        equivocation: secondDigest,
        flags,
        ...encodeElement(s.element, 'last'),
      })
      return { kind: 'equivocation', firstDigest, rejectFirst: s, stopWork: false }
    }
    // seed 003: taken without a terminal status: stop the work if possible, then report the
    // outcome it knows, flagging the conflict to the operator
    await this.saveReceived(second, rec.digest, { ...data, equivocation: secondDigest, flags })
    return {
      kind: 'equivocation',
      firstDigest,
      stopWork: data.taken && data.outcome === undefined,
    }
  }

  /** Sends `accepted`: the work is taken. At most one of accepted and rejected per hop. */
  async accept(key: HopKey): Promise<SignedStatus> {
    return this.decide(key, 'accepted')
  }

  /**
   * Records that the work was taken without sending anything yet; a retransmission then gets
   * `accepted`.
   */
  async take(key: HopKey): Promise<void> {
    await this.withReceived(key, async (rec, data) => {
      if (data.decision === 'rejected') throw lifecycle('a rejected hop cannot be taken')
      await this.saveReceived(key, rec.digest, { ...data, taken: true })
      return undefined
    })
  }

  /**
   * Sends `rejected`. A stale or replay reason is not terminal: it changes no state and may be
   * sent beside any decision.
   */
  async reject(key: HopKey, reason: StatusReason, detail?: string): Promise<SignedStatus> {
    if (reason === 'stale' || reason === 'replay') {
      return this.withReceived(key, async (_rec, data) =>
        this.sign(data, 'rejected', { reason, detail }),
      )
    }
    return this.decide(key, 'rejected', reason, detail)
  }

  private decide(
    key: HopKey,
    state: 'accepted' | 'rejected',
    reason?: StatusReason,
    detail?: string,
  ): Promise<SignedStatus> {
    return this.withReceived(key, async (rec, data) => {
      // seed 003: at most one of accepted and rejected per hop
      if (data.decision !== undefined || data.outcome !== undefined || data.canceled === true) {
        throw lifecycle('this hop already has a decision')
      }
      if (state === 'rejected' && data.taken) throw lifecycle('taken work is not rejected')
      const s = this.sign(data, state, { reason, detail })
      await this.saveReceived(key, rec.digest, {
        ...data,
        state,
        decision: state,
        taken: state === 'accepted',
        ...encodeElement(s.element, 'last'),
      })
      return s
    })
  }

  /** Sends `completed`; `accepted` is implied when it was not sent. Results may go in refs. */
  async complete(key: HopKey, options: { refs?: readonly Ref[] } = {}): Promise<SignedStatus> {
    return this.finish(key, 'completed', options)
  }

  /**
   * Sends `failed`. When part of the work took effect, `partialEffect: true` requires refs naming
   * what took effect.
   */
  // seed 003: a delegate that sends failed after partial effect must list in refs what took effect
  async fail(
    key: HopKey,
    options: {
      reason?: StatusReason
      detail?: string
      refs?: readonly Ref[]
      partialEffect?: boolean
    } = {},
  ): Promise<SignedStatus> {
    if (
      options.partialEffect === true &&
      (options.refs === undefined || options.refs.length === 0)
    ) {
      throw new ContextError(
        'invalid-input',
        'a failure after partial effect lists what took effect',
      )
    }
    return this.finish(key, 'failed', options)
  }

  private finish(
    key: HopKey,
    state: 'completed' | 'failed',
    options: { reason?: StatusReason; detail?: string; refs?: readonly Ref[] },
  ): Promise<SignedStatus> {
    return this.withReceived(key, async (rec, data) => {
      // seed 003: at most one of completed and failed per hop; a rejected hop did no work
      if (data.outcome !== undefined) throw lifecycle('this hop already has an outcome')
      if (data.decision === 'rejected') throw lifecycle('a rejected hop has no outcome')
      const s = this.sign(data, state, options)
      // seed 003: completed or failed without accepted first: accepted is implied
      await this.saveReceived(
        key,
        rec.digest,
        {
          ...data,
          state: data.canceled === true ? 'canceled' : state,
          decision: 'accepted',
          outcome: state,
          taken: true,
          flags: data.flags.filter((f) => f !== 'outcome-unknown'),
          ...encodeElement(s.element, 'last'),
        },
        this.now() + ANSWERED_HOP_RETENTION_MS,
      )
      return s
    })
  }

  /**
   * Records that the outcome of taken work is unknown: the hop stays `accepted` and is flagged to
   * the operator; no completed or failed is sent until the outcome is known.
   */
  // seed 003: a delegate must not send completed or failed while it does not know whether the
  // work took effect; it keeps the hop accepted and flags it to its operator
  async markOutcomeUnknown(key: HopKey): Promise<void> {
    await this.withReceived(key, async (rec, data) => {
      if (data.outcome !== undefined) throw lifecycle('this hop already has an outcome')
      await this.saveReceived(key, rec.digest, {
        ...data,
        taken: true,
        state: data.canceled === true ? 'canceled' : 'accepted',
        flags: addFlag(data.flags, 'outcome-unknown'),
      })
      return undefined
    })
  }

  /** The delegate's record of a received hop, if remembered. */
  async receivedHop(key: HopKey): Promise<DelegateHop | undefined> {
    const rec = await this.received.get(key.iss, key.hop, this.now())
    return rec?.data as DelegateHop | undefined
  }

  // ---- delegator role ----

  /**
   * Signs and records an offer; with `after` (the upstream handoff) its prev is set and, with
   * `chain: true`, the chain is carried.
   */
  async offer(
    input: Omit<SignOfferInput, 'signer' | 'prev' | 'now'> & { after?: Handoff; chain?: boolean },
  ): Promise<{ handoff: Handoff; offer: SignedOffer }> {
    const { after, chain, ...rest } = input
    const offer = signOffer({
      ...rest,
      signer: this.signer,
      now: this.now,
      ...(after === undefined ? {} : { prev: after.offer }),
    })
    const handoff = toHandoff(offer, after === undefined ? {} : { after, chain: chain === true })
    const data: DelegatorHop = {
      ...encodeElement(offer.element, 'offer'),
      ...(handoff.chain === undefined
        ? {}
        : { chain: handoff.chain.map((e) => encodeElement(e, 'x')) }),
      aud: offer.claims.aud,
      exp: offer.claims.exp,
      ...(offer.claims.prev === undefined ? {} : { prev: offer.claims.prev }),
      state: 'offered',
      conflicts: [],
    }
    await this.issued.put({
      iss: this.id,
      hop: offer.claims.hop,
      digest: offer.digest,
      expiresAt: this.now() + OPEN_HOP_RETENTION_MS,
      data: data as unknown as Record<string, unknown>,
    })
    return { handoff, offer }
  }

  /** The identical handoff to retransmit for a hop this agent issued. */
  // seed 003: a delegator that retransmits must resend the identical octets
  async retransmit(hop: string): Promise<Handoff | undefined> {
    const rec = await this.issued.get(this.id, hop, this.now())
    const data = rec?.data as DelegatorHop | undefined
    if (data === undefined) return undefined
    const offer = decodeElement(data.offer, data.offerForm)
    const chain = data.chain?.map((e) => decodeElement(e.x, e.xForm))
    return chain === undefined ? { offer } : { offer, chain }
  }

  /**
   * The delegator's state of an issued hop; `expired` when it reached exp (plus skew) with no
   * status, which a later verified status replaces.
   */
  // seed 003: expiry at the delegator is local and provisional: no message is sent
  async issuedState(hop: string): Promise<DelegatorHopState | undefined> {
    const nowMs = this.now()
    const rec = await this.issued.get(this.id, hop, nowMs)
    const data = rec?.data as DelegatorHop | undefined
    if (data === undefined) return undefined
    if (data.state === 'offered' && nowMs >= data.exp * 1000 + this.skewMs) return 'expired'
    return data.state
  }

  /** Signs `canceled` for a hop this agent issued and records it. */
  async cancel(hop: string): Promise<SignedStatus> {
    const s = await this.cancelIssued(hop)
    if (s === undefined) throw lifecycle('unknown hop')
    return s
  }

  /**
   * Receives a status: a delegate's answer to an offer this agent issued, or a delegator's
   * `canceled` for a hop this agent received (which then propagates downward).
   */
  async receiveStatus(
    status: SignedElement | { status: SignedElement } | unknown,
  ): Promise<StatusOutcome> {
    const v = verifyStatus(status, {
      trust: this.trust,
      audience: this.id,
      now: this.now,
      skewMs: this.skewMs,
    })
    if (!v.ok) return { ok: false, reason: v.reason }
    const c = v.claims
    const incoming = c.state
    if (incoming === 'canceled') {
      return this.lock(`in\n${c.iss}\n${c.hop}`, () => this.onCanceled(c.iss, c.hop, c.offer))
    }
    return this.lock(`out\n${c.hop}`, async () => {
      const rec = await this.issued.get(this.id, c.hop, this.now())
      const data = rec?.data as DelegatorHop | undefined
      // choice: a status that answers no offer this agent issued is refused as `policy`
      if (rec === undefined || data === undefined || rec.digest !== c.offer || c.iss !== data.aud) {
        return { ok: false, reason: 'policy' as const }
      }
      const known = data.outcome === undefined ? {} : { outcome: data.outcome }
      if (isNonterminalRejection(c)) {
        return { ok: true, state: data.state, ...known, nonterminal: true, changed: false }
      }
      const next = nextHopState(data, c)
      if (next === 'conflict') {
        await this.putIssued(rec, { ...data, conflicts: [...data.conflicts, v.digest] })
        return { ok: true, state: data.state, ...known, conflict: true, changed: false }
      }
      if (next.changed || next.flag !== undefined) {
        await this.putIssued(rec, {
          ...data,
          state: next.state,
          ...(next.outcome === undefined ? {} : { outcome: next.outcome }),
          ...(next.flag === undefined ? {} : { flags: addFlag(data.flags ?? [], next.flag) }),
        })
      }
      const outcome = next.outcome === undefined ? {} : { outcome: next.outcome }
      return { ok: true, state: next.state, ...outcome, changed: next.changed }
    })
  }

  private async onCanceled(iss: string, hop: string, offerDigest: string): Promise<StatusOutcome> {
    const rec = await this.received.get(iss, hop, this.now())
    const data = rec?.data as DelegateHop | undefined
    if (rec === undefined || data === undefined || rec.digest !== offerDigest) {
      return { ok: false, reason: 'policy' }
    }
    const flags =
      data.outcome !== undefined ? addFlag(data.flags, 'canceled-after-end') : data.flags
    if (data.canceled !== true) {
      await this.saveReceived({ iss, hop }, rec.digest, {
        ...data,
        canceled: true,
        state: data.outcome ?? 'canceled',
        flags,
      })
    }
    // seed 003: send canceled for each offer this agent issued whose prev equals this hop's digest
    const propagate: SignedStatus[] = []
    for (const child of await this.issued.list(this.now())) {
      const cd = child.data as DelegatorHop | undefined
      if (cd?.prev !== offerDigest || cd.canceled === true) continue
      const s = await this.cancelIssued(child.hop)
      if (s !== undefined) propagate.push(s)
    }
    const state = data.outcome ?? 'canceled'
    return { ok: true, state, changed: state !== data.state, propagate }
  }

  private cancelIssued(hop: string): Promise<SignedStatus | undefined> {
    return this.lock(`out\n${hop}`, async () => {
      const rec = await this.issued.get(this.id, hop, this.now())
      const data = rec?.data as DelegatorHop | undefined
      if (rec === undefined || data === undefined) return undefined
      const s = signStatus({
        signer: this.signer,
        offer: decodeElement(data.offer, data.offerForm),
        state: 'canceled',
        now: this.now,
      })
      const next = nextHopState(data, { state: 'canceled' }) as HopMove
      await this.putIssued(rec, {
        ...data,
        canceled: true,
        state: next.state,
        ...(next.flag === undefined ? {} : { flags: addFlag(data.flags ?? [], next.flag) }),
      })
      return s
    })
  }

  /** The delegator's record of an issued hop. */
  async issuedHop(hop: string): Promise<DelegatorHop | undefined> {
    const rec = await this.issued.get(this.id, hop, this.now())
    return rec?.data as DelegatorHop | undefined
  }

  // ---- plumbing ----

  private sign(
    data: DelegateHop,
    state: 'accepted' | 'rejected' | 'completed' | 'failed',
    extra: { reason?: StatusReason; detail?: string; refs?: readonly Ref[] } = {},
  ): SignedStatus {
    return signStatus({
      signer: this.signer,
      offer: decodeElement(data.offer, data.offerForm),
      state,
      now: this.now,
      ...(extra.reason === undefined ? {} : { reason: extra.reason }),
      ...(extra.detail === undefined ? {} : { detail: extra.detail }),
      ...(extra.refs === undefined ? {} : { refs: extra.refs }),
    })
  }

  private async withReceived<T>(
    key: HopKey,
    fn: (rec: HopRecord, data: DelegateHop) => Promise<T>,
  ): Promise<T> {
    return this.lock(`in\n${key.iss}\n${key.hop}`, async () => {
      const rec = await this.received.get(key.iss, key.hop, this.now())
      const data = rec?.data as DelegateHop | undefined
      if (rec === undefined || data === undefined) throw lifecycle('unknown hop')
      return fn(rec, data)
    })
  }

  private async saveReceived(
    key: HopKey,
    digest: string,
    data: DelegateHop,
    expiresAt?: number,
  ): Promise<void> {
    // seed 003: kept at least until exp plus skew; choice: every received hop is kept a day after
    // its last change, and an open one (taken, no outcome) until it ends
    const open = data.taken && data.outcome === undefined
    const floor = this.now() + (open ? OPEN_HOP_RETENTION_MS : ANSWERED_HOP_RETENTION_MS)
    const at = Math.max(expiresAt ?? 0, floor)
    await this.received.put({
      iss: key.iss,
      hop: key.hop,
      digest,
      expiresAt: at,
      data: data as unknown as Record<string, unknown>,
    })
  }

  private async putIssued(rec: HopRecord, data: DelegatorHop): Promise<void> {
    const open = data.state === 'offered' || data.state === 'accepted'
    await this.issued.put({
      ...rec,
      expiresAt: open
        ? rec.expiresAt
        : Math.max(data.exp * 1000 + this.skewMs, this.now() + ANSWERED_HOP_RETENTION_MS),
      data: data as unknown as Record<string, unknown>,
    })
  }

  private lock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve()
    const next = prev.then(fn, fn)
    const tail = next.catch(() => {})
    this.locks.set(key, tail)
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key)
    })
    return next
  }
}

/** Where a hop stands: its state, and the delegate's outcome beside a state that hides it. */
export interface HopStanding {
  /** The hop's state. */
  readonly state: Exclude<DelegatorHopState, 'expired'>
  /** The delegate's `completed` or `failed`, kept also when it came after the cancel. */
  readonly outcome?: 'completed' | 'failed' | undefined
}

/** A hop after one verified status: where it stands, and whether the status changed that. */
export interface HopMove extends HopStanding {
  /** Whether the status changed the hop's state or outcome; a repeat of what is known does not. */
  readonly changed: boolean
  /**
   * A race to make visible to both sides: `outcome-after-cancel` (the delegate's outcome came
   * after the delegator's cancel) or `canceled-after-end` (the cancel came after the outcome).
   */
  readonly flag?: 'outcome-after-cancel' | 'canceled-after-end'
}

/**
 * The rule every verified status follows, for the delegator's record of a hop (and the hub's):
 * where the hop stands after it, whether it changed, and the race it shows; `conflict` when the
 * delegate contradicts an earlier status.
 *
 * @example nextHopState({ state: 'canceled' }, { state: 'completed' })
 * // { state: 'canceled', outcome: 'completed', changed: true, flag: 'outcome-after-cancel' }
 */
// seed 003: a rejection with reason stale or replay is not terminal and never sets the state; at
// most one of accepted and rejected, and one of completed and failed; completed or failed imply
// accepted; a cancel does not show that the work took no effect, and races are made visible to
// both sides: an outcome after the cancel leaves the hop canceled with the outcome beside it, and
// a cancel after the outcome leaves the outcome.
export function nextHopState(
  hop: HopStanding,
  status: { readonly state: StatusState; readonly reason?: string | undefined },
): HopMove | 'conflict' {
  const { state, outcome } = hop
  const same = { state, ...(outcome === undefined ? {} : { outcome }), changed: false }
  if (status.state === 'canceled') {
    if (state === 'completed' || state === 'failed') {
      return { ...same, flag: 'canceled-after-end' }
    }
    return { ...same, state: 'canceled', changed: state !== 'canceled' }
  }
  if (status.state === 'rejected' && (status.reason === 'stale' || status.reason === 'replay')) {
    return same
  }
  if (state === 'canceled') {
    if (status.state !== 'completed' && status.state !== 'failed') return same
    if (outcome === undefined) {
      return { state, outcome: status.state, changed: true, flag: 'outcome-after-cancel' }
    }
    return outcome === status.state ? same : 'conflict'
  }
  const next = applyStatus(state, status.state)
  if (next === 'conflict') return 'conflict'
  const ended = next === 'completed' || next === 'failed' ? next : outcome
  return {
    state: next,
    ...(ended === undefined ? {} : { outcome: ended }),
    changed: next !== state || ended !== outcome,
  }
}

/**
 * The delegator's next state for a verified delegate status: implied acceptance, at most one
 * decision and one outcome; `conflict` when the delegate contradicts an earlier status. A
 * canceled hop stays canceled ({@link nextHopState} keeps the late outcome beside it).
 */
// seed 003: completed or failed without accepted implies accepted; expired is replaced by any
// later verified status; a delegate sends at most one of accepted/rejected and one of
// completed/failed
export function applyStatus(
  current: Exclude<DelegatorHopState, 'expired'>,
  incoming: 'accepted' | 'rejected' | 'completed' | 'failed',
): Exclude<DelegatorHopState, 'expired'> | 'conflict' {
  switch (current) {
    case 'offered':
      return incoming
    case 'accepted':
      return incoming === 'rejected' ? 'conflict' : incoming
    case 'rejected':
      return incoming === 'rejected' ? 'rejected' : 'conflict'
    case 'completed':
    case 'failed':
      if (incoming === 'accepted' || incoming === current) return current
      return 'conflict'
    case 'canceled':
      // a cancel does not show the work took no effect, and must not be hidden by what follows:
      // the hop stays canceled, and a late outcome is kept beside it (nextHopState)
      return current
  }
}

/**
 * How long a delegator waits before retransmission number `attempt` (1 = the first resend):
 * doubling from one second, capped at one minute.
 */
// seed 003: a delegator may retransmit the identical octets, waiting longer after each attempt
export function retransmitDelayMs(attempt: number): number {
  const n = Math.max(1, Math.floor(attempt))
  return Math.min(RETRANSMIT_CAP_MS, RETRANSMIT_BASE_MS * 2 ** Math.min(n - 1, 30))
}

function lifecycle(message: string): ContextError {
  return new ContextError('lifecycle', message)
}

function addFlag(flags: readonly string[], flag: string): string[] {
  return flags.includes(flag) ? [...flags] : [...flags, flag]
}

function encodeElement<K extends string>(
  element: SignedElement,
  name: K,
): Record<K, string> & Record<`${K}Form`, 'jws' | 'cose'> {
  const cose = element instanceof Uint8Array
  return {
    [name]: cose ? Buffer.from(element).toString('base64url') : element,
    [`${name}Form`]: cose ? 'cose' : 'jws',
  } as Record<K, string> & Record<`${K}Form`, 'jws' | 'cose'>
}

function decodeElement(text: string, form: 'jws' | 'cose' | undefined): SignedElement {
  return form === 'cose' ? Buffer.from(text, 'base64url') : text
}

function peekKey(handoff: unknown): HopKey | undefined {
  try {
    const p = parseElement(parseHandoff(handoff).offer).payload
    return isOfferClaims(p) ? { iss: p.iss, hop: p.hop } : undefined
  } catch {
    return undefined
  }
}
