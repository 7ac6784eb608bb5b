import type { HomeClient } from '@baton/client'
import {
  HOME_LIMITS,
  type HomeFileDeleteView,
  type HomeFileListView,
  type HomeFileView,
  type HomeFileWriteView,
  type WriteHomeFileInput,
} from '@baton/protocol'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { toolCall } from '../mcp/result.js'
import type { HomeService } from './service.js'

/**
 * The home file operations the MCP tools need, acting as one principal: on the hub the service
 * bound to a verified principal, in a client the SDK's HomeClient. The rules live in the service.
 */
export interface HomeOps {
  read(path: string): Promise<HomeFileView>
  write(input: unknown): Promise<HomeFileWriteView>
  list(query: { prefix?: string; after?: string; limit?: number }): Promise<HomeFileListView>
  remove(path: string, expectedRevision: number): Promise<HomeFileDeleteView>
}

/** The home operations of one verified principal, backed by the service. */
export function homeOpsFor(service: HomeService, principal: string): HomeOps {
  return {
    read: (path) => service.read(principal, path),
    write: (input) => service.write(principal, input),
    list: (query) => service.list(principal, query),
    remove: (path, expectedRevision) => service.remove(principal, path, expectedRevision),
  }
}

/** The home operations of the identity a signed SDK client holds (`baton mcp --identity`). */
export function homeOpsFromClient(client: HomeClient): HomeOps {
  return {
    read: (path) => client.read(path),
    write: (input) => client.write(input as WriteHomeFileInput),
    list: (query) => client.list(query),
    remove: (path, expectedRevision) => client.remove(path, expectedRevision),
  }
}

const path = z
  .string()
  .min(1)
  .max(HOME_LIMITS.maxPathChars)
  .describe('e.g. handoff/RUN_ID/owner.json')

/** Seed 000's private home files as tools. */
export function registerHomeTools(server: McpServer, ops: HomeOps): void {
  server.registerTool(
    'read_home_file',
    {
      title: 'Read a home file',
      description: 'Read a private checkpoint file of your own home: content and revision.',
      inputSchema: { path },
      annotations: { readOnlyHint: true },
    },
    async (args) => toolCall(() => ops.read(args.path)),
  )
  server.registerTool(
    'write_home_file',
    {
      title: 'Write a home file',
      description:
        'Write a private checkpoint file. expectedRevision 0 creates only; otherwise the write commits only if the file is at that revision, and a conflict answers currentRevision: read it and decide, never overwrite blindly. Repeating a committed write answers it again.',
      inputSchema: {
        path,
        expectedRevision: z.number().int().min(0),
        content: z.string(),
      },
      annotations: { destructiveHint: false, idempotentHint: true },
    },
    async (args) => toolCall(() => ops.write(args)),
  )
  server.registerTool(
    'list_home_files',
    {
      title: 'List home files',
      description: 'List files of your own home by path (revision and size, no content).',
      inputSchema: {
        prefix: z.string().max(HOME_LIMITS.maxPathChars).optional(),
        after: z.string().optional(),
        limit: z.number().int().min(1).max(HOME_LIMITS.maxPageSize).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    async (args) => toolCall(() => ops.list(args)),
  )
  server.registerTool(
    'delete_home_file',
    {
      title: 'Delete a home file',
      description: 'Delete a file of your own home, only if it is at expectedRevision.',
      inputSchema: { path, expectedRevision: z.number().int().min(1) },
      annotations: { destructiveHint: true, idempotentHint: true },
    },
    async (args) => toolCall(() => ops.remove(args.path, args.expectedRevision)),
  )
}
