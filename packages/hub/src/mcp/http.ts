import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { BatonError } from '@baton/protocol'
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { Span } from '@opentelemetry/api'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import type { Api } from '../http/api.js'
import { errorHeaders } from '../http/challenge.js'
import { toBatonError } from '../http/errors.js'
import { principalTopic } from '../identity/admission.js'
import type { AdmissionCarry, Principal } from '../identity/service.js'
import { sessionAuths } from '../ops/auth-kinds.js'
import { localInvoke } from '../ops/local.js'
import { carryingAuth, type Settling, tooDeepToolCall } from '../ops/mcp.js'
import type { ExtraPath } from '../ops/openapi.js'
import { OPERATIONS } from '../ops/registry.js'
import { handOnTrace } from '../telemetry/http.js'
import { type HandedTrace, handOn, parseTraceparent } from '../telemetry/trace-context.js'
import { assertAllowedHostAndOrigin, hostPolicy } from './rebinding.js'
import { SESSION_LIMITS, type SessionLimits, SessionTable } from './sessions.js'

/** How /mcp appears in the OpenAPI document: a transport, not an operation. */
export const MCP_DOCS: ExtraPath[] = [
  {
    method: 'POST',
    path: '/mcp',
    operationId: 'mcp',
    summary:
      'MCP over Streamable HTTP (JSON-RPC). Unsigned: the token-handoff tools; signed as under /v1: every agent tool, acting as the signer',
    tags: ['mcp'],
    responses: {
      200: {
        description: 'A JSON-RPC answer, as JSON or an event stream',
        content: {
          'application/json': { schema: { type: 'object' } },
          'text/event-stream': { schema: { type: 'string' } },
        },
      },
      400: { description: 'A JSON-RPC parse error (-32700) for a body that is not JSON' },
      401: { description: 'A signature that does not verify (as under /v1)' },
      403: { description: 'host_not_allowed or origin_not_allowed (DNS rebinding protection)' },
      404: { description: 'A JSON-RPC error (-32001) for a session this signer does not hold' },
    },
  },
]

function sessionIdOf(req: FastifyRequest): string | undefined {
  const id = req.headers['mcp-session-id']
  return typeof id === 'string' && id !== '' ? id : undefined
}

/** JSON-RPC 2.0's answer to a body that is not JSON, or not a request (the MCP SDK's rule). */
function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', id: null, error: { code, message } })
}

let sdk: Promise<typeof import('./sdk.js')> | undefined
// Loaded at the first MCP request: the SDK, its schemas and the tools built from every operation
// are a good part of a fresh hub's memory, and a hub that is never asked over MCP never needs them.
const loadMcp = () => {
  sdk ??= import('./sdk.js')
  return sdk
}

/** MCP transports (Streamable HTTP, Session Management): an unknown session is a 404. */
function sessionNotFound(reply: FastifyReply) {
  return jsonRpcError(reply, 404, -32001, 'Session not found')
}

/** A JSON-RPC `tools/call` request: the only MCP request that can write. */
interface ToolCall {
  method: 'tools/call'
  params?: { name?: unknown; _meta?: { traceparent?: unknown; tracestate?: unknown } }
}

function isToolCall(body: unknown): body is ToolCall {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    (body as { method?: unknown }).method === 'tools/call'
  )
}

/**
 * The trace context a tool call hands on. A call whose `_meta` carries a traceparent (how MCP
 * requests carry W3C Trace Context) continues that trace: with tracing on, in a span of its own
 * (`tools/call <tool>`), a child of the caller's context, which ends with the answer; off, the
 * caller's context as sent, as for any request. A call without one is the HTTP request's work:
 * its trace (the hub's span, the caller's header, or one the hub started).
 */
