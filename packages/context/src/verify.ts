import {
  DEFAULT_MAX_CHAIN_LENGTH,
  DEFAULT_MAX_ELEMENT_OCTETS,
  DEFAULT_MAX_LIFETIME_MS,
  DEFAULT_SKEW_MS,
  OFFER_JWS_TYP,
} from './constants.js'
import { handoffDigest, type SignedElement } from './digest.js'
import type { ParsedElement } from './element.js'
import { ContextError, type ReasonCode } from './errors.js'
import { type TrustConfig, TrustStore, toTrustStore } from './keys.js'
import { type Handoff, isOfferClaims, type OfferClaims } from './offer.js'
import {
  finishElement,
  isOpenFailure,
  type KeyedElement,
  keyElement,
  type OpenFailure,
  type ReadElement,
  signatureVerifies,
  signatureVerifiesAsync,
  tryReadElement,
} from './open.js'
import { checkRefs, type RefPolicy, type RefResult } from './refs.js'
import type { ReplayStore } from './replay-store.js'

/** The seven checks, in the seed's order, plus the caller's policy hook. */
export type CheckName =
  | 'signature'
  | 'audience'
  | 'freshness'
  | 'replay'
  | 'dialog'
  | 'chain'
  | 'refs'
  | 'policy'

/**
 * Answers the trust configuration for a handoff's elements, called once per handoff, before any
 * signature is checked, with every element that parsed (current offer first): for a receiver
 * whose trust lives in a database, which it reads for just the issuers these elements name.
 */
export type TrustResolver = (
  elements: readonly ParsedElement[],
) => TrustConfig | TrustStore | Promise<TrustConfig | TrustStore>

/** The receiver's configuration for verifying a handoff. */
export interface VerifyOptions {
  /** Issuer identifiers to keys, or a resolver that answers them; the only source of keys. */
  readonly trust: TrustConfig | TrustStore | TrustResolver
  /**
   * Which issuers are trusted now, for a receiver whose keys are fixed (a did:key names its key)
   * but whose trust in a sender can change (admission, suspension): asked once per handoff with
   * the `iss` of every element that parsed, and read beside the signature checks when they are
   * offloaded. An element whose `iss` is not in the answer fails check 1 as `untrusted-key`, as if
   * `trust` held no key for it.
   */
  readonly admitted?: (
    issuers: readonly string[],
  ) => ReadonlySet<string> | Promise<ReadonlySet<string>>
  /**
   * Check a chain's signatures on libuv's thread pool, all at once, while the current offer's is
   * checked on the calling thread, so a long chain neither holds that thread nor waits on one core
   * (default false: all on the calling thread, one after another). The answer is the same either
   * way, since the verdicts are read in the seed's order.
   */
  readonly offload?: boolean
  /** The receiver's own identifier; `aud` must equal it. */
  readonly audience: string
  /** Clock in epoch milliseconds (default Date.now); wire times are NumericDate seconds. */
  readonly now?: () => number
  /** Allowed clock skew in milliseconds (default 60 000). */
  readonly skewMs?: number
  /** Largest exp - iat in milliseconds (default 300 000); longer fails freshness as `stale`. */
  readonly maxLifetimeMs?: number
  /** Replay store for check 4; when omitted, check 4 is skipped and `replayChecked` is false. */
  readonly replay?: ReplayStore
  /** The dialog(s) the receiver expects (host protocol identifier), or a predicate. */
  readonly dialog?: string | readonly string[] | ((dialog: string, offer: OfferClaims) => boolean)
  /** Largest number of offers in a handoff, current included (default 16). */
  readonly maxChainLength?: number
  /** Require a full chain (its first element has no prev); a partial one is `policy`. */
  readonly requireFullChain?: boolean
  /** Require a full chain whose first element is signed by one of these origins. */
  readonly trustedOrigins?: readonly string[]
  /** Largest signed element in octets (default 16 384); larger is `policy`. */
  readonly maxElementOctets?: number
  /** How far to check references (default: none required). */
  readonly refs?: RefPolicy
  /** A caller's policy hook run after the seven checks; false rejects with `policy`. */
  readonly policy?: (offer: VerifiedHandoff) => boolean | Promise<boolean>
}

