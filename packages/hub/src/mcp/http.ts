import { BatonError } from '@baton/protocol'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../app.js'
import { toBatonError } from '../http/errors.js'
import type { Api } from '../http/server.js'
import { verifiedPrincipal } from '../identity/http.js'
import { localInvoke } from '../ops/local.js'
import type { ExtraPath } from '../ops/openapi.js'
import type { Auth } from '../ops/operation.js'
import { assertAllowedHostAndOrigin, hostPolicy } from './rebinding.js'
import { createMcpServer } from './server.js'

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
    },
  },
]

/** JSON-RPC 2.0's answer to a body that is not JSON, or not a request (the MCP SDK's rule). */
function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', id: null, error: { code, message } })
}

/**
 * MCP over Streamable HTTP at /mcp, stateless: each request gets a fresh server whose tools call
 * the hub's services directly, as the request's signer when it is signed (RFC 9421, exactly as
 * under /v1), with the caller's address for per-address quotas.
 */
export function registerMcpRoute(api: Api, ctx: AppContext): void {
  const policy = hostPolicy(ctx.config)
  // Before the body is read: a page that rebinds its name to the hub is refused outright.
  const onRequest = async (req: FastifyRequest) => assertAllowedHostAndOrigin(policy, req)
  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const ip = req.ip
    // A signed request (judged by the signature hook like any /v1 request) acts as its
    // principal and reaches every agent tool; an unsigned one reaches the anonymous tools only.
    const principal = verifiedPrincipal(req)
    const server = createMcpServer(
      {
        invoke: localInvoke(ctx, { ip, principal }),
        auths: new Set<Auth>(
          principal ? ['none', 'handoff-token', 'signature'] : ['none', 'handoff-token'],
        ),
        log: req.log,
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
  api.app.route({
    method: 'POST',
    url: '/mcp',
    onRequest,
    handler: handle,
    // Malformed JSON-RPC is answered in JSON-RPC, not with a REST error body: an MCP client
    // reads the error object. Refusals of the request itself (auth, Host) stay REST answers.
    errorHandler: (error, req, reply) => {
      const e = toBatonError(error)
      if (e.code === 'invalid_json' || e.code === 'unsupported_media_type') {
        return jsonRpcError(reply, 400, -32700, `Parse error: ${e.message}`)
      }
      if (e.code === 'internal') req.log.error({ err: error }, 'unhandled error')
      return reply.headers(e.headers).code(e.status).send(e.toBody())
    },
  })
  for (const method of ['GET', 'DELETE'] as const) {
    api.app.route({
      method,
      url: '/mcp',
      onRequest,
      // MCP transports: a server without an SSE stream answers GET with 405 Method Not Allowed.
      handler: async () => {
        throw new BatonError(
          'method_not_allowed',
          'This MCP endpoint is stateless; send JSON-RPC requests with POST',
          { allow: ['POST'] },
          { allow: 'POST' },
        )
      },
    })
  }
}
