import { z } from '@keel-mcp/core'
import { copyEntry } from '../lib/index.js'
import { confirmWithUser } from './confirm.js'
import { defineTool, displayPath, flag, formatBytes, guardOf } from './shared.js'

export const copyFileTool = defineTool({
  name: 'copy_file',
  title: 'Copy file',
  description: 'Copy a file or tree; links leading outside are left out.',
  input: {
    source: z.string().describe('Source'),
    destination: z.string().describe('Destination'),
    overwrite: flag('Overwrite'),
  },
  output: { files: z.number().int(), skipped: z.array(z.string()) },
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  toolset: 'destructive',
  async run({ source, destination, overwrite = false }, context) {
    const guard = await guardOf(context)
    const from = await guard.resolveSafe(source)
    const to = await guard.resolveSafe(destination, { forWrite: true })
    const shownFrom = displayPath(guard, from.path)
    const shownTo = displayPath(guard, to.path)
    const plan = await copyEntry(from, to, {
      overwrite,
      signal: context.signal,
      // Asked only when something existing is replaced: a copy to a new name loses nothing.
      confirm: async (planned) => {
        if (planned.replaces)
          await confirmWithUser(context, `Replace ${shownTo} with a copy of ${shownFrom}?`)
      },
    })
    const what =
      plan.type === 'file'
        ? `${formatBytes(plan.bytes)}`
        : `${plan.files} files, ${plan.directories} directories${plan.links ? `, ${plan.links} links` : ''}, ${formatBytes(plan.bytes)}`
    const skipped = plan.skipped.slice(0, 50)
    const notice = plan.skipped.length
      ? `\nLeft out ${plan.skipped.length} (links leading outside the allowed directories, devices, FIFOs or sockets): ${skipped.join(', ')}${plan.skipped.length > skipped.length ? ', …' : ''}`
      : ''
    return {
      data: { files: plan.files, skipped },
      text: `Copied ${shownFrom} to ${shownTo}${plan.replaces ? ' (replaced it)' : ''}: ${what}.${notice}`,
    }
  },
})
