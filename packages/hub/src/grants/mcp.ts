import { type GrantView, RESOURCE_ACTIONS } from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { toolCall } from '../mcp/result.js'

/** The grant operations the MCP tools need, acting as one principal. */
export interface GrantOps {
  create(input: unknown): Promise<GrantView>
  list(): Promise<{ capabilities: GrantView[] }>
  revoke(id: string): Promise<GrantView>
}

/** Tools for grants on resources, acting as the MCP server's identity. */
export function registerGrantTools(server: McpServer, ops: GrantOps): void {
  server.registerTool(
    'grant_access',
    {
      title: 'Grant access to a resource',
      description:
        'Give one principal (a did:key) read and/or update access to one resource you own, until expiresAt. Not delegable unless you say so.',
      inputSchema: {
        resourceId: z.string(),
        subject: z.string(),
        actions: z.array(z.enum(RESOURCE_ACTIONS)),
        delegable: z.boolean().optional(),
        expiresAt: z.string().describe('ISO 8601 time in the future'),
      },
    },
    async (args) => toolCall(() => ops.create(args)),
  )
  server.registerTool(
    'list_grants',
    {
      title: 'List grants',
      description: 'Grants you issued or hold, with their status (active, expired, revoked).',
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    async () => toolCall(() => ops.list()),
  )
  server.registerTool(
    'revoke_grant',
    {
      title: 'Revoke a grant',
      description: 'Revoke a grant you issued (and everything passed on from it). Safe to repeat.',
      inputSchema: { id: z.string() },
      annotations: { idempotentHint: true },
    },
    async ({ id }) => toolCall(() => ops.revoke(id)),
  )
}