/** One verified earlier offer of the chain. */
export interface ChainLink {
  /** Its signed members. */
  readonly claims: OfferClaims
  /** Its handoff digest. */
  readonly digest: string
}

/** A handoff that passed every check. */
export interface VerifiedHandoff {
  /** Always true. */
  readonly ok: true
  /** The current offer's members. */
  readonly claims: OfferClaims
  /** The current offer's handoff digest (name it in statuses). */
  readonly digest: string
  /** The current offer exactly as received. */
  readonly element: SignedElement
  /** The verified chain, oldest first, without the current offer. */
  readonly chain: readonly ChainLink[]
  /** True when the chain does not reach the start (its first offer, or the current one, has prev). */
  readonly partial: boolean
  /** The first sender of the carried chain (the origin, when not partial). */
  readonly origin: string
  /** Every ref of the current offer with its outcome. */
  readonly refs: readonly RefResult[]
  /** Whether check 4 ran (a replay store was given). */
  readonly replayChecked: boolean
}

/** A handoff that failed a check: the first failure, with the seed's reason code. */
export interface RejectedHandoff {
  /** Always false. */
  readonly ok: false
  /** The seed's reason code. */
  readonly reason: ReasonCode
  /** Which check failed. */
  readonly check: CheckName
  /** For a chain element: its index, 0 = oldest. */
  readonly index?: number
  /** The current offer's handoff digest, when it could be computed. */
  readonly digest?: string
  /** The current offer's members, once its signature verified. */
  readonly claims?: OfferClaims
  /** For `replay`: true when the identical octets were seen before (a retransmission). */
  readonly retransmission?: boolean
  /** For `equivocation`: the digest of the offer first seen for this (iss, hop). */
  readonly firstDigest?: string
  /** Text for people; software must not rely on it. */
  readonly detail: string
}

/** The outcome of verifyHandoff. */
export type HandoffVerification = VerifiedHandoff | RejectedHandoff

/**
 * Parses a Handoff object from carried data; throws ContextError('bad-signature') when it is not
 * `{ offer, chain? }` with signed elements.
 */
export function parseHandoff(value: unknown): Handoff {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ContextError('bad-signature', 'handoff is not an object')
  }
  const v = value as Record<string, unknown>
  if (!isElement(v.offer)) throw new ContextError('bad-signature', 'offer missing')
  if (v.chain === undefined) return { offer: v.offer }
  if (!Array.isArray(v.chain) || !v.chain.every(isElement)) {
    throw new ContextError('bad-signature', 'chain is not a list of signed elements')
  }
  return { offer: v.offer, chain: v.chain as SignedElement[] }
}

function isElement(v: unknown): v is SignedElement {
  return typeof v === 'string' || v instanceof Uint8Array
}

/**
 * Verifies a handoff with the seed's seven checks in order, stopping at the first failure.
 * @example
 * const r = await verifyHandoff(handoff, { trust, audience: 'spiffe://b.example/agent/coder', replay })
 * if (!r.ok) reply(r.reason)
 */
