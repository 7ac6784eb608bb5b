import {
  createSigner,
  type Handoff,
  type Ref,
  type SignedOffer,
  type SignedStatus,
  type Signer,
  type StatusReason,
  type StatusState,
  signOffer,
  signStatus,
  toHandoff,
  toHandoffJson,
} from '@baton/context'
import {
  type AnsweredHopView,
  BUDGET_MEMBER,
  contracts,
  type HopChainView,
  type HopInboxView,
  type HopView,
  type OfferBudget,
  type OfferedHopView,
} from '@baton/protocol'
import type { Identity } from './identity.js'
import type { SignedClient } from './signed-client.js'

/**
 * The seed 003 signer of an identity: its did:key is both `iss` and `kid`, which is how the hub
 * finds the key of an admitted principal.
 * @example const signer = await hopSigner(client.identity)
 */
export function hopSigner(identity: Identity): Promise<Signer> {
  return createSigner({
    iss: identity.principal,
    key: identity.privateKey,
    kid: identity.principal,
  })
}

/** What `HopClient.offer` needs beyond the client's own identity. */
export interface OfferOptions {
  /** The delegate: an admitted did:key. */
  to: string
  /** The host protocol's dialog identifier. */
  dialog: string
  /** The host protocol's task identifier. */
  task?: string
  /** The principal the chain's root acted for. */
  obo?: string
  /** Digest of the credential the delegate is expected to present. */
  grant?: string
  /** References to prior context (`digest` refs the hub can check against its own records). */
  refs?: readonly Ref[]
  /** Lifetime in seconds (default 120; the hub refuses more than 300 as stale). */
  ttlS?: number
  /** The handoff this one continues: its offer becomes `prev`, and with `chain` it is carried. */
  after?: Handoff
  /** Carry the chain of `after` (default true when `after` is given). */
  chain?: boolean
  /** Clock in epoch milliseconds (default Date.now). */
  now?: () => number
  /**
   * A budget for the delegate, signed into the offer: reserved from the budget of `after`'s hop
   * when it has one (the hub refuses more than remains there), else a budget of its own.
   */
  budget?: OfferBudget
}

/**
 * Signed handoff contexts through a hub (seed 003): build, sign and send in one call, and read
 * the hops the hub witnessed.
 * @example
 * const hops = new HopClient(client)
 * const { handoff, answer } = await hops.offer({ to: planner, dialog: 'ctx-7c1e', task: 'task-42' })
 */
export class HopClient {
  private signer: Promise<Signer> | undefined

  constructor(private readonly client: SignedClient) {}

  /** Signs an offer from this identity and sends it; answers the Handoff object and the hop. */
  async offer(
    options: OfferOptions,
  ): Promise<{ handoff: Handoff; signed: SignedOffer; answer: OfferedHopView }> {
    const signed = signOffer({
      signer: await this.ownSigner(),
      aud: options.to,
      dialog: options.dialog,
      ...(options.task === undefined ? {} : { task: options.task }),
      ...(options.obo === undefined ? {} : { obo: options.obo }),
      ...(options.grant === undefined ? {} : { grant: options.grant }),
      ...(options.refs === undefined ? {} : { refs: options.refs }),
      ...(options.ttlS === undefined ? {} : { ttlS: options.ttlS }),
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.after === undefined ? {} : { prev: options.after.offer }),
      ...(options.budget === undefined ? {} : { extensions: { [BUDGET_MEMBER]: options.budget } }),
    })
    const handoff = toHandoff(signed, {
      ...(options.after === undefined ? {} : { after: options.after }),
      chain: options.chain ?? options.after !== undefined,
    })
    return { handoff, signed, answer: await this.send(options.to, handoff) }
  }

  /** Sends a Handoff object as it is (a retransmission resends the identical octets). */
  send(to: string, handoff: Handoff): Promise<OfferedHopView> {
    // The Handoff object's JSON form: its elements as the compact text the hub reads.
    const { offer, chain } = toHandoffJson(handoff)
    return this.client.call(contracts.offerHandoff, {
      body: { to, handoff: { offer, ...(chain ? { chain: [...chain] } : {}) } },
    })
  }

  /**
   * Signs a status for an offer (the signed offer element, as delivered) and sends it:
   * `accepted`, `rejected`, `completed` or `failed` as the delegate, `canceled` as the delegator.
   */
  async answer(
    offer: string,
    state: StatusState,
    options: {
      reason?: StatusReason
      detail?: string
      refs?: readonly Ref[]
      now?: () => number
    } = {},
  ): Promise<{ signed: SignedStatus; answer: AnsweredHopView }> {
    const signed = signStatus({
      signer: await this.ownSigner(),
      offer,
      state,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
      ...(options.detail === undefined ? {} : { detail: options.detail }),
      ...(options.refs === undefined ? {} : { refs: options.refs }),
      ...(options.now === undefined ? {} : { now: options.now }),
    })
    return { signed, answer: await this.sendStatus(signed.element as string) }
  }

  /** Sends a signed status as it is. */
  sendStatus(status: string): Promise<AnsweredHopView> {
    return this.client.call(contracts.answerHandoff, { body: { status } })
  }

  /** A hop this identity took part in, by the handoff digest of its offer. */
  read(digest: string): Promise<HopView> {
    return this.client.call(contracts.readHop, { params: { digest } })
  }

  /** The delegation chain through a hop, as far as this identity took part in it. */
  chain(digest: string): Promise<HopChainView> {
    return this.client.call(contracts.readHopChain, { params: { digest } })
  }

  /** This identity's hop inbox after an exclusive sequence. */
  inbox(after = 0, limit?: number): Promise<HopInboxView> {
    return this.client.call(contracts.listHopInbox, {
      query: { after, ...(limit === undefined ? {} : { limit }) },
    })
  }

  private ownSigner(): Promise<Signer> {
    this.signer ??= hopSigner(this.client.identity)
    return this.signer
  }
}
