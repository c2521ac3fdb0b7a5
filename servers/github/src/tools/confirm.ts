import { type ClientAccess, ToolError } from '@keel-mcp/core'

/**
 * Asks the user to confirm a destructive write through elicitation, when the client offers it
 * (2025-era connections by their declared capability; a 2026-07-28 lone request by the
 * capabilities it carries, answered through `input_required`). A client without elicitation
 * decides as before, from the tool's destructive annotation. Ask before acting: on 2026-07-28 the
 * call runs again from the start with the answer.
 */
export async function confirmDestructive(client: ClientAccess, question: string): Promise<void> {
  if (!client.capabilities?.elicitation) return
  const answer = (await client.elicit(
    {
      message: question,
      requestedSchema: {
        type: 'object',
        properties: { confirm: { type: 'boolean', title: 'Go ahead', default: false } },
        required: ['confirm'],
      },
    },
    { key: 'confirm_destructive' },
  )) as { action?: string; content?: { confirm?: unknown } }
  if (answer.action !== 'accept' || answer.content?.confirm !== true) {
    throw new ToolError('cancelled', `Not done: the user did not confirm. ${question}`, {
      hint: 'Ask the user before trying again.',
    })
  }
}
