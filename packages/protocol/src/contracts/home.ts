import { z } from 'zod'
import { wholeNumber } from '../codecs.js'
import { defineContract } from '../contract.js'
import {
  HomeFileDeleteView,
  HomeFileListView,
  HomeFileView,
  HomeFileWriteView,
  HomePath,
  listHomeFilesQuery,
  WriteHomeFileInput,
} from '../home.js'

const tags = ['home files']
const FilePath = HomePath.describe(
  'The file path in your own home, e.g. handoff/RUN_ID/owner.json (missing or malformed: invalid_path)',
)

/** seed 000: compare-and-set writes of a private file; revision 0 creates only. */
export const writeHomeFile = defineContract({
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
})

/** seed 000: a file of the caller's own home. */
export const readHomeFile = defineContract({
  name: 'readHomeFile',
  summary: 'Read a file of your own home',
  tags,
  method: 'GET',
  path: '/v1/home/file',
  auth: 'signature',
  query: z.strictObject({ path: FilePath }),
  output: HomeFileView,
  errors: ['invalid_path', 'home_file_not_found'],
  tool: {
    name: 'read_home_file',
    title: 'Read a home file',
    description: 'Read a private checkpoint file of your own home: content and revision.',
    annotations: { readOnlyHint: true },
  },
  cli: ['home', 'read'],
})

/** seed 000: the caller's files by path, without content. */
export const listHomeFiles = defineContract({
  name: 'listHomeFiles',
  summary: 'List files of your own home by path (no content), optionally under a prefix',
  tags,
  method: 'GET',
  path: '/v1/home/files',
  auth: 'signature',
  query: (config) => listHomeFilesQuery(config.home),
  output: HomeFileListView,
  errors: ['invalid_path'],
  tool: {
    name: 'list_home_files',
    title: 'List home files',
    description: 'List files of your own home by path (revision and size, no content).',
    annotations: { readOnlyHint: true },
  },
  cli: ['home', 'list'],
})

/** seed 000: deletes only at `expectedRevision`. */
export const deleteHomeFile = defineContract({
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
  tool: {
    name: 'delete_home_file',
    title: 'Delete a home file',
    description: 'Delete a file of your own home, only if it is at expectedRevision.',
    annotations: { destructiveHint: true, idempotentHint: true },
  },
  cli: ['home', 'delete'],
})

/** Every home file operation, in the order they are documented. */
export const homeContracts = [writeHomeFile, readHomeFile, listHomeFiles, deleteHomeFile]
