import { z } from '@keel-mcp/core'
import { listDirectory } from '../lib/index.js'
import {
  cursorArgument,
  defineTool,
  displayPath,
  flag,
  formatBytes,
  guardOf,
  items,
  pageSize,
  searchRoot,
  skippedNotice,
  skippedOf,
  skippedShape,
  withNotices,
} from './shared.js'

const markers = { directory: '/', symlink: '@', file: '', other: '' } as const

export const listDirectoryTool = defineTool({
  name: 'list_directory',
  title: 'List directory',
  description: "A directory's entries (name/ directory, name@ symlink). Recursive: directory_tree.",
  input: {
    path: searchRoot,
    sizes: flag('Sizes'),
    sort: z.enum(['name', 'size', 'mtime']).default('name').describe('size, mtime: descending'),
    limit: pageSize(1000, 500).describe('Limit'),
    cursor: cursorArgument,
  },
  output: {
    entries: items(),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    skipped: skippedShape,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run({ path, sizes = false, sort, limit, cursor }, context) {
    const guard = await guardOf(context)
    const directory = await guard.resolveSafe(path)
    const result = await listDirectory(directory, {
      sortBy: sort,
      includeSizes: sizes,
      limit,
      cursor,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    const base = displayPath(guard, directory.path)
    const lines = result.entries.map((entry) => {
      const name = entry.name + markers[entry.type]
      return sizes ? `${name}\t${entry.type === 'file' ? entry.size : '-'}\t${entry.modified ?? ''}` : name
    })
    const notices: string[] = []
    if (sizes && result.totalSize !== undefined)
      notices.push(`[files on this page: ${formatBytes(result.totalSize)}]`)
    if (result.nextCursor)
      notices.push(
        `[${result.entries.length} of ${result.total} entries; more: cursor "${result.nextCursor}"]`,
      )
    notices.push(skippedNotice(result.problems, base))
    return {
      data: {
        entries: result.entries,
        total: result.total,
        ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}),
        ...skippedOf(result.problems),
      },
      text: withNotices(lines.length ? lines.join('\n') : '[empty directory]', ...notices),
    }
  },
})
