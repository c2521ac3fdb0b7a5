// The no-op tool of the SDK baselines (sdk-noop.mjs, sdk-noop-otel.mjs, and sdk-v1-noop.mjs on the
// v1 SDK, whose registerTool takes the same arguments), registered on the SDK's own McpServer: the
// same tool keel-noop.mjs serves through core.
import { z } from 'zod'

/** The tool's answer: its text argument, or "ok". */
export const noopResult = ({ text }) => ({ content: [{ type: 'text', text: text || 'ok' }] })

/** Registers `noop` on `server`, answered by `handler` (the plain answer unless given). */
export function registerNoop(server, handler = noopResult) {
  server.registerTool(
    'noop',
    {
      title: 'No-op',
      description: 'Returns its text argument unchanged.',
      inputSchema: { text: z.string().max(1000).default('') },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    handler,
  )
}
