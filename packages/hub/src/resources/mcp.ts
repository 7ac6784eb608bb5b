import type { ResourceVersionView, ResourceView } from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { toolCall } from '../mcp/result.js'

/** The resource operations the MCP tools need, acting as one principal. */
export interface ResourceOps {
  create(input: unknown): Promise<ResourceView>
  get(id: string): Promise<ResourceView>
  update(id: string, input: unknown): Promise<ResourceView>
  history(id: string): Promise<{ resourceId: string; versions: ResourceVersionView[] }>
  list(query: Record<string, string>): Promise<{ resources: ResourceView[]; next: string | null }>
}

/** Tools for versioned shared resources, acting as the MCP server's identity. */
export function registerResourceTools(server: McpServer, ops: ResourceOps): void {
  server.registerTool(
    'create_resource',
    {
      title: 'Create a shared resource',
      description:
        'Create a versioned resource you own (version 1) in a namespace, with a kind and JSON data.',
      inputSchema: { namespace: z.string(), kind: z.string(), data: z.json() },
    },
    async (args) => toolCall(() => ops.create(args)),
  )
  server.registerTool(
    'read_resource',
    {
      title: 'Read a shared resource',
      description: 'Read a resource you own or hold a live grant for.',
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ id }) => toolCall(() => ops.get(id)),
  )
  server.registerTool(
    'update_resource',
    {
      title: 'Update a shared resource',
      description:
        'Replace the whole data of a resource, only if it is still at expectedVersion. A conflict answers the current version; never increment blindly.',
      inputSchema: { id: z.string(), expectedVersion: z.number().int(), data: z.json() },
    },
    async ({ id, ...input }) => toolCall(() => ops.update(id, input)),
  )
  server.registerTool(
    'resource_history',
    {
      title: 'Read a resource history',
      description: 'Every version of a resource with its data, actor and time.',
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ id }) => toolCall(() => ops.history(id)),
  )
  server.registerTool(
    'list_resources',
    {
      title: 'List shared resources',
      description: 'Resources you own or hold a live grant for, optionally by namespace and kind.',
      inputSchema: {
        namespace: z.string().optional(),
        kind: z.string().optional(),
        after: z.string().optional(),
      },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      toolCall(() =>
        ops.list(
          Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined)) as Record<
            string,
            string
          >,
        ),
      ),
  )
}
