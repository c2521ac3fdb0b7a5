import { budgetOutput, maxTokensArgument, openBudget, withMarker, z } from '@keel-mcp/core'
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
  description: 'Entries (name/ directory, name@ symlink). Recursive: directory_tree.',
  input: {
    path: searchRoot,
    sizes: flag('Sizes'),
    sort: z.enum(['name', 'size', 'mtime']).default('name').describe('size, mtime: descending'),
    limit: pageSize(1000, 500).describe('Limit'),
    cursor: cursorArgument,
    max_tokens: maxTokensArgument,
  },
  output: {
    entries: items(),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    skipped: skippedShape,
    ...budgetOutput,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const { path, sizes = false, sort, limit } = args
    // A cut page continues from the same page of the listing, past the entries already shown.
    const budget = openBudget('list_directory', args, { upstream: true })
    const guard = await guardOf(context)
    const directory = await guard.resolveSafe(path)
    const result = await listDirectory(directory, {
      sortBy: sort,
      includeSizes: sizes,
      limit,
      cursor: budget.start.upstream,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    const base = displayPath(guard, directory.path)
    const page = budget.items(
      result.entries,
      (entry) => {
        const name = entry.name + markers[entry.type]
        return sizes ? `${name}\t${entry.type === 'file' ? entry.size : '-'}\t${entry.modified ?? ''}` : name
      },
      { noun: 'entries' },
    )
    const nextCursor = page.cut ? undefined : result.nextCursor
    const notices: string[] = []
    if (sizes && result.totalSize !== undefined)
      notices.push(`[files on this page: ${formatBytes(result.totalSize)}]`)
    if (nextCursor)
      notices.push(`[${result.entries.length} of ${result.total} entries; more: cursor "${nextCursor}"]`)
    notices.push(skippedNotice(result.problems, base))
    return {
      data: {
        entries: page.shown,
        total: result.total,
        ...(nextCursor ? { nextCursor } : {}),
        ...skippedOf(result.problems),
        ...(page.cut ? { budget: page.cut } : {}),
      },
      text: withNotices(
        withMarker(page.lines.length ? page.text : '[empty directory]', page.marker),
        ...notices,
      ),
    }
  },
})
