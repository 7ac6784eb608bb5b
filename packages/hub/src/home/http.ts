import { WriteHomeFileInput } from '@baton/protocol'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
import { requirePrincipal } from '../identity/http.js'

const tags = ['home files']
const signed = {
  401: { description: 'A signature failure: signature_missing, signature_invalid, …' },
  403: { description: 'admission_pending, admission_rejected or principal_suspended' },
}
const pathQuery = {
  path: {
    description: 'The file path in your own home, e.g. handoff/RUN_ID/owner.json',
    required: true,
  },
}

/** Seed 000's private home files: every path addresses the signing principal's own home. */
export function registerHomeRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.home
  api.route({
    method: 'PUT',
    url: '/v1/home/file',
    operationId: 'writeHomeFile',
    summary:
      'Write a file of your home: expectedRevision 0 creates only, otherwise commits only at that revision; an identical repeat of a committed write answers it again',
    tags,
    security: 'signature',
    body: WriteHomeFileInput,
    responses: {
      200: { description: '`{ path, revision, size, updatedAt }`' },
      400: { description: 'invalid_request, unknown_field or invalid_path' },
      ...signed,
      409: { description: 'revision_conflict, with currentRevision (0: no file)' },
      413: { description: 'home_file_too_large or storage_quota_exceeded' },
    },
    handler: (req) => service.write(requirePrincipal(req).principal, req.body),
  })
  api.route({
    method: 'GET',
    url: '/v1/home/file',
    operationId: 'readHomeFile',
    summary: 'Read a file of your own home',
    tags,
    security: 'signature',
    query: pathQuery,
    responses: {
      200: { description: '`{ path, revision, content, size, updatedAt }`' },
      400: { description: 'invalid_path' },
      ...signed,
      404: { description: 'home_file_not_found' },
    },
    handler: (req) =>
      service.read(requirePrincipal(req).principal, (req.query as { path?: unknown }).path),
  })
  api.route({
    method: 'GET',
    url: '/v1/home/files',
    operationId: 'listHomeFiles',
    summary: 'List files of your own home by path (no content), optionally under a prefix',
    tags,
    security: 'signature',
    query: {
      prefix: { description: 'Only paths starting with this text' },
      after: { description: 'Exclusive path cursor: the nextAfter of the previous page' },
      limit: {
        description: 'At most this many files, 1 to 1000 (default 100)',
        schema: { type: 'integer', minimum: 1, maximum: 1000 },
      },
    },
    responses: {
      200: { description: '`{ files: [{ path, revision, size, updatedAt }], nextAfter }`' },
      400: { description: 'invalid_path or invalid_request' },
      ...signed,
    },
    handler: (req) =>
      service.list(
        requirePrincipal(req).principal,
        req.query as { prefix?: unknown; after?: unknown; limit?: unknown },
      ),
  })
  api.route({
    method: 'DELETE',
    url: '/v1/home/file',
    operationId: 'deleteHomeFile',
    summary: 'Delete a file of your own home, only at expectedRevision',
    tags,
    security: 'signature',
    query: {
      ...pathQuery,
      expectedRevision: {
        description: 'The revision you last read',
        required: true,
        schema: { type: 'integer', minimum: 1 },
      },
    },
    responses: {
      200: { description: '`{ path, revision, deleted: true }`' },
      400: { description: 'invalid_path or invalid_request' },
      ...signed,
      404: { description: 'home_file_not_found' },
      409: { description: 'revision_conflict, with currentRevision' },
    },
    handler: (req) => {
      const q = req.query as { path?: unknown; expectedRevision?: unknown }
      return service.remove(requirePrincipal(req).principal, q.path, q.expectedRevision)
    },
  })
}
