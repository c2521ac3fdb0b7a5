// The previous SDK generation (v1, `@modelcontextprotocol/sdk`) with the same no-op tool: the
// reference servers run on it, so it shows how much of a gap to them is the SDK generation alone.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

const server = new McpServer({ name: 'sdk-v1-noop', version: '0.0.0' })
server.registerTool(
  'noop',
  {
    title: 'No-op',
    description: 'Returns its text argument unchanged.',
    inputSchema: { text: z.string().max(1000).default('') },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  },
  ({ text }) => ({ content: [{ type: 'text', text: text || 'ok' }] }),
)
await server.connect(new StdioServerTransport())
