import { z } from '@keel-mcp/core'
import { moveFile } from '../lib/index.js'
import { defineTool, displayPath, flag, guardOf } from './shared.js'

export const moveFileTool = defineTool({
  name: 'move_file',
  title: 'Move file',
  description: 'Move or rename a file, directory or link (not its target).',
  input: {
    source: z.string().describe('Source'),
    destination: z.string().describe('Destination'),
    overwrite: flag('Overwrite'),
  },
  output: { source: z.string(), destination: z.string(), overwritten: z.boolean() },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run({ source, destination, overwrite = false }, context) {
    const guard = await guardOf(context)
    const from = await guard.resolveSafe(source, { followFinalSymlink: false })
    const to = await guard.resolveSafe(destination, { forWrite: true })
    const result = await moveFile(from, to, { overwrite, signal: context.signal })
    const data = {
      source: displayPath(guard, from.path),
      destination: displayPath(guard, to.path),
      overwritten: result.overwritten,
    }
    return {
      data,
      text: `Moved ${data.source} to ${data.destination}${data.overwritten ? ' (replaced the existing destination)' : ''}`,
    }
  },
})
