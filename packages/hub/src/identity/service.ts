import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  timingSafeEqual,
} from 'node:crypto'
import type { HttpMessage } from '@baton/client'
import {
  AdmissionDecision,
  AdmissionState,
  BatonError,
  BODY_COMPONENTS,
  type DiscoveryDocument,
  type MeView,
  PROTOCOL_VERSION,
  type PrincipalView,
  type PublicJwk,
  REQUIRED_COMPONENTS,
  SIGNATURE_LABEL,
} from '@baton/protocol'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { EventBus } from '../events/bus.js'
import type { Database } from '../store/database.js'
import {
  consumeDailyQuota,
  consumeDailyQuotas,
  quotaExceeded,
  utcDayStart,
} from '../store/quota.js'
import type { PrincipalRow } from '../store/schema.js'
import type { KeySealer } from '../store/sealing.js'
import type { BatchGroup, GroupOutcome, Tx, WriteBatcher } from '../store/transaction.js'
import * as store from './store.js'
import { didKeyResolver, hubPolicy, type VerifiedSignature, verifySignedRequest } from './verify.js'

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
  version: string
  /** Keys for keyids that are not did:key, such as the RFC 9421 test key; for tests only. */
  extraKeys?: ReadonlyMap<string, KeyObject>
  /** Where enrolments and admission decisions are announced after commit. */
  bus?: EventBus
  /** Reads what a principal used of the quotas other features count (stored bytes, messages). */
  usage?: (
    db: Database['db'],
    principal: string,
    dayStart: number,
  ) => Promise<{ storedBytes: number; messagesToday: number }>
  /** Seals the hub's private key at rest; needed by `init` (the admin command does without). */
  sealer?: KeySealer
}

/** A request to authenticate: the message as signed, its raw body, and what it asks for. */
export interface AuthenticateInput {
  message: HttpMessage
  body: Uint8Array
  /** True for `GET /v1/me`, which answers principals in every admission state. */
  admissionExempt: boolean
}

/** The quota scope counting a principal's signed requests. */
export const REQUEST_QUOTA_SCOPE = 'principal.requests'

const HUB_KEY_SLOT = 'primary'
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** One signed request's admission: its verified signature and whether it is exempt. */
interface Admission {
  sig: VerifiedSignature
  admissionExempt: boolean
}

/** The principal behind a request, and the refusal its quota gives if any. */
interface AdmissionOutcome {
  principal: Principal
  refusal?: BatonError
}

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

