import { BatonError } from '@baton/protocol'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { AppContext } from '../app.js'
import type { Api } from '../http/server.js'
import { verifiedPrincipal } from '../identity/http.js'
import { localInvoke } from '../ops/local.js'
import type { Auth } from '../ops/operation.js'
import { assertAllowedHostAndOrigin, hostPolicy } from './rebinding.js'
import { createMcpServer } from './server.js'

/**
 * MCP over Streamable HTTP at /mcp, stateless: each request gets a fresh server whose tools call
 * the hub's services directly, as the request's signer when it is signed (RFC 9421, exactly as
 * under /v1), with the caller's address for per-address quotas.
 */
export function registerMcpRoute(api: Api, ctx: AppContext): void {
  const policy = hostPolicy(ctx.config)
  // Before the body is read: a page that rebinds its name to the hub is refused outright.
  const onRequest = async (req: Parameters<Parameters<Api['route']>[0]['handler']>[0]) =>
    assertAllowedHostAndOrigin(policy, req)
  const handle = async (
    req: Parameters<Parameters<Api['route']>[0]['handler']>[0],
    reply: Parameters<Parameters<Api['route']>[0]['handler']>[1],
  ) => {
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
  api.route({
    method: 'POST',
    url: '/mcp',
    operationId: 'mcp',
    summary: 'MCP over Streamable HTTP (JSON-RPC); tools create, advance and read handoffs',
    tags: ['mcp'],
    security: 'none',
    responses: {
      200: { description: 'A JSON-RPC answer, as JSON or an event stream' },
      403: { description: 'host_not_allowed or origin_not_allowed (DNS rebinding protection)' },
    },
    onRequest,
    handler: handle,
  })
  for (const method of ['GET', 'DELETE'] as const) {
    api.route({
      method,
      url: '/mcp',
      operationId: `mcp${method}`,
      summary: 'Not offered: the MCP endpoint is stateless',
      tags: ['mcp'],
      security: 'none',
      responses: { 405: { description: 'method_not_allowed' } },
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