// seed 003: signature and trusted key, audience, freshness, replay, dialog, chain, refs, in order;
// the first failure ends processing
export async function verifyHandoff(
  handoff: Handoff | unknown,
  options: VerifyOptions,
): Promise<HandoffVerification> {
  let h: Handoff
  try {
    h = parseHandoff(handoff)
  } catch (e) {
    return reject('bad-signature', 'signature', e instanceof Error ? e.message : 'malformed')
  }
  const maxOctets = options.maxElementOctets ?? DEFAULT_MAX_ELEMENT_OCTETS
  const elements = h.chain ?? []
  // seed 003: the chain length is bounded before any signature work; a longer chain is not read
  const tooDeep = elements.length + 1 > (options.maxChainLength ?? DEFAULT_MAX_CHAIN_LENGTH)

  // Each element is parsed and digested once, here; every later step reads these.
  const current = tryReadElement(h.offer, maxOctets)
  if (isOpenFailure(current)) {
    return reject(current.reason, 'signature', current.detail, { digest: handoffDigest(h.offer) })
  }
  const reads = tooDeep ? [] : elements.map((e) => tryReadElement(e, maxOctets))
  const trust = await resolveTrust(options.trust, current, reads)

  // 1. signature and trusted key
  const keyed = keyElement(current, trust, OFFER_JWS_TYP)
  if (isOpenFailure(keyed)) {
    return reject(keyed.reason, 'signature', keyed.detail, { digest: current.digest })
  }
  const nowS = (options.now ?? Date.now)() / 1000
  const skewS = (options.skewMs ?? DEFAULT_SKEW_MS) / 1000
  const maxLifeS = (options.maxLifetimeMs ?? DEFAULT_MAX_LIFETIME_MS) / 1000
  const chain = new ChainVerdicts(tooDeep ? [] : reads.map((r) => keyOf(r, trust)))
  const admission = askAdmission(options.admitted, current, reads)
  let good: boolean
  // The chain's signatures start on the thread pool only when nothing the unverified offer already
  // shows (its audience, freshness, a fixed dialog, the chain's length) refuses it before check 6:
  // a refused offer costs one signature, as in the sequential order. The current offer's own is
  // checked on this thread meanwhile, since every later check waits for it.
  const pooled =
    options.offload === true &&
    chain.steps.length > 0 &&
    mayReachChain(keyed.parsed.payload, options, nowS, skewS, maxLifeS)
  if (pooled) {
    chain.start()
    good = signatureVerifies(keyed)
    chain.admitted = await admission
  } else {
    chain.admitted = await admission
    good = chain.admits(keyed) && signatureVerifies(keyed)
  }
  if (!chain.admits(keyed)) return untrusted(current.digest)
  const opened = finishElement(keyed, good, isOfferClaims)
  if (isOpenFailure(opened)) {
    return reject(opened.reason, 'signature', opened.detail, { digest: current.digest })
  }
  const { claims, digest } = opened
  const base = { digest, claims }

  // 2. audience
  // seed 003: aud must equal the receiver's own identifier
  if (claims.aud !== options.audience) {
    return reject('wrong-audience', 'audience', 'aud is not this receiver', base)
  }

  // 3. freshness
  if (!isFresh(claims, nowS, skewS, maxLifeS)) {
    return reject('stale', 'freshness', 'offer is not live', base)
  }

  // 4. replay
  if (options.replay !== undefined) {
    const expiresAt = (claims.exp + skewS) * 1000
    const prior = await options.replay.remember(
      { iss: claims.iss, hop: claims.hop, digest, expiresAt },
      nowS * 1000,
    )
    if (prior !== undefined) {
      // seed 003: same sender and hop with different octets is equivocation
      if (prior.digest !== digest) {
        return reject('equivocation', 'replay', 'hop seen with other octets', {
          ...base,
          firstDigest: prior.digest,
        })
      }
      return reject('replay', 'replay', 'hop seen before', { ...base, retransmission: true })
    }
  }

  // 5. dialog
  // choice: the seed gives no reason code of its own for a dialog mismatch, so it is `policy`
  if (options.dialog !== undefined && !dialogMatches(options.dialog, claims)) {
    return reject('policy', 'dialog', 'dialog not expected', base)
  }

  // 6. chain
  if (options.offload === true) chain.start()
  const links = await verifyChain(elements.length, tooDeep, chain, claims, options)
  if ('reason' in links) {
    return reject(links.reason, 'chain', links.detail, { ...base, index: links.index })
  }

  // 7. refs
  const refs = await checkRefs(claims.refs ?? [], options.refs)
  if (refs.failure !== undefined)
    return reject(refs.failure, 'refs', 'reference check failed', base)

  const verified: VerifiedHandoff = {
    ok: true,
    claims,
    digest,
    element: h.offer,
    chain: links.links,
    partial: links.partial,
    origin: links.links[0]?.claims.iss ?? claims.iss,
    refs: refs.results,
    replayChecked: options.replay !== undefined,
  }
  if (options.policy !== undefined && !(await options.policy(verified))) {
    return reject('policy', 'policy', 'refused by local policy', base)
  }
  return verified
}

