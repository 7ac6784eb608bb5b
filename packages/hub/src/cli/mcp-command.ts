import { parseArgs } from 'node:util'
import { HandoffClient } from '@baton/client'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { VERSION } from '../app.js'
import { createMcpServer } from '../mcp/server.js'
import { type Io, UsageError } from './io.js'

/** `baton mcp --hub URL`: an MCP server over stdio whose tools call a hub through the SDK. */
export async function mcpCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { hub: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  })
  if (values.help) {
    io.stdout('baton mcp --hub URL   (MCP over stdio; the hub URL may also come from BATON_HUB)')
    return 0
  }
  const hub = values.hub ?? process.env.BATON_HUB
  if (!hub) throw new UsageError('--hub URL is required (or set BATON_HUB)')
  const handoffs = new HandoffClient(hub)
  const server = createMcpServer(
    {
      handoffs: {
        create: (input) => handoffs.create(input as Parameters<HandoffClient['create']>[0]),
        read: (id, token) => handoffs.read(id, token),
        advance: (id, state, input, token) =>
          handoffs.advance(id, state, input as Parameters<HandoffClient['advance']>[2], token),
        wait: (id, token, seconds, version) => handoffs.wait(id, token, seconds, version),
      },
    },
    VERSION,
  )
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
  })
  await server.connect(transport)
  process.stdin.once('end', () => void server.close())
  await closed
  return 0
}
