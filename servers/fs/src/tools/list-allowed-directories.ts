import { z } from '@keel-mcp/core'
import { defineTool } from './shared.js'

export const listAllowedDirectoriesTool = defineTool({
  name: 'list_allowed_directories',
  title: 'List allowed directories',
  description: 'Directories the server may access.',
  input: {},
  output: { directories: z.array(z.string()), narrowed: z.boolean() },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(_args, context) {
    const effective = await context.deps.directories.forClient(context.client)
    const directories = [...effective.guard.roots]
    const heading = effective.narrowed
      ? "Allowed directories (narrowed by the client's roots):"
      : 'Allowed directories:'
    return {
      data: { directories, narrowed: effective.narrowed },
      text: directories.length
        ? `${heading}\n${directories.join('\n')}`
        : `None. ${effective.reason ?? ''}`.trim(),
    }
  },
})
