import {
  type CreatedHandoffView,
  HANDOFF_LIMITS,
  type HandoffView,
  type MoveResultView,
  Nonce,
  StateName,
  type WaitView,
} from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { toolCall } from '../mcp/result.js'

/**
 * The handoff operations the MCP tools need. On the hub they are the service itself; in
 * `baton mcp --hub <url>` they are SDK calls to a hub. Either way, the rules live in the service.
 */
export interface HandoffOps {
  create(input: unknown): Promise<CreatedHandoffView>
  read(id: string, token: string): Promise<HandoffView>
  advance(id: string, state: string, input: unknown, token: string): Promise<MoveResultView>
  wait(id: string, token: string, seconds: number, version?: number): Promise<WaitView>
}

/** Seed 002's three MCP tools. */
export function registerHandoffTools(server: McpServer, ops: HandoffOps): void {
  server.registerTool(
    'create_agent_handoff',
    {
      title: 'Create an agent handoff',
      description:
        'Create a handoff holding a JSON payload (at most 16 KiB) for another agent. Answers a handoff_id, an owner_token to keep and a receiver_token to pass to the other agent; both are shown only once. Optional: note, notify_url, and a custom forward-only machine (states, final, transitions).',
      inputSchema: {
        payload: z.json().describe('The work the other agent starts from (any JSON but null)'),
        note: z.string().optional(),
        notify_url: z
          .string()
          .optional()
          .describe('http(s) URL that gets a small signal after each move'),
        states: z.array(StateName).optional(),
        final: z.array(StateName).optional(),
        transitions: z.record(z.string(), z.array(StateName)).optional(),
      },
      annotations: { destructiveHint: false, idempotentHint: false },
    },
    async (args) => toolCall(() => ops.create(args)),
  )
  server.registerTool(
    'advance_agent_handoff',
    {
      title: 'Move an agent handoff',
      description:
        'Move a handoff to `state`, committing only if it is exactly in `from`. A conflict answers the state it is really in. Give a nonce of your own to make the move safe to repeat.',
      inputSchema: {
        handoff_id: z.string(),
        token: z.string().describe('The owner or receiver token'),
        state: z.string().describe('The state to enter'),
        from: z.string().describe('The state you believe the handoff is in'),
        nonce: Nonce.optional(),
        note: z.string().optional(),
      },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async ({ handoff_id, token, state, ...input }) =>
      toolCall(() => ops.advance(handoff_id, state, input, token)),
  )
  server.registerTool(
    'read_agent_handoff',
    {
      title: 'Read an agent handoff',
      description:
        'Read a handoff: state, version, payload, machine and history. With wait_seconds (at most 25) it answers as soon as the handoff changes or ends; pass the version you have seen so a change in between is not missed.',
      inputSchema: {
        handoff_id: z.string(),
        token: z.string().describe('The owner or receiver token'),
        wait_seconds: z.number().int().min(0).max(HANDOFF_LIMITS.maxWaitSeconds).optional(),
        version: z.number().int().min(0).optional().describe('The version you have already seen'),
      },
      annotations: { readOnlyHint: true },
    },
    async ({ handoff_id, token, wait_seconds, version }) =>
      toolCall(() =>
        wait_seconds === undefined && version === undefined
          ? ops.read(handoff_id, token)
          : ops.wait(handoff_id, token, wait_seconds ?? 0, version),
      ),
  )
}
