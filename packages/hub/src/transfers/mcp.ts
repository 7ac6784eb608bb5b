import type { TransferClient } from '@baton/client'
import {
  type CreatedTransferView,
  Micros,
  Snapshot,
  TierName,
  TRANSFER_LIMITS,
  TransferIdempotencyKey,
  type TransferView,
  type TransferWaitView,
  type UsageView,
} from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { toolCall } from '../mcp/result.js'

/**
 * The transfer operations the MCP tools need, acting as the MCP server's identity. No operation
 * mints a token: tokens come only from the orchestrator (seed 004).
 */
export interface TransferOps {
  snapshot(snapshot: unknown, idempotencyKey?: string): Promise<CreatedTransferView>
  provision(
    id: string,
    input: { tier: string; budgetMicros: number; rateMicrosPerSecond: number; token: string },
  ): Promise<TransferView>
  /** Verifies the checksum on this side (computing it when not given) and pushes. */
  push(id: string, checksum?: string): Promise<TransferView>
  activate(id: string, token: string): Promise<TransferView>
  reportUsage(
    id: string,
    input: { idempotencyKey: string; amountMicros: number },
  ): Promise<UsageView>
  get(id: string): Promise<TransferView>
  wait(id: string, seconds: number, version?: number): Promise<TransferWaitView>
}

/** Transfer operations over the SDK, for `baton mcp --hub URL --identity FILE`. */
export function transferOpsFromClient(client: TransferClient): TransferOps {
  return {
    snapshot: (snapshot, idempotencyKey) =>
      client.snapshot(snapshot, idempotencyKey ? { idempotencyKey } : {}),
    provision: (id, input) => client.provision(id, input),
    push: (id, checksum) => client.push(id, checksum),
    activate: (id, token) => client.activate(id, token),
    reportUsage: (id, input) => client.reportUsage(id, input),
    get: (id) => client.get(id),
    wait: (id, seconds, version) => client.wait(id, seconds, version),
  }
}

const transferId = z.string().describe('The transfer id (tr_…)')

/** Seed 004's six tools: snapshot_state, provision_runtime, push_state, activate, report_usage, get_status. */
export function registerTransferTools(server: McpServer, ops: TransferOps): void {
  server.registerTool(
    'snapshot_state',
    {
      title: 'Snapshot the session state',
      description:
        'Stage a transfer of this session: system prompt, message history, tool state and MCP config. Credentials only as { "credRef": "vault://path#field" } or { "credRef": "env://NAME" }; raw secrets are refused. Answers the transfer id and the SHA-256 checksum of the canonical snapshot. Give an idempotencyKey to make a retry safe.',
      inputSchema: {
        snapshot: Snapshot,
        idempotencyKey: TransferIdempotencyKey.optional(),
      },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ snapshot, idempotencyKey }) => toolCall(() => ops.snapshot(snapshot, idempotencyKey)),
  )
  server.registerTool(
    'provision_runtime',
    {
      title: 'Provision a destination runtime',
      description:
        'Open a budget for a staged transfer on a runtime tier. Requires a transfer-authorization token from the orchestrator, minted for exactly this tier, budget and rate; you cannot mint one. Money is integer micro-units.',
      inputSchema: {
        transferId,
        tier: TierName,
        budgetMicros: Micros.describe('The allocated budget in micro-units (1 unit = 1000000)'),
        rateMicrosPerSecond: Micros.describe('The price of wall time, micro-units per second'),
        token: z.string().describe('The provision token the orchestrator gave you'),
      },
      annotations: { destructiveHint: false, idempotentHint: false },
    },
    async ({ transferId: id, ...input }) => toolCall(() => ops.provision(id, input)),
  )
  server.registerTool(
    'push_state',
    {
      title: 'Push the snapshot to the runtime',
      description:
        'As the runtime that claimed the transfer: fetch the snapshot, recompute its checksum here and confirm it; the hub recomputes too and refuses a mismatch.',
      inputSchema: {
        transferId,
        checksum: z.string().optional().describe('A checksum you computed; else computed now'),
      },
      annotations: { destructiveHint: false, idempotentHint: false },
    },
    async ({ transferId: id, checksum }) => toolCall(() => ops.push(id, checksum)),
  )
  server.registerTool(
    'activate',
    {
      title: 'Activate the transfer',
      description:
        'Boot the destination from the pushed snapshot: the one irreversible step. Requires an activate token from the orchestrator.',
      inputSchema: {
        transferId,
        token: z.string().describe('The activate token the orchestrator gave you'),
      },
      annotations: { destructiveHint: true, idempotentHint: false },
    },
    async ({ transferId: id, token }) => toolCall(() => ops.activate(id, token)),
  )
  server.registerTool(
    'report_usage',
    {
      title: 'Report runtime usage',
      description:
        'As the runtime that holds the transfer: report spend in micro-units, idempotent by key. The answer says `stop: true` once the budget is exhausted.',
      inputSchema: {
        transferId,
        idempotencyKey: TransferIdempotencyKey,
        amountMicros: Micros,
      },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ transferId: id, ...input }) => toolCall(() => ops.reportUsage(id, input)),
  )
  server.registerTool(
    'get_status',
    {
      title: 'Read a transfer',
      description: `Read the transfer, its budget and its ordered event log. With wait_seconds (at most ${TRANSFER_LIMITS.maxWaitSeconds}) it answers as soon as the version passes the one you have seen.`,
      inputSchema: {
        transferId,
        wait_seconds: z.number().int().min(0).max(TRANSFER_LIMITS.maxWaitSeconds).optional(),
        version: z.number().int().min(0).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ transferId: id, wait_seconds, version }) =>
      toolCall(() =>
        wait_seconds === undefined && version === undefined
          ? ops.get(id)
          : ops.wait(id, wait_seconds ?? 0, version),
      ),
  )
}
