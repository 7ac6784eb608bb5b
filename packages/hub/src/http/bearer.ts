import type { FastifyRequest } from 'fastify'

/** The bearer token of a request, or undefined when there is none. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization
  if (typeof header !== 'string') return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}
