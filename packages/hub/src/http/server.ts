import { BatonError } from '@baton/protocol'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { AppContext } from '../app.js'
import { registerGrantRoutes } from '../grants/http.js'
import { registerHandoffRoutes } from '../handoffs/http.js'
import { registerHomeRoutes } from '../home/http.js'
import { registerIdentityRoutes } from '../identity/http.js'
import { registerMcpRoute } from '../mcp/http.js'
import { registerMessageRoutes } from '../messages/http.js'
import { registerResourceRoutes } from '../resources/http.js'
import { ping } from '../store/database.js'
import { registerTransferRoutes } from '../transfers/http.js'
import { registerDashboard } from '../web/dashboard.js'
import { toBatonError } from './errors.js'
import { OpenApiBuilder, type RouteDoc } from './openapi.js'

/** A route: its documentation and its handler; the answer is sent as JSON with `status`. */
export interface RouteSpec extends RouteDoc {
  /** The status of a successful answer (default 200). */
  status?: number
  bodyLimit?: number
  handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>
}

/** How features add routes: registered in fastify and documented in /openapi.json at once. */
export interface Api {
  route(spec: RouteSpec): void
  app: FastifyInstance
}

/** The bearer token of a request, or undefined when there is none. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization
  if (typeof header !== 'string') return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

/** Builds the hub's HTTP server from an assembled context. */
export async function buildServer(ctx: AppContext): Promise<FastifyInstance> {
  const { config, metrics } = ctx
  const app = Fastify({
    loggerInstance: ctx.log as unknown as FastifyBaseLogger,
    // fastify accepts a hop count too; its types only omit it.
    trustProxy: config.trustProxy as boolean | string[],
    bodyLimit: config.bodyLimitBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    // Errors the router raises before any route runs (bad URL encoding, over-long segments).
    frameworkErrors: (error, _req, reply) => {
      const e = toBatonError(error)
      void (reply as FastifyReply).code(e.status).send(e.toBody())
    },
  })

  // One JSON parser with stable codes; any other body type is a 415.
  app.removeAllContentTypeParsers()
  const parseJson = (
    _req: unknown,
    body: string | Buffer,
    done: (e: Error | null, v?: unknown) => void,
  ) => {
    const text = String(body)
    if (text.trim() === '') return done(null, undefined)
    try {
      done(null, JSON.parse(text))
    } catch {
      done(new BatonError('invalid_json', 'The request body is not valid JSON'), undefined)
    }
  }
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJson)
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/, { parseAs: 'string' }, parseJson)
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined)
    done(
      new BatonError('unsupported_media_type', 'Send JSON with Content-Type: application/json'),
      undefined,
    )
  })

  app.setErrorHandler((error, req, reply) => {
    const e = toBatonError(error)
    metrics.recordError(e.code)
    if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
    reply.headers(e.headers).code(e.status).send(e.toBody())
  })
  app.setNotFoundHandler((req, reply) => {
    const e = new BatonError('not_found', `No route ${req.method} ${req.url.split('?')[0]}`)
    reply.code(404).send(e.toBody())
  })

  // While shutting down, every answer closes its connection so the server can stop promptly.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (ctx.isClosing()) reply.header('connection', 'close')
    return payload
  })

  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched'
    metrics.httpRequests.inc({ method: req.method, route, status: reply.statusCode })
    metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000)
    if (reply.statusCode >= 500 || config.logLevel === 'debug') {
      req.log.info(
        { method: req.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request',
      )
    }
    done()
  })

  const openapi = new OpenApiBuilder()
  const api: Api = {
    app,
    route(spec) {
      openapi.add(spec)
      app.route({
        method: spec.method,
        url: spec.url,
        ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
        handler: async (req, reply) => {
          const result = await spec.handler(req, reply)
          if (reply.sent) return reply
          reply.code(spec.status ?? 200)
          return result
        },
      })
    },
  }

  api.route({
    method: 'GET',
    url: '/healthz',
    operationId: 'health',
    summary: 'Liveness: the process answers',
    tags: ['operations'],
    security: 'none',
    responses: { 200: { description: 'Alive' } },
    handler: async () => ({ ok: true }),
  })
  api.route({
    method: 'GET',
    url: '/readyz',
    operationId: 'ready',
    summary: 'Readiness: the database answers and the hub is not shutting down',
    tags: ['operations'],
    security: 'none',
    responses: { 200: { description: 'Ready' }, 503: { description: 'Not ready' } },
    handler: async (_req, reply) => {
      if (ctx.isClosing()) throw new BatonError('shutting_down', 'The hub is shutting down')
      if (!(await ping(ctx.database))) {
        throw new BatonError('unavailable', 'The database does not answer')
      }
      reply.code(200)
      return { ok: true, store: ctx.database.caps.name }
    },
  })
  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return metrics.registry.metrics()
  })
  openapi.add({
    method: 'GET',
    url: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    tags: ['operations'],
    security: 'none',
    responses: { 200: { description: 'Metrics in the Prometheus text format' } },
  })

  registerHandoffRoutes(api, ctx)
  registerIdentityRoutes(api, ctx)
  registerMessageRoutes(api, ctx)
  registerHomeRoutes(api, ctx)
  registerResourceRoutes(api, ctx)
  registerGrantRoutes(api, ctx)
  registerTransferRoutes(api, ctx)
  registerMcpRoute(api, ctx)
  registerDashboard(api, ctx)

  const doc = openapi.document({ title: 'Baton hub', version: ctx.version })
  app.get('/openapi.json', async () => doc)

  return app
}
