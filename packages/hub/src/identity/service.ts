import { createHash, createPrivateKey, type KeyObject, sign, timingSafeEqual } from 'node:crypto'
import { generateKeyPair } from '@baton/context'
import {
  type AdmissionDecision,
  AdmissionState,
  type AgentLabel,
  BatonError,
  BODY_COMPONENTS,
  type ContractConfig,
  checkSignatureHeaders,
  type DiscoveryDocument,
  type HttpMessage,
  type MeView,
  PRESENT_COMPONENTS,
  PRINCIPAL_PAGE,
  PROTOCOL_VERSION,
  type PrincipalPosition,
  type PrincipalView,
  type PublicJwk,
  REQUIRED_COMPONENTS,
  SIGNATURE_LABEL,
  signDirectoryResponse,
  toPrincipalCursor,
  WEB_BOT_AUTH_TAG,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { keyThumbprint, publicKeyFromRaw } from '../crypto.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import { countStates } from '../store/operator-reads.js'
import {
  consumeDailyQuotas,
  consumeWindowQuotas,
  quotaExceeded,
  utcDayStart,
  windowQuotaExceeded,
} from '../store/quota.js'
import type { PrincipalRow } from '../store/schema.js'
import type { KeySealer } from '../store/sealing.js'
import {
  Carry,
  type CarryGroup,
  type Carrying,
  type GroupOutcome,
  type Tx,
  type WriteBatcher,
} from '../store/transaction.js'
import { type HandedTrace, traceColumns, traceFields } from '../telemetry/trace-context.js'
import * as store from './store.js'
import {
  didKeyResolver,
  type EnrolledKey,
  hubPolicy,
  type VerifiedSignature,
  verifyPlacement,
  verifySignedHeadersAsync,
} from './verify.js'

/** What a principal used today of its quotas, as `GET /v1/me` shows it. */
interface Usage {
  requestsToday: number
  storedBytes: number
  messagesToday: number
  /** The request's admission, when it was read with the usage (its principal's row among it). */
  admission?: store.AdmissionRead | undefined
}

/** A verified principal and its admission state, as feature routes see the caller. */
export interface Principal {
  principal: string
  state: AdmissionState
  enrolledAt: number
  decidedAt: number | null
}

/** What the identity service needs from the rest of the hub. */
export interface IdentityDeps {
  database: Database
  batcher: WriteBatcher
  clock: Clock
  config: Config['identity']
  bodyLimitBytes: number
  /** The limits the contracts hold under this hub's config, published in discovery. */
  contractLimits: ContractConfig
  version: string
  /** Keys for keyids that are not did:key, such as the RFC 9421 test key; for tests only. */
  extraKeys?: ReadonlyMap<string, KeyObject>
  /** Where enrolments and admission decisions are announced after commit. */
  bus?: EventBus
  /**
   * Reads, in one query, what a principal used today of its request quota and of the quotas
   * other features count (stored bytes, messages); given the nonce of a request the principal
   * signed, also that request's admission (`store.readAdmission`), in the same query.
   */
  usage?: (
    db: Database['db'],
    principal: string,
    dayStart: number,
    signed?: { nonce: string },
  ) => Promise<Usage & { admission?: store.AdmissionRead }>
  /** Seals the hub's private key at rest; needed by `init` (the admin command does without). */
  sealer?: KeySealer
}

/**
 * A request to authenticate from its header section: the message as signed, whether it announces
 * a body (checked against its Content-Digest as it streams in), who sent it, and what it asks for.
 */
export interface AuthenticateInput {
  message: HttpMessage
  declaresBody: boolean
  /** The client address (under the trust-proxy setting), which new-key enrolment is counted by. */
  address: string
  /** True for `GET /v1/me`, which answers principals in every admission state. */
  admissionExempt: boolean
}

/** The quota scope counting a principal's signed requests. */
export const REQUEST_QUOTA_SCOPE = 'principal.requests'

/** The quota scope counting the new keys enrolled from one client address per hour. */
export const ENROL_QUOTA_SCOPE = 'enrol.address'

const HOUR_MS = 60 * 60 * 1000
/** How long a key directory answer may be cached, and its signature's lifetime. */
export const DIRECTORY_MAX_AGE_S = 86_400
const HUB_KEY_SLOT = 'primary'
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** One signed request's admission: its verified signature and whether it is exempt. */
export interface Admission {
  sig: VerifiedSignature
  address: string
  admissionExempt: boolean
  /** The request's trace context, recorded with the enrolment it makes, if it makes one. */
  trace?: HandedTrace | undefined
  /**
   * The enrolled principal `prepare` read before the body, not read again at commit: a decision
   * made meanwhile (a suspension) applies to requests judged after it, as for any request
   * admitted before its route ran.
   */
  known?: PrincipalRow
}

/**
 * The principal behind a request, and the refusal its quota gives if any; no principal when the
 * key is new and its address may enrol no more keys this hour.
 */
export interface AdmissionOutcome {
  principal?: Principal
  refusal?: BatonError
}

/** A signed request's admission, pending until it commits with the request's first write. */
export type AdmissionCarry = Carry<Admission, AdmissionOutcome>

function replayed(keyid: string): BatonError {
  return new BatonError('signature_replayed', 'This nonce was already used with this key', {
    keyid,
  })
}

function toPrincipal(row: PrincipalRow): Principal {
  return {
    principal: row.principal,
    state: AdmissionState.parse(row.state),
    enrolledAt: row.enrolled_at,
    decidedAt: row.decided_at,
  }
}

/** The labels of a principal as views show them: the operator's wins where both are set. */
function labelsOf(row: Pick<PrincipalRow, 'label' | 'operator_label'> | undefined) {
  const agentLabel = row?.label ?? null
  const operatorLabel = row?.operator_label ?? null
  return { label: operatorLabel ?? agentLabel, agentLabel, operatorLabel }
}

function toView(row: PrincipalRow): PrincipalView {
  const p = toPrincipal(row)
  return {
    principal: p.principal,
    ...labelsOf(row),
    state: p.state,
    enrolledAt: iso(p.enrolledAt)!,
    decidedAt: iso(p.decidedAt),
    ...traceFields(row),
  }
}

function notFoundPrincipal(principal: string): BatonError {
  return new BatonError('principal_not_found', 'No such principal', { principal })
}

/** The refusal for a principal that is not approved, or undefined when it is. */
export function admissionError(p: Principal): BatonError | undefined {
  switch (p.state) {
    case 'approved':
      return undefined
    case 'pending':
      return new BatonError('admission_pending', 'This key waits for an operator to approve it', {
        principal: p.principal,
        state: p.state,
      })
    case 'rejected':
      return new BatonError('admission_rejected', 'An operator rejected this key', {
        principal: p.principal,
        state: p.state,
      })
    case 'suspended':
      return new BatonError('principal_suspended', 'An operator suspended this key', {
        principal: p.principal,
        state: p.state,
      })
  }
}

/**
 * Agent identities (seed 000): RFC 9421 request verification with a durable nonce store,
 * enrolment and admission, per-principal quotas, the hub's own key and the admin decisions. HTTP
 * and the `baton admin` command call these same functions.
 */
export class IdentityService {
  private readonly resolveKey: (keyid: string) => KeyObject | undefined
  private hubJwk: (PublicJwk & { kid: string }) | undefined

  constructor(private readonly deps: IdentityDeps) {
    this.resolveKey = didKeyResolver(deps.extraKeys)
  }

  /** Loads the hub's key, creating it on the first start; every instance converges on one key. */
  async init(): Promise<void> {
    const { db } = this.deps.database
    let row = await store.findHubKey(db, HUB_KEY_SLOT)
    if (!row) {
      const jwk = generateKeyPair('EdDSA').privateJwk as { x: string; d: string }
      const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: jwk.x }
      // RFC 7638 JWK thumbprint of the public key names it.
      const kid = createHash('sha256')
        .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x: jwk.x }))
        .digest('base64url')
      await store.insertHubKey(db, {
        slot: HUB_KEY_SLOT,
        kid,
        public_jwk: JSON.stringify(publicJwk),
        private_jwk: this.seal(JSON.stringify({ ...publicJwk, d: jwk.d })),
        created_at: this.deps.clock.now(),
      })
      row = await store.findHubKey(db, HUB_KEY_SLOT)
    }
    if (!row) throw new Error('The hub key could not be stored')
    // A key an older hub stored in the clear (or under another KEK) is sealed now, once, by
    // whichever instance gets there first; a sealed key needs its KEK to start at all.
    const plain = this.unseal(row.private_jwk)
    if (!this.sealer.isCurrent(row.private_jwk)) {
      await store.resealHubKey(db, HUB_KEY_SLOT, row.private_jwk, this.seal(plain))
    }
    this.hubJwk = {
      ...(JSON.parse(row.public_jwk) as PublicJwk),
      kid: row.kid,
      alg: 'EdDSA',
      use: 'sig',
    }
  }

  /**
   * The hub's keys as an HTTP Message Signatures directory (a JWKS whose `kid` is each key's
   * RFC 7638 thumbprint), with the fields that sign the answer for the authority it was asked at.
   */
  async signatureDirectory(authority: string): Promise<{
    body: { keys: (PublicJwk & { kid: string })[] }
    signatureInput: string
    signature: string
  }> {
    if (!this.hubJwk) throw new Error('The hub key is not initialised')
    this.directoryKey ??= await this.hubPrivateKey()
    const key = this.directoryKey
    const created = Math.floor(this.deps.clock.now() / 1000)
    const { kid, x } = this.hubJwk
    const signed = signDirectoryResponse(
      authority,
      { keyid: kid, created, expires: created + DIRECTORY_MAX_AGE_S },
      (data) => sign(null, data, key),
    )
    return {
      body: { keys: [{ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'ed25519', use: 'sig' }] },
      signatureInput: signed.signatureInput,
      signature: signed.signature,
    }
  }

  /** The hub's private key once loaded for the directory; it never changes while the hub runs. */
  private directoryKey: KeyObject | undefined

  /** The hub's own private key, for signing receipts. */
  async hubPrivateKey(): Promise<KeyObject> {
    const row = await store.findHubKey(this.deps.database.db, HUB_KEY_SLOT)
    if (!row) throw new Error('The hub key is not initialised')
    return createPrivateKey({ key: JSON.parse(this.unseal(row.private_jwk)), format: 'jwk' })
  }

  private get sealer(): KeySealer {
    if (!this.deps.sealer) throw new Error('The identity service has no key sealer')
    return this.deps.sealer
  }

  private seal(privateJwk: string): string {
    return this.sealer.seal('hub key', privateJwk)
  }

  private unseal(stored: string): string {
    return this.sealer.unseal('hub key', stored)
  }

  /**
   * Verifies a signed request's header section without side effects; throws the failure's code.
   * The body, when `declaresBody`, is checked against its Content-Digest as it arrives. The
   * Ed25519 verify runs off the event loop. A Web Bot Auth signature's keyid (a JWK thumbprint)
   * is looked up among the enrolled keys, once its fields have passed every other check.
   */
  async verify(message: HttpMessage, declaresBody: boolean): Promise<VerifiedSignature> {
    const policy = hubPolicy(
      this.deps.clock.now(),
      this.deps.config.skewMs,
      this.resolveKey,
      (thumbprint) => this.enrolledKeys.get(thumbprint),
    )
    const input = message.headers['signature-input']
    if (typeof input === 'string' && input.includes(WEB_BOT_AUTH_TAG)) {
      const checked = checkSignatureHeaders(message, declaresBody, policy)
      if (checked.profile === 'web-bot-auth') await this.loadEnrolledKey(checked.keyid)
    }
    return verifySignedHeadersAsync(message, declaresBody, policy, verifyPlacement())
  }

  /** Enrolled keys by thumbprint; a thumbprint always names the same key, so none goes stale. */
  private readonly enrolledKeys = new Map<string, EnrolledKey>()

  private async loadEnrolledKey(thumbprint: string): Promise<void> {
    if (this.enrolledKeys.has(thumbprint)) return
    const row = await store.findPrincipalByThumbprint(this.deps.database.db, thumbprint)
    if (!row) return
    if (this.enrolledKeys.size >= 10_000) this.enrolledKeys.clear()
    this.enrolledKeys.set(thumbprint, {
      principal: row.principal,
      key: publicKeyFromRaw(Buffer.from(row.public_key, 'base64url')),
    })
  }

  /**
   * The write every signed request makes (its nonce, a first request's enrolment, the request
   * quota), committed set-based for the requests that arrive together, in the transaction of the
   * request's own first write when it makes one (`prepare`), else alone (`admit`, `settle`).
   */
  private readonly admissions: CarryGroup<Admission, AdmissionOutcome> = {
    many: (db, inputs) => this.admitMany(db, inputs),
    refusal: (outcome, a) => {
      if (!outcome.principal) return outcome.refusal ?? this.enrolmentRefused(this.deps.clock.now())
      if (a.admissionExempt) return undefined
      return admissionError(outcome.principal) ?? outcome.refusal
    },
  }

  /** The usage read with a request's admission (`prepare`), for `me` to answer from. */
  private readonly usageRead = new WeakMap<Principal, Usage>()

  /** Signatures (keyid and nonce) prepared on this instance whose admission is not committed yet. */
  private readonly inFlight = new Set<string>()

  private enrolment(keyid: string, now: number, trace: HandedTrace | undefined): PrincipalRow {
    const open = this.deps.config.admission === 'open'
    const x = (this.resolveKey(keyid)!.export({ format: 'jwk' }) as PublicJwk).x
    return {
      principal: keyid,
      public_key: x,
      thumbprint: keyThumbprint(x),
      state: open ? 'approved' : 'pending',
      enrolled_at: now,
      decided_at: open ? now : null,
      ...traceColumns(trace),
    }
  }

  private announceEnrolment(row: PrincipalRow, now: number): () => void {
    return () =>
      this.deps.bus?.publish({
        topic: `principal:${row.principal}`,
        type: 'principal.enrolled',
        at: now,
        data: { principal: row.principal, state: row.state },
      })
  }

  /** The refusal of a new key from an address that enrolled its hourly share already. */
  private enrolmentRefused(now: number): BatonError {
    return windowQuotaExceeded(
      ENROL_QUOTA_SCOPE,
      this.deps.config.enrolPerAddressPerHour,
      now,
      HOUR_MS,
    )
  }

  private async admitMany(
    db: Tx['db'],
    inputs: Admission[],
  ): Promise<GroupOutcome<AdmissionOutcome>[]> {
    const { config, clock } = this.deps
    const now = clock.now()
    const fresh = await store.insertNonces(
      db,
      inputs.map(({ sig }) => ({
        keyid: sig.keyid,
        nonce: sig.nonce ?? '',
        expires_at: sig.created * 1000 + config.skewMs,
      })),
    )
    const rows = new Map<string, PrincipalRow>()
    for (const { known } of inputs) if (known) rows.set(known.principal, known)
    const unknown = [...new Set(inputs.map((a) => a.sig.keyid))].filter((k) => !rows.has(k))
    for (const r of await store.findPrincipals(db, unknown)) rows.set(r.principal, r)
    const announce = new Map<string, () => void>()
    const refusedKeys = new Set<string>()
    // A new key counts once against the address of the first request that brings it.
    const addressOf = new Map<string, string>()
    const traceOf = new Map<string, HandedTrace | undefined>()
    for (const { sig, address, trace } of inputs) {
      if (!rows.has(sig.keyid) && !addressOf.has(sig.keyid)) {
        addressOf.set(sig.keyid, address)
        traceOf.set(sig.keyid, trace)
      }
    }
    if (addressOf.size > 0) {
      const uses = new Map<string, number>()
      for (const address of addressOf.values()) uses.set(address, (uses.get(address) ?? 0) + 1)
      const after = await consumeWindowQuotas(db, {
        scope: ENROL_QUOTA_SCOPE,
        uses,
        now,
        windowMs: HOUR_MS,
      })
      const nth = new Map<string, number>()
      for (const [keyid, address] of addressOf) {
        const k = (nth.get(address) ?? 0) + 1
        nth.set(address, k)
        if (after.get(address)! - uses.get(address)! + k > config.enrolPerAddressPerHour) {
          refusedKeys.add(keyid)
        }
      }
    }
    const newcomers = [...addressOf.keys()].filter((k) => !refusedKeys.has(k))
    if (newcomers.length > 0) {
      await store.enrolPrincipals(
        db,
        newcomers.map((k) => this.enrolment(k, now, traceOf.get(k))),
      )
      for (const r of await store.findPrincipals(db, newcomers)) {
        rows.set(r.principal, r)
        announce.set(r.principal, this.announceEnrolment(r, now))
      }
    }
    // A nonce counts once: the first request that carries it is fresh, any other is a replay.
    const seen = new Set<string>()
    const admitted = inputs.map(({ sig, admissionExempt }) => {
      const key = `${sig.keyid}\0${sig.nonce ?? ''}`
      const isFresh = fresh.has(key) && !seen.has(key)
      seen.add(key)
      const row = rows.get(sig.keyid)
      const principal = row ? toPrincipal(row) : undefined
      const counts = isFresh && !admissionExempt && principal?.state === 'approved'
      return { isFresh, keyid: sig.keyid, principal, counts }
    })
    const uses = new Map<string, number>()
    for (const a of admitted) {
      if (a.counts) uses.set(a.keyid, (uses.get(a.keyid) ?? 0) + 1)
    }
    const after = await consumeDailyQuotas(db, { scope: REQUEST_QUOTA_SCOPE, uses, now })
    const nth = new Map<string, number>()
    return admitted.map(({ isFresh, keyid, principal, counts }): GroupOutcome<AdmissionOutcome> => {
      if (!isFresh) return { ok: false, error: replayed(keyid) }
      if (!principal) return { ok: true, value: { refusal: this.enrolmentRefused(now) } }
      const who = principal.principal
      const hook = announce.get(who)
      announce.delete(who)
      const done = (value: AdmissionOutcome): GroupOutcome<AdmissionOutcome> =>
        hook ? { ok: true, value, after: hook } : { ok: true, value }
      if (!counts) return done({ principal })
      // The k-th use of this batch brought the count to (after - uses + k).
      const k = (nth.get(who) ?? 0) + 1
      nth.set(who, k)
      const count = after.get(who)! - uses.get(who)! + k
      if (count > config.quotas.requestsPerDay) {
        return done({
          principal,
          refusal: quotaExceeded(REQUEST_QUOTA_SCOPE, config.quotas.requestsPerDay, now),
        })
      }
      return done({ principal })
    })
  }

  /**
   * Authenticates a request from its header section: verifies its signature, records its nonce
   * durably (a replay is refused even after a restart or on another instance), enrols a new key
   * (at most `enrolPerAddressPerHour` from one address), counts the request quota, and refuses a
   * principal that is not approved unless the route is exempt.
   */
  async authenticate(input: AuthenticateInput): Promise<Principal> {
    return this.admit(await this.verify(input.message, input.declaresBody), input)
  }

  /** True when admission is open and the signing key is not enrolled yet (a read, no write). */
  async isNewUnderOpenAdmission(sig: VerifiedSignature): Promise<boolean> {
    if (this.deps.config.admission !== 'open') return false
    return (await store.findPrincipal(this.deps.database.db, sig.keyid)) === undefined
  }

  /** The durable half of `authenticate`, for a signature `verify` already accepted. */
  async admit(
    sig: VerifiedSignature,
    input: { address: string; admissionExempt: boolean; trace?: HandedTrace | undefined },
  ): Promise<Principal> {
    const admission = {
      sig,
      address: input.address,
      admissionExempt: input.admissionExempt,
      trace: input.trace,
    }
    const outcome = await this.deps.batcher.commitCarry(new Carry(this.admissions, admission))
    const refusal = this.admissions.refusal(outcome, admission)
    if (refusal) throw refusal
    return outcome.principal!
  }

  /**
   * Judges a signed request of an enrolled key with reads alone, before its body is read, and
   * answers its principal and its pending admission, which commits with the request's first
   * write (its operation's `Caller.carry`, passed to that write as `RunOptions.carry`) or,
   * failing one, through `settle` before it is answered. Refuses at once
   * a replay it can see (committed, or in flight on this instance), a principal that is not
   * approved (unless exempt) and a used-up request quota. A key that is not enrolled is, under
   * open admission, approved as it enrols, so its enrolment rides in the carry too (`enrols`;
   * the address's hourly share of new keys is counted at commit and refuses it then); under
   * operator admission it answers undefined, its enrolment decided by `admit`. The unique nonce
   * insert at commit stays the final word across instances.
   */
  async prepare(
    sig: VerifiedSignature,
    input: { address: string; admissionExempt: boolean; trace?: HandedTrace | undefined },
  ): Promise<{ principal: Principal; carry: AdmissionCarry; enrols: boolean } | undefined> {
    const nonce = sig.nonce ?? ''
    const key = `${sig.keyid}\0${nonce}`
    if (this.inFlight.has(key)) throw replayed(sig.keyid)
    const now = this.deps.clock.now()
    const { db } = this.deps.database
    const dayStart = utcDayStart(now)
    // `GET /v1/me` (exempt) is judged and answered from one read: its usage comes with it.
    const read =
      input.admissionExempt && this.deps.usage
        ? await this.deps.usage(db, sig.keyid, dayStart, { nonce })
        : undefined
    const seen =
      read?.admission ??
      (await store.readAdmission(db, {
        keyid: sig.keyid,
        nonce,
        scope: REQUEST_QUOTA_SCOPE,
        windowStart: dayStart,
      }))
    if (seen.replayed || this.inFlight.has(key)) throw replayed(sig.keyid)
    const enrols = !seen.principal
    if (enrols && this.deps.config.admission !== 'open') return undefined
    const principal: Principal = seen.principal
      ? toPrincipal(seen.principal)
      : { principal: sig.keyid, state: 'approved', enrolledAt: now, decidedAt: now }
    if (!input.admissionExempt) {
      const refusal = admissionError(principal)
      if (refusal) throw refusal
      const { requestsPerDay } = this.deps.config.quotas
      if (seen.requests >= requestsPerDay) {
        throw quotaExceeded(REQUEST_QUOTA_SCOPE, requestsPerDay, now)
      }
    }
    this.inFlight.add(key)
    if (read) this.usageRead.set(principal, read)
    const admission: Admission = seen.principal
      ? { sig, ...input, known: seen.principal }
      : { sig, ...input }
    const carry = new Carry(this.admissions, admission)
    const done = () => this.inFlight.delete(key)
    carry.outcome.then(done, done)
    return { principal, carry, enrols }
  }

  /**
   * Drops a prepared admission that must leave no trace: a new key's first request whose body
   * failed its digest enrols nothing (and its nonce, vouching for no request, is not kept).
   */
  abandon(carry: AdmissionCarry): void {
    if (carry.taken) return
    carry.taken = true
    carry.reject(new BatonError('digest_mismatch', 'The body does not match its Content-Digest'))
  }

  /**
   * Commits a prepared admission no write took (a read-only request, or one refused before it
   * wrote) and throws what it refuses the request with: a replay another instance committed
   * first, a quota used up meanwhile. Waits for it when a write took it.
   */
  async settle(carry: AdmissionCarry): Promise<void> {
    const outcome = await this.deps.batcher.commitCarry(carry)
    const refusal = this.admissions.refusal(outcome, carry.input)
    if (refusal) throw refusal
  }

  /**
   * Runs a request's work and answers only once its pending admission is durable: committed with
   * the first write the work queued (the work takes it as `carry`), or alone when the work wrote
   * nothing or was refused first (a refused request spends its nonce). The admission's refusal
   * (a replay another instance committed first) wins over the work's answer.
   */
  async settleAfter<T>(carry: AdmissionCarry | undefined, work: () => Promise<T>): Promise<T> {
    if (!carry) return work()
    let result: T
    try {
      result = await work()
    } catch (error) {
      await this.settle(carry)
      throw error
    }
    await this.settle(carry)
    return result
  }

  /** `GET /v1/me`: the principal, its admission state, quotas and usage. */
  async me(p: Principal): Promise<MeView> {
    const { quotas } = this.deps.config
    const now = this.deps.clock.now()
    const dayStart = utcDayStart(now)
    const resetsAt = new Date(dayStart + 24 * 60 * 60 * 1000).toISOString()
    const { db } = this.deps.database
    const read = this.usageRead.get(p)
    const usage =
      read ??
      (this.deps.usage
        ? await this.deps.usage(db, p.principal, dayStart)
        : {
            requestsToday: await store.readQuotaCount(db, {
              scope: REQUEST_QUOTA_SCOPE,
              subject: p.principal,
              windowStart: dayStart,
            }),
            storedBytes: 0,
            messagesToday: 0,
          })
    // The label and the trace of the admission decision, as stored: read with the request's
    // admission when it was judged from one read, else a read of the one row.
    const row = read?.admission?.principal ?? (await store.findPrincipal(db, p.principal))
    return {
      principal: p.principal,
      ...labelsOf(row),
      state: p.state,
      enrolledAt: iso(p.enrolledAt)!,
      decidedAt: iso(p.decidedAt),
      ...traceFields(row ?? {}),
      quotas: {
        requestsPerDay: { limit: quotas.requestsPerDay, used: usage.requestsToday, resetsAt },
        storedBytes: { limit: quotas.storedBytes, used: usage.storedBytes },
        messagesPerDay: { limit: quotas.messagesPerDay, used: usage.messagesToday, resetsAt },
      },
    }
  }

  /** The discovery document for clients reaching the hub at `origin`. */
  discovery(
    origin: string,
    runtimeAvailability?: DiscoveryDocument['runtimeAvailability'],
  ): DiscoveryDocument {
    if (!this.hubJwk) throw new Error('IdentityService.init() was not called')
    const { config } = this.deps
    const apiBase = config.publicUrl ?? origin
    return {
      name: 'Baton hub',
      protocolVersion: PROTOCOL_VERSION,
      hubVersion: this.deps.version,
      apiBase,
      openapi: `${apiBase}/openapi.json`,
      signatures: {
        scheme: 'rfc9421',
        algorithm: 'ed25519',
        label: SIGNATURE_LABEL,
        keyid: 'did:key',
        components: REQUIRED_COMPONENTS,
        bodyComponents: BODY_COMPONENTS,
        presentComponents: PRESENT_COMPONENTS,
        parameters: ['created', 'nonce', 'keyid'],
        contentDigest: 'sha-256',
        skewSeconds: config.skewMs / 1000,
      },
      admission: { mode: config.admission },
      limits: { bodyLimitBytes: this.deps.bodyLimitBytes, contracts: this.deps.contractLimits },
      quotas: { ...config.quotas },
      hubKey: this.hubJwk,
      // seed 000: live, from runtime heartbeats in the database, so every instance agrees.
      ...(runtimeAvailability ? { runtimeAvailability } : {}),
    }
  }

  /** Checks the operator's bearer token in constant time; the admin API is off without one. */
  assertAdmin(token: string | undefined): void {
    const expected = this.deps.config.adminToken
    if (expected === undefined) {
      throw new BatonError(
        'admin_disabled',
        'The admin API is off: the hub has no BATON_ADMIN_TOKEN',
      )
    }
    const hash = (s: string) => createHash('sha256').update(s).digest()
    if (token === undefined || !timingSafeEqual(hash(token), hash(expected))) {
      throw new BatonError('admin_token_invalid', 'The operator token is missing or wrong')
    }
  }

  /**
   * One page of enrolled principals, optionally in one admission state, oldest enrolment first.
   * The cursor is a position (enrolment time and principal), not an offset, so a page holds the
   * same keys however many enrol meanwhile: new keys only ever join after the last page, and a
   * decision that moves a key out of the filtered state skips or repeats nothing.
   */
  async list(q: PrincipalPageQuery = {}): Promise<PrincipalPage> {
    const limit = q.limit ?? PRINCIPAL_PAGE.defaultLimit
    const rows = await store.listPrincipals(this.deps.database.db, {
      state: q.state,
      after: q.cursor,
      limit: limit + 1,
    })
    const page = rows.slice(0, limit)
    const last = page.at(-1)
    return {
      principals: page.map((r) => toView(r)),
      next_cursor:
        rows.length > limit && last
          ? toPrincipalCursor({ enrolledAt: last.enrolled_at, principal: last.principal })
          : null,
    }
  }

  /** One principal by its did:key. */
  async get(principal: string): Promise<PrincipalView> {
    const row = await store.findPrincipal(this.deps.database.db, principal)
    if (!row) throw new BatonError('principal_not_found', 'No such principal', { principal })
    return toView(row)
  }

  /**
   * An operator's decision: approve, reject or suspend a principal (any state to any), recorded
   * with the trace context of the request that made it.
   */
  async decide(
    principal: string,
    decision: AdmissionDecision,
    { trace }: Carrying = {},
  ): Promise<PrincipalView> {
    const state = { approve: 'approved', reject: 'rejected', suspend: 'suspended' }[decision]
    const row = await this.deps.batcher.run(async (tx) => {
      const now = this.deps.clock.now()
      const updated = await store.setPrincipalState(tx.db, principal, state, now, trace)
      if (updated) {
        tx.afterCommit(() =>
          this.deps.bus?.publish({
            topic: `principal:${principal}`,
            type: 'principal.decided',
            at: now,
            data: { principal, state },
          }),
        )
      }
      return updated
    })
    if (!row) throw new BatonError('principal_not_found', 'No such principal', { principal })
    return toView(row)
  }

  /**
   * The label an agent gives itself (`carry` holds its signed request's admission), kept beside
   * the operator's, which wins where both are set. A pending key may name itself, so the
   * operator deciding on it sees the name it chose; a rejected or suspended one may not. A label
   * names; it never grants anything.
   */
  async setLabel(
    principal: string,
    label: AgentLabel,
    { carry }: Carrying = {},
  ): Promise<PrincipalView> {
    return this.labelWith(principal, carry, async (db) => {
      const updated = await store.setAgentLabel(db, principal, label)
      if (updated) return updated
      const row = await store.findPrincipal(db, principal)
      throw (row && admissionError(toPrincipal(row))) ?? notFoundPrincipal(principal)
    })
  }

  /** The label an operator gives a principal in any admission state; shown instead of its own. */
  async setOperatorLabel(principal: string, label: AgentLabel): Promise<PrincipalView> {
    return this.labelWith(principal, undefined, async (db) => {
      const updated = await store.setOperatorLabel(db, principal, label)
      if (!updated) throw notFoundPrincipal(principal)
      return updated
    })
  }

  private async labelWith(
    principal: string,
    carry: Carrying['carry'],
    write: (db: Tx['db']) => Promise<PrincipalRow>,
  ): Promise<PrincipalView> {
    const row = await this.deps.batcher.carrying(carry).run(async (tx) => {
      const now = this.deps.clock.now()
      const updated = await write(tx.db)
      if (updated) {
        tx.afterCommit(() =>
          this.deps.bus?.publish({
            topic: `principal:${principal}`,
            type: 'principal.labeled',
            at: now,
            // Listeners on the topic read `state` as the admission every request is judged by.
            data: { principal, state: updated.state },
          }),
        )
      }
      return updated
    })
    return toView(row)
  }

  /** Removes nonces whose signatures can no longer be fresh. */
  async cleanup(): Promise<number> {
    return this.deps.batcher.run((tx) => store.pruneNonces(tx.db, this.deps.clock.now()))
  }

  /**
   * The rows of some principals (those enrolled), read with `db` (a transaction's, when the
   * caller decides inside one), for other features that address agents: they check admission
   * states here, not in our table.
   */
  async findPrincipals(db: Tx['db'], principals: string[]): Promise<PrincipalRow[]> {
    return store.findPrincipals(db, principals)
  }

  /** A principal's row as the transaction `db` sees it, for a feature checking an addressee. */
  async findPrincipal(db: Tx['db'], principal: string): Promise<PrincipalRow | undefined> {
    return store.findPrincipal(db, principal)
  }

  /** How many principals are in each admission state, for the operator's overview. */
  async operatorCounts(): Promise<Record<string, number>> {
    return countStates(this.deps.database.db, 'principals')
  }

  /** The display labels of `principals` that have one (a label names; it never authorizes). */
  async labelsOf(principals: string[]): Promise<Record<string, string>> {
    const out: Record<string, string> = {}
    if (principals.length === 0) return out
    for (const r of await store.labelsOf(this.deps.database.db, principals)) {
      const shown = labelsOf(r).label
      if (shown) out[r.principal] = shown
    }
    return out
  }

  /** `GET /v1/labels`: the labels of up to 100 principals, for an agent to show beside them. */
  async readLabels(principals: string[]): Promise<{ labels: Record<string, string> }> {
    return { labels: await this.labelsOf([...new Set(principals)]) }
  }
}

/** One page of the admin principal list, and where the next begins (null after the last). */
export interface PrincipalPage {
  principals: PrincipalView[]
  next_cursor: string | null
}

/** What a page of the principal list is asked for, parsed. */
export interface PrincipalPageQuery {
  state?: AdmissionState | undefined
  limit?: number | undefined
  cursor?: PrincipalPosition | undefined
}
