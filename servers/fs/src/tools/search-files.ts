import { z } from '@keel-mcp/core'
import { searchFiles } from '../lib/index.js'
import {
  cursorArgument,
  defineTool,
  displayJoin,
  displayPath,
  gitignoreArgument,
  globsArgument,
  guardOf,
  nonEmpty,
  pageSize,
  searchRoot,
  skippedNotice,
  skippedOf,
  skippedShape,
  withNotices,
} from './shared.js'

export const searchFilesTool = defineTool({
  name: 'search_files',
  title: 'Search files',
  description:
    "Files and directories by glob ('*.ts' at any depth, 'src/**/*.ts' by path). Text: search_content.",
  input: {
    path: searchRoot,
    pattern: z.string().refine(nonEmpty, 'must not be empty').describe('Pattern'),
    exclude: globsArgument('Exclude'),
    gitignore: gitignoreArgument,
    case_sensitive: z.boolean().default(true).describe('Case sensitive'),
    limit: pageSize(500, 200).describe('Limit'),
    cursor: cursorArgument,
  },
  output: {
    paths: z.array(z.string()),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    skipped: skippedShape,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run({ path, pattern, exclude, gitignore, case_sensitive, limit, cursor }, context) {
    const guard = await guardOf(context)
    const root = await guard.resolveSafe(path)
    const result = await searchFiles(root, pattern, {
      exclude,
      respectGitignore: gitignore,
      caseSensitive: case_sensitive,
      limit,
      cursor,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    const base = displayPath(guard, root.path)
    const paths = result.paths.map((entry) => displayJoin(base, entry))
    const notices: string[] = []
    if (result.nextCursor)
      notices.push(`[${paths.length} of ${result.total} matches; more: cursor "${result.nextCursor}"]`)
    if (result.scanLimited) notices.push('[the walk stopped at its entry limit: some matches may be missing]')
    notices.push(skippedNotice(result.problems, base))
    const none = gitignore
      ? "No matches (.gitignore'd paths skipped; gitignore: false includes them)."
      : 'No matches.'
    return {
      data: {
        paths,
        total: result.total,
        ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}),
        ...skippedOf(result.problems),
      },
      text: withNotices(paths.length ? paths.join('\n') : none, ...notices),
    }
  },
})
