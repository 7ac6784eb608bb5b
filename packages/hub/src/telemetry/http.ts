import type { Span } from '@opentelemetry/api'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { REQUEST_ID_HEADER } from './request-id.js'
import {
  formatTraceresponse,
  type HandedTrace,
  handOn,
  newSpanId,
  parseTraceparent,
  startTrace,
  type TraceContext,
} from './trace-context.js'
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

/** The header that tells a caller which trace its request belongs to (Trace Context Level 2). */
export const TRACERESPONSE_HEADER = 'traceresponse'

/**
 * The trace context that work a request hands on carries (a message it sends, a move it makes):
 * the hub's own span when tracing is on, else the caller's context as it sent it, else the
 * trace the hub started for the request; its tracestate rides along unchanged.
 */
export function handOnTrace(req: FastifyRequest): HandedTrace | undefined {
  const trace = req.batonTrace
  return trace ? handOn(trace) : undefined
}

/**
 * Sets a header on the answer whichever way it goes: through fastify, and on the raw response,
 * which a route that hijacks its reply (an event stream, /mcp) writes itself. Node merges what
 * was set on the raw response into the head fastify writes.
 */
function headerOnEveryAnswer(reply: FastifyReply, name: string, value: string): void {
  reply.header(name, value)
  reply.raw.setHeader(name, value)
}

/**
 * Request ids, trace context and request logs for every route: the request id and the trace
 * (`traceresponse`) are on every answer (errors too, also those refused before the body is
 * read, and answers a route writes itself); a valid W3C `traceparent` is taken on (W3C Trace
 * Context §3.2), a request without one starts a trace of its own, and with tracing on the
 * request runs in a server span; when it is answered one log line says method, route pattern
 * (never the URL, which may hold ids or tokens), status, time, principal, request id and trace id.
 */
export function registerRequestTelemetry(
  app: FastifyInstance,
  log: Logger,
  tracing: Tracing,
  fields: RequestLogFields,
): { answerUnrouted: (req: FastifyRequest, reply: FastifyReply) => void } {
  const logLine = (req: FastifyRequest, reply: FastifyReply) => {
    const status = reply.statusCode
    const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info'
    if (!log.isLevelEnabled(level)) return
    const principal = fields.principal(req)
    const ms = reply.elapsedTime
    log[level](
      {
        reqId: req.id,
        method: req.method,
        route: req.routeOptions.url ?? 'unmatched',
        status,
        ms: Number.isFinite(ms) ? Math.round(ms * 10) / 10 : 0,
        ...(principal ? { principal } : {}),
        ...(req.batonTrace ? { traceId: req.batonTrace.traceId } : {}),
      },
      'request',
    )
  }
  app.decorateRequest('batonTrace', undefined)
  app.decorateRequest('batonSpan', undefined)
  app.addHook('onRequest', (req, reply, done) => {
    headerOnEveryAnswer(reply, REQUEST_ID_HEADER, req.id)
    const h = req.headers
    const incoming =
      h.traceparent === undefined ? undefined : parseTraceparent(h.traceparent, h.tracestate)
    const route = req.routeOptions.url
    const span = tracing.enabled
      ? tracing.startRequest(route ? `${req.method} ${route}` : req.method, incoming)
      : undefined
    if (!span) {
      // No span: work is handed on in the caller's trace as it sent it, or in one started here;
      // the answer names an id of the hub's own for its part, recorded nowhere (flags 00).
      const trace = incoming ?? startTrace()
      req.batonTrace = trace
      const own = incoming ? newSpanId() : trace.spanId
      headerOnEveryAnswer(reply, TRACERESPONSE_HEADER, formatTraceresponse(trace, own, false))
      return done()
    }
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
    headerOnEveryAnswer(
      reply,
      TRACERESPONSE_HEADER,
      formatTraceresponse(req.batonTrace, sc.spanId, true),
    )
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
    logLine(req, reply)
    done()
  })
  return {
    /**
     * Names the request and its trace on an answer the router gives before any hook ran (a URL
     * it cannot read), and writes its log line once it is sent, as for every other request.
     */
    answerUnrouted(req, reply) {
      headerOnEveryAnswer(reply, REQUEST_ID_HEADER, req.id)
      if (!req.batonTrace) {
        const trace = startTrace()
        req.batonTrace = trace
        const header = formatTraceresponse(trace, trace.spanId, false)
        headerOnEveryAnswer(reply, TRACERESPONSE_HEADER, header)
      }
      reply.raw.once('finish', () => logLine(req, reply))
    },
  }
}
