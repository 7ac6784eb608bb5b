import { PassThrough, type Readable } from 'node:stream'
import { BatonError } from '@baton/protocol'
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
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

/**
 * The hook that verifies every `/v1` request before its body is parsed (so a tampered body is a
 * 401, not a JSON error); the identity routes themselves are operations (`operations.ts`).
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
}
