import { z } from '@keel-mcp/core'
import { createDirectory } from '../lib/index.js'
import { defineTool, displayPath, guardOf, pathArgument } from './shared.js'

export const createDirectoryTool = defineTool({
  name: 'create_directory',
  title: 'Create directory',
  description: 'A directory and its missing parents; fine if it exists.',
  input: { path: pathArgument },
  output: { path: z.string(), created: z.boolean() },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run({ path }, context) {
    const guard = await guardOf(context)
    const directory = await guard.resolveSafe(path, { forWrite: true })
    const { created } = await createDirectory(directory, { signal: context.signal })
    const shown = displayPath(guard, directory.path)
    return { data: { path: shown, created }, text: `${created ? 'Created' : 'Already exists:'} ${shown}/` }
  },
})
