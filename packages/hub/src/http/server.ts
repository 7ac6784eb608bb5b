import {
  BatonError,
  SIGNATURE_DIRECTORY_MEDIA_TYPE,
  SIGNATURE_DIRECTORY_PATH,
} from '@baton/protocol'
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import { registerA2aRoutes } from '../a2a/http.js'
import type { AppContext } from '../app.js'
import { registerGuidePages } from '../guides/pages.js'
import { registerIdentityRoutes } from '../identity/http.js'
import { MCP_DOCS, registerMcpRoute } from '../mcp/http.js'
import { registerHttpOperations } from '../ops/http.js'
import { type ExtraPath, openApiDocument } from '../ops/openapi.js'
import { OPERATIONS } from '../ops/registry.js'
import { registerRequestTelemetry } from '../telemetry/http.js'
import { REQUEST_ID_HEADER, requestIdOf } from '../telemetry/request-id.js'
import { registerDashboard } from '../web/dashboard.js'
import type { Api } from './api.js'
import { errorHeaders } from './challenge.js'
import { capConnectionsPerAddress } from './connections.js'
import { toBatonError } from './errors.js'
import { assertSafeParams, parseJsonBody } from './json-guard.js'

/** What features register their hooks and plain routes on; operations come from the registry. */

export { bearerToken } from './bearer.js'

/** Routes that are not operations (a text answer, this document) but are documented. */
export const DOCUMENTED_ROUTES: ExtraPath[] = [
  {
    method: 'GET',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    tags: ['operations'],
    responses: {
      200: {
        description: 'Metrics in the Prometheus text format',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    },
  },
  {
    method: 'GET',
    path: SIGNATURE_DIRECTORY_PATH,
    operationId: 'signatureDirectory',
    summary:
      "The hub's own keys as an HTTP Message Signatures directory (a JWKS, kid the RFC 7638 thumbprint), the answer signed for the authority asked",
    tags: ['identity'],
    responses: {
      200: {
        description: 'The key directory',
        content: {
          [SIGNATURE_DIRECTORY_MEDIA_TYPE]: {
            schema: {
              type: 'object',
              properties: { keys: { type: 'array', items: { type: 'object' } } },
              required: ['keys'],
            },
          },
        },
      },
    },
  },
  {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags: ['operations'],
    responses: {
      200: {
        description: 'The OpenAPI document',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
    },
  },
]

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
    // Requests log through the hub's logger itself, not a child logger made per request: a child
    // is about 1 KiB, and 10,000 long polls held open kept 10,000 of them alive.
    childLoggerFactory: (logger) => logger,
    // The caller's X-Request-Id only when it is a safe, bounded token; a fresh one otherwise.
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers[REQUEST_ID_HEADER]),
    // Errors the router raises before any route runs (bad URL encoding, over-long segments).
    frameworkErrors: (error, req, reply) => {
      const e = toBatonError(error)
      telemetry.answerUnrouted(req, reply as FastifyReply)
      void (reply as FastifyReply).code(e.status).send(e.toBody())
    },
  })

  capConnectionsPerAddress(app.server, config.connections.maxPerAddress, config.trustProxy, () =>
    metrics.connectionsRefused.inc(),
  )

  // First of all hooks, so every answer carries the request id, refusals before the body too.
  const telemetry = registerRequestTelemetry(app, ctx.log, ctx.tracing, {
    principal: (req) => req.signed?.principal.principal,
  })

  // One JSON parser with stable codes, for every route and every body (MCP and snapshots too):
  // strict UTF-8, then one walk of the text for depth, element count, `__proto__` and text, then
  // JSON.parse. Any other body type is a 415.
  app.removeAllContentTypeParsers()
  const bounds = { maxElements: config.bodyMaxElements }
  const parseJson = (
    _req: unknown,
    body: string | Buffer,
    done: (e: Error | null, v?: unknown) => void,
  ) => {
    let value: unknown
    try {
      value = parseJsonBody(body as Buffer, bounds)
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
    reply.headers(errorHeaders(e, req)).code(e.status).send(e.toBody())
  })
  const notFound = (req: FastifyRequest, reply: FastifyReply) => {
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
  }
  app.setNotFoundHandler(notFound)
  // Every request under /v1 is signed, a route's or not: an unmatched one is declared so too, and
  // its signer is judged (enrolled, counted, admitted) before it is answered 404 or 405. fastify
  // keeps a not-found handler's `config` as its route config; its types only omit it.
  const signedNotFound = { config: { auth: 'signature' } } as object
  app.register(async (v1) => v1.setNotFoundHandler(signedNotFound, notFound), { prefix: '/v1' })

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
    done()
  })

  const api: Api = { app }

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return metrics.registry.metrics()
  })

  registerIdentityRoutes(api, ctx)
  registerHttpOperations(app, ctx, OPERATIONS)
  registerMcpRoute(api, ctx)
  registerA2aRoutes(api, ctx)
  registerDashboard(api, ctx)
  registerGuidePages(app)

  const doc = openApiDocument(OPERATIONS, [...DOCUMENTED_ROUTES, ...MCP_DOCS], {
    version: ctx.version,
    serverUrl: ctx.config.identity.publicUrl ?? '/',
    config: ctx.config,
  })
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