function toolCallTrace(
  ctx: AppContext,
  req: FastifyRequest,
  reply: FastifyReply,
  call: ToolCall,
): { trace: HandedTrace | undefined; span?: Span | undefined } {
  const meta = call.params?._meta
  const carried = meta ? parseTraceparent(meta.traceparent, meta.tracestate) : undefined
  if (!carried) return { trace: handOnTrace(req) }
  if (!ctx.tracing.enabled) return { trace: handOn(carried) }
  const tool = typeof call.params?.name === 'string' ? call.params.name : 'unknown'
  const span = ctx.tracing.startRequest(`tools/call ${tool}`, carried)
  if (!span) return { trace: handOn(carried) }
  span.setAttribute('mcp.method.name', 'tools/call')
  span.setAttribute('gen_ai.tool.name', tool)
  span.setAttribute('baton.request_id', req.id)
  reply.raw.once('close', () => span.end())
  const sc = span.spanContext()
  return {
    trace: handOn({
      traceId: sc.traceId,
      spanId: sc.spanId,
      flags: sc.traceFlags,
      state: carried.state,
    }),
    span,
  }
}

/** Answers a tool call only once the pending admission of the request it serves is durable. */
function settling(ctx: AppContext): Settling {
  return (carry, work) => ctx.identity.settleAfter(carry as AdmissionCarry | undefined, work)
}

/**
 * MCP over Streamable HTTP at /mcp. An unsigned request is answered by a fresh server with the
 * anonymous tools. A signed one (RFC 9421, exactly as under /v1) acts as its signer: its
 * initialize opens a session (`Mcp-Session-Id`) whose server keeps resource subscriptions and
 * pushes their notifications on a GET event stream, each watch a listener on the event bus.
 * Sessions are per instance and bound to the signer; when the table is full an initialize is
 * answered statelessly, without subscriptions, so a crowd of sessions costs no one the tools.
 */
