import { z } from '@keel-mcp/core'
import { moveFile } from '../lib/index.js'
import { defineTool, displayPath, guardOf } from './shared.js'

export const moveFileTool = defineTool({
  name: 'move_file',
  title: 'Move file',
  description:
    'Move or rename a file, directory or symlink (a link moves as a link). An existing destination is kept unless overwrite.',
  input: {
    source: z.string().describe('Path to move'),
    destination: z.string().describe('New path; its parent must exist'),
    overwrite: z.boolean().default(false).describe('Replace an existing destination'),
  },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run({ source, destination, overwrite }, context) {
    const guard = await guardOf(context)
    const from = await guard.resolveSafe(source, { followFinalSymlink: false })
    const to = await guard.resolveSafe(destination, { forWrite: true })
    const result = await moveFile(from, to, { overwrite, signal: context.signal })
    return {
      text: `Moved ${displayPath(guard, from.path)} to ${displayPath(guard, to.path)}${result.overwritten ? ' (replaced the existing destination)' : ''}`,
    }
  },
})
