import { z } from '@keel-mcp/core'
import { getFileInfo } from '../lib/index.js'
import { defineTool, displayPath, guardOf } from './shared.js'

export const getFileInfoTool = defineTool({
  name: 'get_file_info',
  title: 'Get file info',
  description: "Type, size, times, permissions; a symlink's own, and whether it leads inside.",
  input: { path: z.string().describe('Path') },
  output: {
    path: z.string(),
    type: z.enum(['file', 'directory', 'symlink', 'other']),
    size: z.number(),
    created: z.string().optional(),
    modified: z.string(),
    accessed: z.string(),
    permissions: z.string(),
    linkTarget: z.string().optional(),
    linkStatus: z.enum(['inside', 'outside', 'broken']).optional(),
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run({ path }, context) {
    const guard = await guardOf(context)
    const entry = await guard.resolveSafe(path, { followFinalSymlink: false })
    const info = await getFileInfo(entry, { signal: context.signal })
    const data = {
      path: displayPath(guard, info.path),
      type: info.type,
      size: info.size,
      ...(info.created ? { created: info.created } : {}),
      modified: info.modified,
      accessed: info.accessed,
      permissions: info.permissions,
      ...(info.linkTarget ? { linkTarget: displayPath(guard, info.linkTarget) } : {}),
      ...(info.linkStatus ? { linkStatus: info.linkStatus } : {}),
    }
    const text = Object.entries(data)
      .map(([key, value]) => `${key}: ${value}`)
      .join('\n')
    return {
      data,
      text:
        info.linkStatus === 'outside' ? `${text}\n[the link leads outside the allowed directories]` : text,
    }
  },
})
