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
import { capConnectionsPerAddress } from './connections.js'
import { toBatonError } from './errors.js'
import { assertSafeParams, parseJsonBody } from './json-guard.js'
import { OpenApiBuilder, type RouteDoc } from './openapi.js'

/** A route: its documentation and its handler; the answer is sent as JSON with `status`. */
export interface RouteSpec extends RouteDoc {
  /** The status of a successful answer (default 200). */
  status?: number
  bodyLimit?: number
  /** Runs before the body is read: for checks that need only the method, URL and headers. */
  onRequest?: (req: FastifyRequest, reply: FastifyReply) => Promise<void>
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
    // A client must send its header section, and then its whole request, within these times or
    // its connection is closed; the answer may take longer (long-poll waits, event streams), since
    // Node counts these only until the request is received. Node checks them on an interval.
    requestTimeout: config.connections.requestTimeoutMs,
    keepAliveTimeout: config.connections.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.connections.headersTimeoutMs,
      requestTimeout: config.connections.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(5000, Math.floor(config.connections.headersTimeoutMs / 4)),
      ),
    },
    forceCloseConnections: 'idle',
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    // Errors the router raises before any route runs (bad URL encoding, over-long segments).
    frameworkErrors: (error, _req, reply) => {
      const e = toBatonError(error)
      void (reply as FastifyReply).code(e.status).send(e.toBody())
    },
  })

  capConnectionsPerAddress(app.server, config.connections.maxPerAddress, config.trustProxy, () =>
    metrics.connectionsRefused.inc(),
  )

  // One JSON parser with stable codes, for every route and every body (MCP and snapshots too):
  // strict UTF-8, then the depth, `__proto__` and text guard. Any other body type is a 415.
  app.removeAllContentTypeParsers()
  const parseJson = (
    _req: unknown,
    body: string | Buffer,
    done: (e: Error | null, v?: unknown) => void,
  ) => {
    let value: unknown
    try {
      value = parseJsonBody(body as Buffer)
    } catch (error) {
      return done(error as Error, undefined)
    }
    done(null, value)
  }
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJson)
  app.addContentTypeParser(/^application\/[a-z0-9.+-]*\+json$/, { parseAs: 'buffer' }, parseJson)
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined)
    done(
      new BatonError('unsupported_media_type', 'Send JSON with Content-Type: application/json'),
      undefined,
    )
  })

  // Path and query parameters follow the body's text rule, before any route reads them.
  app.addHook('preValidation', async (req) => {
    assertSafeParams(req.params, 'path')
    assertSafeParams(req.query, 'query')
  })

  // Every route's methods by path pattern, so a known path with a wrong method answers 405.
  const routes: { pattern: RegExp; methods: Set<string> }[] = []
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const pattern = patternOf(route.url)
    let entry = routes.find((r) => r.pattern.source === pattern.source)
    if (!entry) {
      entry = { pattern, methods: new Set() }
      routes.push(entry)
    }
    for (const m of methods) entry.methods.add(m.toUpperCase())
    if (entry.methods.has('GET')) entry.methods.add('HEAD')
  })

  app.setErrorHandler((error, req, reply) => {
    const e = toBatonError(error)
    metrics.recordError(e.code)
    if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
    reply.headers(e.headers).code(e.status).send(e.toBody())
  })
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '/'
    const allowed = new Set<string>()
    for (const r of routes) if (r.pattern.test(path)) for (const m of r.methods) allowed.add(m)
    // RFC 9110 §15.5.6: a 405 names the methods the target supports in Allow.
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ')
      const e = new BatonError('method_not_allowed', `${path} does not support ${req.method}`, {
        allow: [...allowed].sort(),
      })
      return reply.code(405).header('allow', allow).send(e.toBody())
    }
    const e = new BatonError('not_found', `No route ${req.method} ${path}`)
    reply.code(404).send(e.toBody())
  })

  // While shutting down, every answer closes its connection so the server can stop promptly.
  // So does an answer sent before the request body was read to its end (a 413, a refused
  // signature): the rest of the body must not stall or be read as the next request.
  app.addHook('onSend', async (req, reply, payload) => {
    if (ctx.isClosing() || !req.raw.complete) reply.header('connection', 'close')
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
        ...(spec.onRequest ? { onRequest: spec.onRequest } : {}),
        handler: async (req, reply) => {
          // The route's status is the default; a status the handler sets wins.
          reply.code(spec.status ?? 200)
          const result = await spec.handler(req, reply)
          if (reply.sent) return reply
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

/** A matcher for a route URL pattern: `:name` is one segment, `*` the rest of the path. */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => {
      if (part === '*') return '.*'
      if (part.startsWith(':')) return '[^/]+'
      return part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('')
  return new RegExp(`^${source}$`)
}
