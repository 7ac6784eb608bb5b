import type { FastifyInstance } from 'fastify'

/** The HTTP server the faces register their routes on. */
export interface Api {
  app: FastifyInstance
}