function resolveTrust(
  trust: VerifyOptions['trust'],
  current: ReadElement,
  reads: readonly (ReadElement | OpenFailure)[],
): TrustStore | Promise<TrustStore> {
  if (typeof trust !== 'function') return toTrustStore(trust)
  const parsed = [current.parsed]
  for (const r of reads) if (!isOpenFailure(r)) parsed.push(r.parsed)
  const answer = trust(parsed)
  return answer instanceof Promise ? answer.then(toTrustStore) : toTrustStore(answer)
}

function untrusted(digest: string): RejectedHandoff {
  return reject('untrusted-key', 'signature', 'issuer not trusted now', { digest })
}

function askAdmission(
  admitted: VerifyOptions['admitted'],
  current: ReadElement,
  reads: readonly (ReadElement | OpenFailure)[],
): ReadonlySet<string> | Promise<ReadonlySet<string>> | undefined {
  if (admitted === undefined) return undefined
  const issuers = new Set<string>()
  for (const r of [current, ...reads]) {
    if (isOpenFailure(r)) continue
    const iss = r.parsed.payload.iss
    if (typeof iss === 'string' && iss.length > 0) issuers.add(iss)
  }
  return admitted([...issuers])
}

function keyOf(read: ReadElement | OpenFailure, trust: TrustStore): KeyedElement | OpenFailure {
  return isOpenFailure(read) ? read : keyElement(read, trust, OFFER_JWS_TYP)
}

/** Whether checks 2, 3 and 5 would pass on what the unverified offer shows. */
function mayReachChain(
  payload: unknown,
  options: VerifyOptions,
  nowS: number,
  skewS: number,
  maxLifeS: number,
): boolean {
  if (!isOfferClaims(payload)) return false
  if (payload.aud !== options.audience || !isFresh(payload, nowS, skewS, maxLifeS)) return false
  // a dialog predicate is the caller's code: it is called once, on verified members only
  const dialog = options.dialog
  return dialog === undefined || typeof dialog === 'function' || dialogMatches(dialog, payload)
}

/**
 * The chain elements up to check 1 of each, and their signature verdicts: started together on the
 * thread pool, or computed one at a time as the walk reaches them. Either way they are read in
 * the chain's order, so the first failure answered is the one the sequential order gives.
 */
class ChainVerdicts {
  private started: Promise<boolean>[] | undefined
  /** The issuers trusted now, when the caller answers admission apart from keys. */
  admitted: ReadonlySet<string> | undefined

  constructor(readonly steps: readonly (KeyedElement | OpenFailure)[]) {}

  /** Starts the verifies the walk can reach: every element before the first that failed check 1. */
  start(): void {
    if (this.started !== undefined) return
    this.started = []
    for (const step of this.steps) {
      if (isOpenFailure(step)) break
      this.started.push(signatureVerifiesAsync(step))
    }
  }

  /** Whether an element's issuer is trusted now (always, without an admission answer). */
  admits(step: KeyedElement): boolean {
    return this.admitted === undefined || this.admitted.has(step.parsed.payload.iss as string)
  }

  verdict(i: number, step: KeyedElement): boolean | Promise<boolean> {
    return this.started?.[i] ?? signatureVerifies(step)
  }
}

/** Verifies a handoff and returns it, or throws ContextError with the reason code. */
export async function assertHandoff(
  handoff: Handoff | unknown,
  options: VerifyOptions,
): Promise<VerifiedHandoff> {
  const r = await verifyHandoff(handoff, options)
  if (!r.ok)
    throw new ContextError(r.reason, r.detail, r.index === undefined ? {} : { index: r.index })
  return r
}

// seed 003: freshness covers the window (exp after iat), the clock skew on both ends and the
// maximum lifetime (exp - iat); any failure is `stale`, whatever maximum the receiver configures
function isFresh(c: OfferClaims, nowS: number, skewS: number, maxLifeS: number): boolean {
  if (c.exp <= c.iat) return false
  if (c.exp - c.iat > maxLifeS) return false
  if (c.iat > nowS + skewS) return false
  return nowS < c.exp + skewS
}

