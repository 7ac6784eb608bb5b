import type { Span } from '@opentelemetry/api'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { REQUEST_ID_HEADER } from './request-id.js'
import { formatTraceparent, parseTraceparent, type TraceContext } from './trace-context.js'
import type { Tracing } from './tracing.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The trace context work of this request continues: the hub's span, or the caller's. */
    batonTrace: TraceContext | undefined
    batonSpan: Span | undefined
  }
}

/** What the request log line adds about the caller, once the request is answered. */
export interface RequestLogFields {
  /** The verified principal of a signed request, if any. */
  principal(req: FastifyRequest): string | undefined
}

/**
 * The `traceparent` that work a request hands on carries (a message it sends, a move it makes):
 * the hub's own span when tracing is on, else the caller's context as it sent it, else none.
 */
export function handOnTrace(req: FastifyRequest): string | undefined {
  const trace = req.batonTrace
  return trace ? formatTraceparent(trace) : undefined
}

/**
 * Request ids, trace context and request logs for every route: the request id is echoed on
 * every answer (errors too, also those refused before the body is read), a valid W3C
 * `traceparent` is taken on (W3C Trace Context §3.2) and, with tracing on, the request runs in
 * a server span; when it is answered one log line says method, route pattern (never the URL,
 * which may hold ids or tokens), status, time, principal, request id and trace id.
 */
export function registerRequestTelemetry(
  app: FastifyInstance,
  log: Logger,
  tracing: Tracing,
  fields: RequestLogFields,
): void {
  app.decorateRequest('batonTrace', undefined)
  app.decorateRequest('batonSpan', undefined)
  app.addHook('onRequest', (req, reply, done) => {
    reply.header(REQUEST_ID_HEADER, req.id)
    const h = req.headers
    const incoming =
      h.traceparent === undefined ? undefined : parseTraceparent(h.traceparent, h.tracestate)
    if (!tracing.enabled) {
      req.batonTrace = incoming
      return done()
    }
    const route = req.routeOptions.url
    const span = tracing.startRequest(route ? `${req.method} ${route}` : req.method, incoming)
    if (!span) return done()
    span.setAttribute('http.request.method', req.method)
    if (route) span.setAttribute('http.route', route)
    span.setAttribute('baton.request_id', req.id)
    const sc = span.spanContext()
    req.batonSpan = span
    req.batonTrace = {
      traceId: sc.traceId,
      spanId: sc.spanId,
      flags: sc.traceFlags,
      state: incoming?.state,
    }
    tracing.within(span, done)
  })
  app.addHook('onResponse', (req, reply, done) => {
    const status = reply.statusCode
    const span = req.batonSpan
    if (span) {
      span.setAttribute('http.response.status_code', status)
      // OpenTelemetry HTTP semantic conventions: a server span is an error for a 5xx only.
      if (status >= 500) span.setStatus({ code: 2 })
      span.end()
    }
    const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info'
    if (log.isLevelEnabled(level)) {
      const principal = fields.principal(req)
      log[level](
        {
          reqId: req.id,
          method: req.method,
          route: req.routeOptions.url ?? 'unmatched',
          status,
          ms: Math.round(reply.elapsedTime * 10) / 10,
          ...(principal ? { principal } : {}),
          ...(req.batonTrace ? { traceId: req.batonTrace.traceId } : {}),
        },
        'request',
      )
    }
    done()
  })
}
