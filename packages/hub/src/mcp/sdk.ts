// What the /mcp route needs of the MCP SDK and of the hub's MCP server, behind one dynamic
// import (see `loadMcp` in http.ts): the SDK and its schemas cost the hub's memory only once
// an MCP request has come.
export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
export { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
export { busWatch } from './resources.js'
export { createMcpServer } from './server.js'
