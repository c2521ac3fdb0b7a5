// The previous SDK generation (v1, `@modelcontextprotocol/sdk`) with the same no-op tool: the
// reference servers run on it, so it shows how much of a gap to them is the SDK generation alone.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { registerNoop } from './sdk-noop-tool.mjs'

const server = new McpServer({ name: 'sdk-v1-noop', version: '0.0.0' })
registerNoop(server)
await server.connect(new StdioServerTransport())
