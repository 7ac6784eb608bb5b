import { createHash } from 'node:crypto'
import {
  BatonError,
  type ClaimNextView,
  type CreatedTransferView,
  contracts,
  type LeaseView,
  type ListTransfersQuery,
  type MintedTokenView,
  type MintTokenInput,
  type ProvisionInput,
  type Snapshot,
  type SnapshotView,
  type TransferListView,
  type TransferView,
  type TransferWaitView,
  type UsageInput,
  type UsageView,
} from '@baton/protocol'
import { BatonClient } from './baton-client.js'
import { canonicalJson } from './messages.js'
import type { SignedClient } from './signed-client.js'

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
      contracts.snapshotState,
      {
        // The hub checks the snapshot's shape and answers snapshot_invalid for a wrong one.
        body: {
          snapshot: snapshot as Snapshot,
          ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
        },
      },
      opts.onProgress ? { onUploadProgress: opts.onProgress } : {},
    )
  }

  /** The transfer, its budget and its ordered event log. */
  get(id: string): Promise<TransferView> {
    return this.client.call(contracts.getStatus, { params: { id } })
  }

  /** Transfers you own (`role: 'owner'`) or run (`role: 'runtime'`). */
  list(query: ListTransfersQuery = {}): Promise<TransferListView> {
    return this.client.call(contracts.listTransfers, { query })
  }

  /** Waits up to `seconds` (clamped to the hub's longest wait) for the transfer to pass `version` or end. */
  wait(id: string, seconds: number, version?: number): Promise<TransferWaitView> {
    return this.client.call(contracts.waitTransfer, {
      params: { id },
      query: { seconds, ...(version === undefined ? {} : { version }) },
    })
  }

  /**
   * Reads the snapshot and recomputes its checksum here; `verified` tells whether it matches the
   * checksum the hub staged.
   */
  async fetchSnapshot(id: string): Promise<SnapshotView & { computed: string; verified: boolean }> {
    const view = await this.client.call(contracts.readSnapshot, { params: { id } })
    const computed = snapshotChecksum(view.snapshot)
    return { ...view, computed, verified: computed === view.checksum }
  }

  /** staged → provisioned, with a provision token minted for exactly these values. */
  provision(id: string, input: ProvisionInput): Promise<TransferView> {
    return this.client.call(contracts.provisionRuntime, { params: { id }, body: input })
  }

  /** Claims one provisioned transfer as its runtime. */
  claim(id: string): Promise<TransferView> {
    return this.client.call(contracts.claimTransfer, { params: { id } })
  }

  /** Claims the oldest provisioned, unclaimed transfer of a tier; null when none waits. */
  claimNext(tier: string): Promise<ClaimNextView> {
    return this.client.call(contracts.claimNextTransfer, { body: { tier } })
  }

  /**
   * provisioned → pushed: with no checksum given, fetches the snapshot and computes it here, so
   * both sides hash the bytes they hold.
   */
  async push(id: string, checksum?: string): Promise<TransferView> {
    const sum = checksum ?? (await this.fetchSnapshot(id)).computed
    return this.client.call(contracts.pushState, { params: { id }, body: { checksum: sum } })
  }

  /** pushed → active with an activate token: the one irreversible step. */
  activate(id: string, token: string): Promise<TransferView> {
    return this.client.call(contracts.activate, { params: { id }, body: { token } })
  }

  /** Takes or renews the lease to run an active transfer's agent. */
  lease(id: string, instance: string): Promise<LeaseView> {
    return this.client.call(contracts.leaseTransfer, { params: { id }, body: { instance } })
  }

  /** Reports spend in micro-units; repeating a key never charges twice. */
  reportUsage(id: string, input: UsageInput): Promise<UsageView> {
    return this.client.call(contracts.reportUsage, { params: { id }, body: input })
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
  private readonly hub: BatonClient

  constructor(
    readonly hubUrl: string,
    adminToken: string,
  ) {
    if (!adminToken) throw new BatonError('admin_token_invalid', 'An operator token is required')
    this.hub = new BatonClient(hubUrl, { adminToken })
  }

  /** Mints a single-use token bound to the transfer, the scope and (for provision) the values. */
  mint(id: string, input: MintTokenInput): Promise<MintedTokenView> {
    return this.hub.call(contracts.mintTransferToken, { params: { id }, body: input })
  }

  /** Reads any transfer with its event log. */
  get(id: string): Promise<TransferView> {
    return this.hub.call(contracts.adminGetTransfer, { params: { id } })
  }

  /** Terminates a transfer in any state; repeating it is answered. */
  terminate(id: string, reason?: string): Promise<TransferView> {
    return this.hub.call(contracts.terminateTransfer, {
      params: { id },
      body: reason ? { reason } : {},
    })
  }
}