export function registerMcpRoute(
  api: Api,
  ctx: AppContext,
  limits: SessionLimits = SESSION_LIMITS,
): void {
  const policy = hostPolicy(ctx.config)
  const sessions = new SessionTable(ctx.clock, limits)
  // Event streams stay open until closed: end them first, so a stop need not wait out its grace.
  api.app.addHook('preClose', async () => sessions.closeAll())
  // Before the body is read: a page that rebinds its name to the hub is refused outright.
  const onRequest = async (req: FastifyRequest) => assertAllowedHostAndOrigin(policy, req)

  const stateless = async (req: FastifyRequest, reply: FastifyReply, principal?: Principal) => {
    const { createMcpServer, StreamableHTTPServerTransport } = await loadMcp()
    const server = createMcpServer(
      {
        invoke: localInvoke(ctx, { ip: req.ip, principal }),
        settleAfter: settling(ctx),
        auths: sessionAuths(principal !== undefined),
        log: req.log,
        config: ctx.config,
      },
      ctx.version,
    )
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    reply.hijack()
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req.raw, reply.raw, req.body)
  }

  const open = async (req: FastifyRequest, reply: FastifyReply, principal: Principal) => {
    const who = principal.principal
    const { busWatch, createMcpServer, StreamableHTTPServerTransport } = await loadMcp()
    const server = createMcpServer(
      {
        invoke: localInvoke(ctx, { ip: req.ip, principal }),
        settleAfter: settling(ctx),
        auths: sessionAuths(true),
        log: ctx.log,
        watch: busWatch(ctx.bus, who),
        config: ctx.config,
      },
      ctx.version,
    )
    let added = false
    let offAdmission: (() => void) | undefined
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      // A session id is a handle, not a credential (every request is signed), but it is as
      // unguessable as a bearer token anyway.
      sessionIdGenerator: () => randomBytes(32).toString('base64url'),
      onsessioninitialized: (id) => {
        added = true
        sessions.add({
          id,
          principal: who,
          server,
          transport,
          lastSeenAt: ctx.clock.now(),
          streams: 0,
        })
        // A suspension or rejection ends the session: its event stream must not outlive the
        // admission that every request of it was judged by.
        offAdmission = ctx.bus.subscribe(principalTopic(who), (event) => {
          if (event.data.state !== 'approved') sessions.close(id)
        })
      },
      onsessionclosed: (id) => sessions.close(id),
    })
    const closed = server.server.onclose
    server.server.onclose = () => {
      offAdmission?.()
      closed?.()
    }
    reply.hijack()
    reply.raw.on('close', () => {
      if (added) return
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req.raw, reply.raw, req.body)
  }

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    // A signed request's admission (nonce, quota charge) commits with the first write of its
    // tool call (`settling`); any other request can write nothing, and it commits alone
    // first. A tool call the MCP SDK refuses before it reaches an operation (an unknown tool)
    // spends its nonce as its connection closes.
    const signed = req.signed
    if (!isToolCall(req.body)) {
      if (signed?.carry) await ctx.identity.settle(signed.carry)
      return route(req, reply)
    }
    const { trace, span } = toolCallTrace(ctx, req, reply, req.body)
    // The MCP SDK hands a request's `auth` to the tool handler it reaches, with the call.
    ;(req.raw as IncomingMessage & { auth?: unknown }).auth = carryingAuth(
      signed?.principal.principal ?? '',
      signed?.carry,
      trace,
    )
    return span ? ctx.tracing.within(span, () => route(req, reply)) : route(req, reply)
  }

  const route = async (req: FastifyRequest, reply: FastifyReply) => {
    // A signed request (judged by the signature hook like any /v1 request) acts as its
    // principal and reaches every agent tool; an unsigned one reaches the anonymous tools only.
    const principal = req.signed?.principal
    const id = sessionIdOf(req)
    if (id !== undefined) {
      // Another signer's session answers exactly like a missing one.
      const session = sessions.find(id, principal?.principal)
      if (!session) return sessionNotFound(reply)
      reply.hijack()
      await session.transport.handleRequest(req.raw, reply.raw, req.body)
      return
    }
    const { isInitializeRequest } = await loadMcp()
    if (principal && isInitializeRequest(req.body) && sessions.hasRoom()) {
      return open(req, reply, principal)
    }
    return stateless(req, reply, principal)
  }

  api.app.route({
    method: 'POST',
    url: '/mcp',
    onRequest,
    config: { optionalSignature: true, carriesAdmission: true },
    handler: handle,
    // Malformed JSON-RPC is answered in JSON-RPC, not with a REST error body: an MCP client
    // reads the error object. Refusals of the request itself (auth, Host) stay REST answers.
    errorHandler: (error, req, reply) => {
      // A tool's arguments nested past the JSON guard answer as that tool's HTTP route does.
      const deep = tooDeepToolCall(OPERATIONS, error)
      if (deep) return reply.code(200).type('application/json').send(deep)
      const e = toBatonError(error)
      if (e.code === 'invalid_json' || e.code === 'unsupported_media_type') {
        return jsonRpcError(reply, 400, -32700, `Parse error: ${e.message}`)
      }
      if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
      return reply.headers(errorHeaders(e, req)).code(e.status).send(e.toBody())
    },
  })
  for (const method of ['GET', 'DELETE'] as const) {
    api.app.route({
      method,
      url: '/mcp',
      onRequest,
      config: { optionalSignature: true },
      handler: async (req, reply) => {
        const id = sessionIdOf(req)
        // MCP transports: a server without an SSE stream answers GET with 405 Method Not Allowed.
        if (id === undefined) {
          throw new BatonError(
            'method_not_allowed',
            'Without a session this MCP endpoint answers only POST; a signed initialize opens one',
            { allow: ['POST'] },
            { allow: 'POST' },
          )
        }
        const session = sessions.find(id, req.signed?.principal.principal)
        if (!session) return sessionNotFound(reply)
        reply.hijack()
        if (method === 'GET') {
          session.streams += 1
          reply.raw.on('close', () => {
            session.streams -= 1
            session.lastSeenAt = ctx.clock.now()
          })
        }
        await session.transport.handleRequest(req.raw, reply.raw)
      },
    })
  }
}
