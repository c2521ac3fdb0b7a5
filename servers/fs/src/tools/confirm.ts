import { type ToolContext, ToolError } from '@keel-mcp/core'
import type { FsDeps } from './shared.js'

/**
 * Asks the user to confirm a destructive step, when the client can ask (elicitation, declared by a
 * 2025-era client or on the 2026-07-28 request itself, where the question becomes an
 * `input_required` result and the call runs again with the answer). A client without elicitation
 * is not asked: the tool is off by default, marked destructive, and the client's own approval of
 * tool calls applies. Declining or cancelling stops the call before anything changes.
 */
export async function confirmWithUser(context: ToolContext<FsDeps>, message: string): Promise<void> {
  if (!context.client.capabilities?.elicitation) return
  const answer = (await context.client.elicit(
    {
      message,
      requestedSchema: {
        type: 'object',
        properties: { confirm: { type: 'boolean', title: 'Go ahead', default: true } },
        required: ['confirm'],
      },
    },
    { key: 'confirm' },
  )) as { action?: string; content?: { confirm?: unknown } }
  if (answer.action !== 'accept' || answer.content?.confirm === false) {
    throw new ToolError('cancelled', 'The user did not confirm; nothing was changed.', {
      hint: 'Ask the user before trying again.',
    })
  }
}