function dialogMatches(expected: NonNullable<VerifyOptions['dialog']>, c: OfferClaims): boolean {
  if (typeof expected === 'string') return c.dialog === expected
  if (typeof expected === 'function') return expected(c.dialog, c)
  return expected.includes(c.dialog)
}

interface ChainOk {
  readonly links: ChainLink[]
  readonly partial: boolean
}

interface ChainFailure {
  readonly reason: ReasonCode
  readonly detail: string
  readonly index: number
}

/**
 * The chain rules: length, each element's signature, cycles, then for each link prev, continuity
 * and timing; finally partial-chain policy.
 */
// seed 003: the seven chain rules (signature, prev, continuity, timing, partial, cycle, length)
async function verifyChain(
  n: number,
  tooDeep: boolean,
  verdicts: ChainVerdicts,
  current: OfferClaims,
  options: VerifyOptions,
): Promise<ChainOk | ChainFailure> {
  if (tooDeep) return { reason: 'too-deep', detail: 'chain longer than allowed', index: n }
  const links: ChainLink[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const step = verdicts.steps[i]!
    if (isOpenFailure(step)) return { reason: step.reason, detail: step.detail, index: i }
    if (!verdicts.admits(step)) {
      return { reason: 'untrusted-key', detail: 'issuer not trusted now', index: i }
    }
    // a verdict computed here is used as it is: awaiting it would cost a turn of the job queue
    const verdict = verdicts.verdict(i, step)
    const verified = typeof verdict === 'boolean' ? verdict : await verdict
    const opened = finishElement(step, verified, isOfferClaims)
    if (isOpenFailure(opened)) return { reason: opened.reason, detail: opened.detail, index: i }
    links[i] = { claims: opened.claims, digest: opened.digest }
  }
  const me = options.audience
  const senders = new Set<string>()
  for (let i = 0; i <= n; i++) {
    const c = i < n ? links[i]!.claims : current
    // seed 003: a sender appearing twice, or the receiver earlier in the chain, is a cycle
    if (senders.has(c.iss)) return { reason: 'cycle', detail: 'sender appears twice', index: i }
    senders.add(c.iss)
    if (i < n && (c.iss === me || c.aud === me)) {
      return { reason: 'cycle', detail: 'receiver appears earlier in the chain', index: i }
    }
  }
  const skewS = (options.skewMs ?? DEFAULT_SKEW_MS) / 1000
  for (let i = 1; i <= n; i++) {
    const before = links[i - 1]!
    const c = i < n ? links[i]!.claims : current
    // seed 003: each offer's prev must equal the handoff digest of the previous offer
    if (c.prev !== before.digest) return { reason: 'broken-chain', detail: 'prev link', index: i }
    // seed 003: each previous offer's aud must equal the next offer's iss
    if (before.claims.aud !== c.iss) {
      return { reason: 'broken-chain', detail: 'continuity', index: i }
    }
    // seed 003: each earlier offer must have been live when the next was issued
    if (c.iat < before.claims.iat - skewS || c.iat >= before.claims.exp + skewS) {
      return { reason: 'broken-chain', detail: 'timing', index: i }
    }
  }
  // seed 003: if the first element has a prev, the chain is partial and does not reach the start
  const first = n > 0 ? links[0]!.claims : current
  const partial = first.prev !== undefined
  const needFull = options.requireFullChain === true || options.trustedOrigins !== undefined
  if (needFull && partial) return { reason: 'policy', detail: 'full chain required', index: 0 }
  if (options.trustedOrigins !== undefined && !options.trustedOrigins.includes(first.iss)) {
    return { reason: 'policy', detail: 'origin not trusted', index: 0 }
  }
  return { links, partial }
}

function reject(
  reason: ReasonCode,
  check: CheckName,
  detail: string,
  extra: Partial<Omit<RejectedHandoff, 'ok' | 'reason' | 'check' | 'detail'>> = {},
): RejectedHandoff {
  const out: Record<string, unknown> = { ok: false, reason, check, detail }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) out[k] = v
  return out as unknown as RejectedHandoff
}

/** Compiles a trust configuration once, for reuse across many verifications. */
export function createTrustStore(trust: TrustConfig): TrustStore {
  return new TrustStore(trust)
}
