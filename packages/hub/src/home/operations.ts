import {
  HOME_LIMITS,
  HomeFileDeleteView,
  HomeFileListView,
  HomeFileView,
  HomeFileWriteView,
  HomePath,
  HomePathPrefix,
  WriteHomeFileInput,
  wholeNumber,
} from '@baton/protocol'
import { z } from 'zod'
import type { Config } from '../config.js'
import type { CompositeTool } from '../ops/mcp.js'
import { defineOperation, type Operation } from '../ops/operation.js'
import { signer } from '../ops/principal.js'
import { defaultHomePageSize } from './service.js'

const tags = ['home files']
const FilePath = HomePath.describe(
  'The file path in your own home, e.g. handoff/RUN_ID/owner.json (missing or malformed: invalid_path)',
)

/** The query of a home listing under the hub's page size: the whole rule of its shape. */
export function listHomeFilesQuery(config: Config['home']) {
  return z.strictObject({
    prefix: HomePathPrefix.optional().describe('Only paths starting with this text'),
    after: HomePath.optional().describe(
      'Exclusive path cursor: the nextAfter of the previous page',
    ),
    limit: wholeNumber({ min: 1, max: config.maxPageSize })
      .optional()
      .describe(
        `At most this many files, 1 to ${config.maxPageSize} (default ${defaultHomePageSize(config)})`,
      ),
  })
}
/** A parsed home listing query. */
export type ListHomeFilesQuery = z.output<ReturnType<typeof listHomeFilesQuery>>

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
    description: (config) =>
      `Write a private checkpoint file (content of at most ${config.home.maxFileBytes} UTF-8 bytes). expectedRevision 0 creates only; otherwise the write commits only if the file is at that revision, and a conflict answers currentRevision: read it and decide, never overwrite blindly. Repeating a committed write answers it again.`,
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
  query: z.strictObject({ path: FilePath }),
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
  query: (config) => listHomeFilesQuery(config.home),
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
  query: z.strictObject({
    path: FilePath,
    expectedRevision: wholeNumber({ min: 1 }).describe('The revision you last read'),
  }),
  output: HomeFileDeleteView,
  errors: ['invalid_path', 'home_file_not_found', 'revision_conflict'],
  tool: false,
  cli: ['home', 'delete'],
  run: (ctx, caller, { query }) =>
    ctx.home.remove(signer(caller), query.path, query.expectedRevision, caller),
})

// The route's own schema refuses a malformed path with its code (invalid_path); a tool's
// argument schema would refuse it first without one.
const toolPath = z
  .string()
  .min(1)
  .max(HOME_LIMITS.maxPathChars)
  .describe('e.g. handoff/RUN_ID/owner.json')

/** A home route that reads its query, as a tool whose arguments are that query's fields. */
function queryTool(
  op: Operation,
  spec: Omit<CompositeTool, 'auth' | 'ops' | 'call'>,
): CompositeTool {
  return {
    ...spec,
    auth: 'signature',
    ops: [op],
    call: (invoke, args, caller) =>
      invoke(op, { params: {}, query: args, body: undefined }, caller),
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
    input: (config) => ({
      prefix: z.string().max(HOME_LIMITS.maxPathChars).optional(),
      after: z.string().optional(),
      limit: z.number().int().min(1).max(config.home.maxPageSize).optional(),
    }),
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
