import { createHash } from 'node:crypto'
import type {
  CreatedTransferView,
  LeaseView,
  MintedTokenView,
  MintTokenInput,
  Snapshot,
  SnapshotView,
  TransferView,
  TransferWaitView,
  UsageView,
} from '@baton/protocol'
import { BatonError } from '@baton/protocol'
import { callJson } from './http.js'
import { canonicalJson } from './messages.js'
import type { SignedClient } from './signed-client.js'

const enc = encodeURIComponent
const base = '/v1/transfers'

/**
 * The checksum of a snapshot (seed 004): `sha-256:` and the base64url SHA-256 of its RFC 8785
 * canonical JSON, so any serialization of the same snapshot gives the same checksum.
 *
 * @example snapshotChecksum({ systemPrompt: 'hi', messages: [], toolState: {}, mcpConfig: { servers: [] } })
 */
export function snapshotChecksum(snapshot: unknown): string {
  return `sha-256:${createHash('sha256').update(canonicalJson(snapshot), 'utf8').digest('base64url')}`
}

/**
 * Session transfers (seed 004) through a signed client: the source agent snapshots, anyone with a
 * token provisions and activates, the runtime claims, pushes, leases and reports usage. Each
 * method throws a BatonError with the hub's code and context (a conflict carries `state`).
 *
 * @example
 * const transfers = new TransferClient(await SignedClient.fromFile(discoveryUrl, 'agent.identity.json'))
 * const t = await transfers.snapshot(snapshot, { idempotencyKey: 'session-42' })
 */
export class TransferClient {
  constructor(readonly client: SignedClient) {}

  /** Stages a snapshot; the same idempotency key and snapshot answer the first transfer. */
  snapshot(
    snapshot: Snapshot | unknown,
    opts: { idempotencyKey?: string; onProgress?: (sent: number, total: number) => void } = {},
  ): Promise<CreatedTransferView> {
    return this.client.call(
      'POST',
      base,
      { snapshot, ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}) },
      opts.onProgress ? { onUploadProgress: opts.onProgress } : {},
    )
  }

  /** The transfer, its budget and its ordered event log. */
  get(id: string): Promise<TransferView> {
    return this.client.call('GET', `${base}/${enc(id)}`)
  }

  /** Transfers you own (`role: 'owner'`) or run (`role: 'runtime'`). */
  list(
    query: { role?: 'owner' | 'runtime'; state?: string } = {},
  ): Promise<{ transfers: TransferView[] }> {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v))
    const qs = q.toString()
    return this.client.call('GET', `${base}${qs ? `?${qs}` : ''}`)
  }

  /** Waits up to `seconds` (at most 25) for the transfer to pass `version` or end. */
  wait(id: string, seconds: number, version?: number): Promise<TransferWaitView> {
    const q = new URLSearchParams({ seconds: String(seconds) })
    if (version !== undefined) q.set('version', String(version))
    return this.client.call('GET', `${base}/${enc(id)}/wait?${q}`)
  }

  /**
   * Reads the snapshot and recomputes its checksum here; `verified` tells whether it matches the
   * checksum the hub staged.
   */
  async fetchSnapshot(id: string): Promise<SnapshotView & { computed: string; verified: boolean }> {
    const view = await this.client.call<SnapshotView>('GET', `${base}/${enc(id)}/snapshot`)
    const computed = snapshotChecksum(view.snapshot)
    return { ...view, computed, verified: computed === view.checksum }
  }

  /** staged → provisioned, with a provision token minted for exactly these values. */
  provision(
    id: string,
    input: { tier: string; budgetMicros: number; rateMicrosPerSecond: number; token: string },
  ): Promise<TransferView> {
    return this.client.call('POST', `${base}/${enc(id)}/provision`, input)
  }

  /** Claims one provisioned transfer as its runtime. */
  claim(id: string): Promise<TransferView> {
    return this.client.call('POST', `${base}/${enc(id)}/claim`, {})
  }

  /** Claims the oldest provisioned, unclaimed transfer of a tier; null when none waits. */
  claimNext(tier: string): Promise<{ transfer: TransferView | null }> {
    return this.client.call('POST', `${base}/claim`, { tier })
  }

  /**
   * provisioned → pushed: with no checksum given, fetches the snapshot and computes it here, so
   * both sides hash the bytes they hold.
   */
  async push(id: string, checksum?: string): Promise<TransferView> {
    const sum = checksum ?? (await this.fetchSnapshot(id)).computed
    return this.client.call('POST', `${base}/${enc(id)}/push`, { checksum: sum })
  }

  /** pushed → active with an activate token: the one irreversible step. */
  activate(id: string, token: string): Promise<TransferView> {
    return this.client.call('POST', `${base}/${enc(id)}/activate`, { token })
  }

  /** Takes or renews the lease to run an active transfer's agent. */
  lease(id: string, instance: string): Promise<LeaseView> {
    return this.client.call('POST', `${base}/${enc(id)}/lease`, { instance })
  }

  /** Reports spend in micro-units; repeating a key never charges twice. */
  reportUsage(
    id: string,
    input: { idempotencyKey: string; amountMicros: number },
  ): Promise<UsageView> {
    return this.client.call('POST', `${base}/${enc(id)}/usage`, input)
  }
}

/**
 * The orchestrator's calls, with the operator token: mint transfer tokens, read any transfer,
 * terminate. Never give this token to an agent.
 *
 * @example
 * const orchestrator = new TransferAdminClient('http://127.0.0.1:8080', process.env.BATON_ADMIN_TOKEN!)
 * const { token } = await orchestrator.mint(id, { scope: 'activate' })
 */
export class TransferAdminClient {
  constructor(
    readonly hubUrl: string,
    private readonly adminToken: string,
  ) {
    if (!adminToken) throw new BatonError('admin_token_invalid', 'An operator token is required')
  }

  private headers() {
    return { headers: { authorization: `Bearer ${this.adminToken}` } }
  }

  /** Mints a single-use token bound to the transfer, the scope and (for provision) the values. */
  mint(id: string, input: MintTokenInput): Promise<MintedTokenView> {
    return callJson(
      this.hubUrl,
      'POST',
      `/admin/v1/transfers/${enc(id)}/tokens`,
      input,
      this.headers(),
    )
  }

  /** Reads any transfer with its event log. */
  get(id: string): Promise<TransferView> {
    return callJson(this.hubUrl, 'GET', `/admin/v1/transfers/${enc(id)}`, undefined, this.headers())
  }

  /** Terminates a transfer in any state; repeating it is answered. */
  terminate(id: string, reason?: string): Promise<TransferView> {
    return callJson(
      this.hubUrl,
      'POST',
      `/admin/v1/transfers/${enc(id)}/terminate`,
      reason ? { reason } : {},
      this.headers(),
    )
  }
}