function toView(p: Principal): PrincipalView {
  return {
    principal: p.principal,
    state: p.state,
    enrolledAt: iso(p.enrolledAt)!,
    decidedAt: iso(p.decidedAt),
  }
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
      const { privateKey } = generateKeyPairSync('ed25519')
      const jwk = privateKey.export({ format: 'jwk' }) as { x: string; d: string }
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

  /** Verifies a signed request without side effects; throws the failure's code. */
  verify(message: HttpMessage, body: Uint8Array): VerifiedSignature {
    const policy = hubPolicy(this.deps.clock.now(), this.deps.config.skewMs, this.resolveKey)
    return verifySignedRequest(message, body, policy)
  }

  /**
   * Authenticates a request: verifies its signature and digest, records its nonce durably (a
   * replay is refused even after a restart or on another instance), enrols a new key, counts the
   * request quota, and refuses a principal that is not approved unless the route is exempt.
   */
  /**
   * The write every signed request makes (its nonce, a first request's enrolment, the request
   * quota), committed set-based for the requests that arrive together; `one` is the same rule
   * for a single request, used if the set-based statements fail.
   */
  private readonly admissions: BatchGroup<Admission, AdmissionOutcome> = {
    one: (tx, a) => this.admitOne(tx, a),
    many: (db, inputs) => this.admitMany(db, inputs),
  }

  private enrolment(keyid: string, now: number): PrincipalRow {
    const open = this.deps.config.admission === 'open'
    return {
      principal: keyid,
      public_key: (this.resolveKey(keyid)!.export({ format: 'jwk' }) as PublicJwk).x,
      state: open ? 'approved' : 'pending',
      enrolled_at: now,
      decided_at: open ? now : null,
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

  private async admitOne(tx: Tx, { sig, admissionExempt }: Admission): Promise<AdmissionOutcome> {
    const { config, clock } = this.deps
    const now = clock.now()
    const fresh = await store.insertNonce(tx.db, {
      keyid: sig.keyid,
      nonce: sig.nonce ?? '',
      expires_at: sig.created * 1000 + config.skewMs,
    })
    if (!fresh) throw replayed(sig.keyid)
    let row = await store.findPrincipal(tx.db, sig.keyid)
    if (!row) {
      await store.enrolPrincipal(tx.db, this.enrolment(sig.keyid, now))
      row = (await store.findPrincipal(tx.db, sig.keyid))!
      tx.afterCommit(this.announceEnrolment(row, now))
    }
    const principal = toPrincipal(row)
    if (admissionExempt || principal.state !== 'approved') return { principal }
    try {
      await consumeDailyQuota(tx.db, {
        scope: REQUEST_QUOTA_SCOPE,
        subject: principal.principal,
        limit: config.quotas.requestsPerDay,
        now,
      })
    } catch (error) {
      // The nonce stays recorded: a refused request must not be replayable once quota returns.
      if (error instanceof BatonError) return { principal, refusal: error }
      throw error
    }
    return { principal }
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
    const keyids = [...new Set(inputs.map((a) => a.sig.keyid))]
    const rows = new Map((await store.findPrincipals(db, keyids)).map((r) => [r.principal, r]))
    const newcomers = keyids.filter((k) => !rows.has(k))
    const announce = new Map<string, () => void>()
    if (newcomers.length > 0) {
      await store.enrolPrincipals(
        db,
        newcomers.map((k) => this.enrolment(k, now)),
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
      const principal = toPrincipal(rows.get(sig.keyid)!)
      const counts = isFresh && !admissionExempt && principal.state === 'approved'
      return { isFresh, principal, counts }
    })
    const uses = new Map<string, number>()
    for (const a of admitted) {
      if (a.counts) uses.set(a.principal.principal, (uses.get(a.principal.principal) ?? 0) + 1)
    }
    const after = await consumeDailyQuotas(db, { scope: REQUEST_QUOTA_SCOPE, uses, now })
    const nth = new Map<string, number>()
    return admitted.map(({ isFresh, principal, counts }): GroupOutcome<AdmissionOutcome> => {
      if (!isFresh) return { ok: false, error: replayed(principal.principal) }
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

  async authenticate(input: AuthenticateInput): Promise<Principal> {
    const sig = this.verify(input.message, input.body)
    const outcome = await this.deps.batcher.runIn(this.admissions, {
      sig,
      admissionExempt: input.admissionExempt,
    })
    if (!input.admissionExempt) {
      const refusal = admissionError(outcome.principal) ?? outcome.refusal
      if (refusal) throw refusal
    }
    return outcome.principal
  }

  /** `GET /v1/me`: the principal, its admission state, quotas and usage. */
  async me(p: Principal): Promise<MeView> {
    const { quotas } = this.deps.config
    const now = this.deps.clock.now()
    const dayStart = utcDayStart(now)
    const resetsAt = new Date(dayStart + 24 * 60 * 60 * 1000).toISOString()
    const { db } = this.deps.database
    const requests = await store.readQuotaCount(db, {
      scope: REQUEST_QUOTA_SCOPE,
      subject: p.principal,
      windowStart: dayStart,
    })
    const usage = this.deps.usage
      ? await this.deps.usage(db, p.principal, dayStart)
      : { storedBytes: 0, messagesToday: 0 }
    return {
      principal: p.principal,
      state: p.state,
      enrolledAt: iso(p.enrolledAt)!,
      decidedAt: iso(p.decidedAt),
      quotas: {
        requestsPerDay: { limit: quotas.requestsPerDay, used: requests, resetsAt },
        storedBytes: { limit: quotas.storedBytes, used: usage.storedBytes },
        messagesPerDay: { limit: quotas.messagesPerDay, used: usage.messagesToday, resetsAt },
      },
    }
  }

  /** The discovery document for clients reaching the hub at `origin`. */
  discovery(origin: string): DiscoveryDocument {
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
        parameters: ['created', 'nonce', 'keyid'],
        contentDigest: 'sha-256',
        skewSeconds: config.skewMs / 1000,
      },
      admission: { mode: config.admission },
      limits: { bodyLimitBytes: this.deps.bodyLimitBytes },
      quotas: { ...config.quotas },
      hubKey: this.hubJwk,
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

  /** Lists principals, optionally in one admission state, oldest enrolment first. */
  async list(state?: unknown, limit = 500): Promise<PrincipalView[]> {
    let filter: AdmissionState | undefined
    if (state !== undefined && state !== '') {
      const parsed = AdmissionState.safeParse(state)
      if (!parsed.success) {
        throw new BatonError(
          'invalid_request',
          'state must be pending, approved, rejected or suspended',
          {
            field: 'state',
          },
        )
      }
      filter = parsed.data
    }
    const rows = await store.listPrincipals(this.deps.database.db, { state: filter, limit })
    return rows.map((r) => toView(toPrincipal(r)))
  }

  /** One principal by its did:key. */
  async get(principal: string): Promise<PrincipalView> {
    const row = await store.findPrincipal(this.deps.database.db, principal)
    if (!row) throw new BatonError('principal_not_found', 'No such principal', { principal })
    return toView(toPrincipal(row))
  }

  /** An operator's decision: approve, reject or suspend a principal (any state to any). */
  async decide(principal: string, decision: unknown): Promise<PrincipalView> {
    const parsed = AdmissionDecision.safeParse(decision)
    if (!parsed.success) {
      throw new BatonError('invalid_request', 'The decision must be approve, reject or suspend', {
        field: 'decision',
      })
    }
    const state = { approve: 'approved', reject: 'rejected', suspend: 'suspended' }[parsed.data]
    const row = await this.deps.batcher.run(async (tx) => {
      const now = this.deps.clock.now()
      const updated = await store.setPrincipalState(tx.db, principal, state, now)
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
    return toView(toPrincipal(row))
  }

  /** Removes nonces whose signatures can no longer be fresh. */
  async cleanup(): Promise<number> {
    return this.deps.batcher.run((tx) => store.pruneNonces(tx.db, this.deps.clock.now()))
  }
}
