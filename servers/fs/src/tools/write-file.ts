import { z } from '@keel-mcp/core'
import { writeFileAtomic } from '../lib/index.js'
import { defineTool, displayPath, filePath, guardOf } from './shared.js'

export const writeFileTool = defineTool({
  name: 'write_file',
  title: 'Write file',
  description:
    'Create a file or replace all of it, atomically; the parent must exist. To change part of a file: edit_file.',
  input: {
    path: filePath,
    content: z.string().describe('The whole new content'),
    overwrite: z.boolean().default(true).describe('false: fail if the file exists'),
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
