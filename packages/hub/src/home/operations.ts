import {
  HOME_LIMITS,
  HomeFileDeleteView,
  HomeFileListView,
  HomeFileView,
  HomeFileWriteView,
  WriteHomeFileInput,
} from '@baton/protocol'
import { z } from 'zod'
import type { CompositeTool } from '../ops/mcp.js'
import { defineOperation, type Operation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'

const tags = ['home files']
// Query values stay text, and a missing path is the service's to refuse: it decides what a
// valid home path is (invalid_path) and parses the numbers.
const HomePath = z
  .string()
  .max(4096)
  .describe(
    'Required: the file path in your own home, e.g. handoff/RUN_ID/owner.json (missing or malformed: invalid_path)',
  )
const whole = z.string().max(32)

/** seed 000: compare-and-set writes of a private file; revision 0 creates only. */
export const writeHomeFile = defineOperation({
  name: 'writeHomeFile',
  summary:
    'Write a file of your home: expectedRevision 0 creates only, otherwise commits only at that revision; an identical repeat of a committed write answers it again',
  tags,
  method: 'PUT',
  path: '/v1/home/file',
  auth: 'signature',
  body: WriteHomeFileInput,
  output: HomeFileWriteView,
  errors: ['invalid_path', 'revision_conflict', 'home_file_too_large', 'storage_quota_exceeded'],
  tool: {
    name: 'write_home_file',
    title: 'Write a home file',
    description:
      'Write a private checkpoint file. expectedRevision 0 creates only; otherwise the write commits only if the file is at that revision, and a conflict answers currentRevision: read it and decide, never overwrite blindly. Repeating a committed write answers it again.',
    annotations: { destructiveHint: false, idempotentHint: true },
  },
  cli: ['home', 'write'],
  run: (ctx, caller, { body }) => ctx.home.write(signer(caller), body, caller),
})

/** seed 000: a file of the caller's own home. */
export const readHomeFile = defineOperation({
  name: 'readHomeFile',
  summary: 'Read a file of your own home',
  tags,
  method: 'GET',
  path: '/v1/home/file',
  auth: 'signature',
  query: z.object({ path: HomePath.optional() }),
  output: HomeFileView,
  errors: ['invalid_path', 'home_file_not_found'],
  tool: false,
  cli: ['home', 'read'],
  run: (ctx, caller, { query }) => ctx.home.read(signer(caller), query.path),
})

/** seed 000: the caller's files by path, without content. */
export const listHomeFiles = defineOperation({
  name: 'listHomeFiles',
  summary: 'List files of your own home by path (no content), optionally under a prefix',
  tags,
  method: 'GET',
  path: '/v1/home/files',
  auth: 'signature',
  query: z.object({
    prefix: z.string().max(4096).optional().describe('Only paths starting with this text'),
    after: z
      .string()
      .max(4096)
      .optional()
      .describe('Exclusive path cursor: the nextAfter of the previous page'),
    limit: whole.optional().describe('At most this many files, 1 to 1000 (default 100)'),
  }),
  output: HomeFileListView,
  errors: ['invalid_path'],
  tool: false,
  cli: ['home', 'list'],
  run: (ctx, caller, { query }) => ctx.home.list(signer(caller), query),
})

/** seed 000: deletes only at `expectedRevision`. */
export const deleteHomeFile = defineOperation({
  name: 'deleteHomeFile',
  summary: 'Delete a file of your own home, only at expectedRevision',
  tags,
  method: 'DELETE',
  path: '/v1/home/file',
  auth: 'signature',
  query: z.object({
    path: HomePath.optional(),
    expectedRevision: whole.optional().describe('Required: the revision you last read'),
  }),
  output: HomeFileDeleteView,
  errors: ['invalid_path', 'home_file_not_found', 'revision_conflict'],
  tool: false,
  cli: ['home', 'delete'],
  run: (ctx, caller, { query }) =>
    ctx.home.remove(signer(caller), query.path, query.expectedRevision, caller),
})

const toolPath = z
  .string()
  .min(1)
  .max(HOME_LIMITS.maxPathChars)
  .describe('e.g. handoff/RUN_ID/owner.json')

/** The query of a home route from typed tool arguments: every value given, as text. */
function asQuery(args: Record<string, unknown>): Record<string, string> {
  const query: Record<string, string> = {}
  for (const [k, v] of Object.entries(args)) if (v !== undefined) query[k] = String(v)
  return query
}

/** A home route that reads its query, as a tool that takes a required path and typed numbers. */
function queryTool(
  op: Operation,
  spec: Omit<CompositeTool, 'auth' | 'ops' | 'call'>,
): CompositeTool {
  return {
    ...spec,
    auth: 'signature',
    ops: [op],
    call: (invoke, args, caller) =>
      invoke(op, { params: {}, query: asQuery(args), body: undefined }, caller),
  }
}

/** Home file tools whose arguments are typed where their routes take query text. */
export const homeComposites = [
  queryTool(readHomeFile, {
    name: 'read_home_file',
    title: 'Read a home file',
    description: 'Read a private checkpoint file of your own home: content and revision.',
    input: { path: toolPath },
    output: HomeFileView,
    annotations: { readOnlyHint: true },
  }),
  queryTool(listHomeFiles, {
    name: 'list_home_files',
    title: 'List home files',
    description: 'List files of your own home by path (revision and size, no content).',
    input: {
      prefix: z.string().max(HOME_LIMITS.maxPathChars).optional(),
      after: z.string().optional(),
      limit: z.number().int().min(1).max(HOME_LIMITS.maxPageSize).optional(),
    },
    output: HomeFileListView,
    annotations: { readOnlyHint: true },
  }),
  queryTool(deleteHomeFile, {
    name: 'delete_home_file',
    title: 'Delete a home file',
    description: 'Delete a file of your own home, only if it is at expectedRevision.',
    input: { path: toolPath, expectedRevision: z.number().int().min(1) },
    output: HomeFileDeleteView,
    annotations: { destructiveHint: true, idempotentHint: true },
  }),
]

/** Every home file operation, in the order they are documented. */
export const homeOperations = [writeHomeFile, readHomeFile, listHomeFiles, deleteHomeFile]
