import { z } from '@keel-mcp/core'
import { writeFileAtomic } from '../lib/index.js'
import { defineTool, displayPath, guardOf, pathArgument } from './shared.js'

export const writeFileTool = defineTool({
  name: 'write_file',
  title: 'Write file',
  description: 'Create or overwrite a whole file atomically (parent must exist). Partial changes: edit_file.',
  input: {
    path: pathArgument,
    content: z.string().describe('Content'),
    overwrite: z.boolean().default(true).describe('Overwrite'),
  },
  output: { path: z.string(), created: z.boolean(), bytes: z.number().int() },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run({ path, content, overwrite }, context) {
    const guard = await guardOf(context)
    const file = await guard.resolveSafe(path, { forWrite: true })
    const result = await writeFileAtomic(file, content, { overwrite, signal: context.signal })
    const shown = displayPath(guard, file.path)
    return {
      data: { path: shown, created: result.created, bytes: result.bytesWritten },
      text: `${result.created ? 'Created' : 'Replaced'} ${shown} (${result.bytesWritten} bytes)`,
    }
  },
})
