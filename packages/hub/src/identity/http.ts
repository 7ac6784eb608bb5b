import { PassThrough, type Readable } from 'node:stream'
import { AdmissionDecision, BatonError, DISCOVERY_PATH } from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import { type Api, bearerToken } from '../http/server.js'
import type { Principal } from './service.js'

const verified = new WeakMap<FastifyRequest, Principal>()

/** True for a path under `/v1`, where every request must be signed. */
export function isSignedPath(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?')
}

/**
 * The verified, approved principal of a `/v1` request, for feature routes; the signature hook
 * has already refused unsigned, invalid, replayed and unapproved requests.
 */
export function requirePrincipal(req: FastifyRequest): Principal {
  const p = verified.get(req)
  if (!p) throw new BatonError('signature_missing', 'The request is not signed')
  return p
}

/** The origin a client signed `@target-uri` against: BATON_PUBLIC_URL, else scheme and Host. */
export function requestOrigin(ctx: AppContext, req: FastifyRequest): string {
  return ctx.config.identity.publicUrl ?? `${req.protocol}://${req.host}`
}

async function readAll(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    const buf = chunk as Buffer
    size += buf.length
    if (size > limit) throw new BatonError('body_too_large', 'The request body is too large')
    chunks.push(buf)
  }
  return Buffer.concat(chunks)
}

const adminTags = ['admin']
const principalParam = { principal: 'The principal, a did:key' }

/**
 * Discovery, `GET /v1/me`, the admin API, and the hook that verifies every `/v1` request before
 * its body is parsed (so a tampered body is a 401, not a JSON error).
 */
export function registerIdentityRoutes(api: Api, ctx: AppContext): void {
  const service = ctx.identity

  // RFC 9530: the digest covers the body bytes as received, so keep them before parsing.
  api.app.addHook('preParsing', async (req, _reply, payload) => {
    const signedPath = isSignedPath(req.url)
    const carriesSignature =
      req.headers['signature-input'] !== undefined || req.headers.signature !== undefined
    if (!signedPath && !carriesSignature) return payload
    const body = await readAll(payload, req.routeOptions.bodyLimit ?? ctx.config.bodyLimitBytes)
    const message = {
      method: req.method,
      targetUri: requestOrigin(ctx, req) + req.url,
      headers: req.headers,
    }
    if (signedPath) {
      const path = req.url.split('?')[0]
      const principal = await service.authenticate({
        message,
        body,
        admissionExempt: req.method === 'GET' && path === '/v1/me',
      })
      verified.set(req, principal)
    } else {
      // A signature outside /v1 is still checked (without enrolment or a nonce), so a signed
      // request whose path was changed to leave /v1 is refused rather than answered.
      service.verify(message, body)
    }
    const replay = new PassThrough()
    replay.end(body)
    // fastify compares the bytes it reads with Content-Length through this property.
    Object.assign(replay, { receivedEncodedLength: body.length })
    return replay
  })

  api.route({
    method: 'GET',
    url: DISCOVERY_PATH,
    operationId: 'discovery',
    summary: 'Describe the hub: API base, signature scheme, admission, limits, quotas and its key',
    tags: ['identity'],
    security: 'none',
    responses: { 200: { description: 'The discovery document' } },
    handler: async (req) => service.discovery(requestOrigin(ctx, req)),
  })
  api.route({
    method: 'GET',
    url: '/v1/me',
    operationId: 'me',
    summary:
      'The signing principal, its admission state, quotas and usage (answers in every state)',
    tags: ['identity'],
    security: 'signature',
    responses: {
      200: { description: 'The principal' },
      401: {
        description:
          'signature_missing, signature_malformed, unknown_key, signature_invalid, digest_mismatch, signature_stale or signature_replayed',
      },
    },
    handler: (req) => service.me(requirePrincipal(req)),
  })

  const adminErrors = {
    401: { description: 'admin_token_invalid' },
    403: { description: 'admin_disabled (the hub has no BATON_ADMIN_TOKEN)' },
  }
  api.route({
    method: 'GET',
    url: '/admin/v1/principals',
    operationId: 'listPrincipals',
    summary:
      'One page of enrolled principals, oldest enrolment first, optionally in one admission state (operator only)',
    tags: adminTags,
    security: 'bearer',
    query: {
      state: { description: 'pending, approved, rejected or suspended' },
      limit: { description: 'Principals per page, 1 to 500 (default 100)' },
      cursor: { description: 'The next_cursor of the page before; absent for the first page' },
    },
    responses: {
      200: { description: '{ principals, next_cursor }: next_cursor is null on the last page' },
      400: { description: 'invalid_request (state, limit or cursor)' },
      ...adminErrors,
    },
    handler: async (req) => {
      service.assertAdmin(bearerToken(req))
      const { state, limit, cursor } = req.query as Record<string, string | undefined>
      return service.list({ state, limit, cursor })
    },
  })
  api.route({
    method: 'GET',
    url: '/admin/v1/principals/:principal',
    operationId: 'readPrincipal',
    summary: 'Read one principal (operator only)',
    tags: adminTags,
    security: 'bearer',
    pathParams: principalParam,
    responses: {
      200: { description: 'The principal' },
      ...adminErrors,
      404: { description: 'principal_not_found' },
    },
    handler: async (req) => {
      service.assertAdmin(bearerToken(req))
      return service.get((req.params as { principal: string }).principal)
    },
  })
  api.route({
    method: 'POST',
    url: '/admin/v1/principals/:principal/:decision',
    operationId: 'decidePrincipal',
    summary: `Approve, reject or suspend a principal (operator only): ${AdmissionDecision.options.join(', ')}`,
    tags: adminTags,
    security: 'bearer',
    pathParams: { ...principalParam, decision: 'approve, reject or suspend' },
    responses: {
      200: { description: 'The principal after the decision' },
      ...adminErrors,
      404: { description: 'principal_not_found' },
    },
    handler: async (req) => {
      service.assertAdmin(bearerToken(req))
      const { principal, decision } = req.params as { principal: string; decision: string }
      return service.decide(principal, decision)
    },
  })
}
