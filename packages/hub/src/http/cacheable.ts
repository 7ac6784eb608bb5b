import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** The strong entity tag of a representation's bytes (RFC 9110 §8.8.3): 128 bits of its SHA-256. */
function entityTag(bytes: Buffer): string {
  return `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`
}

/** Whether an `If-None-Match` names `tag` (RFC 9110 §13.1.2: `*`, or a list compared weakly). */
function matches(ifNoneMatch: string | undefined, tag: string): boolean {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === tag)
}

/**
 * Answers a result a client may keep for `maxAgeSeconds` (private to it) and then revalidate:
 * with `Cache-Control` and an `ETag` of its bytes, or 304 with no body when the request's
 * `If-None-Match` names the same bytes.
 */
export function sendCacheable(
  req: FastifyRequest,
  reply: FastifyReply,
  maxAgeSeconds: number,
  result: unknown,
): FastifyReply {
  const bytes = Buffer.from(JSON.stringify(result), 'utf8')
  const tag = entityTag(bytes)
  reply.header('cache-control', `private, max-age=${maxAgeSeconds}`).header('etag', tag)
  if (matches(req.headers['if-none-match'], tag)) return reply.code(304).send()
  return reply.type('application/json; charset=utf-8').send(bytes)
}
