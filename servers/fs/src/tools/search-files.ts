import { budgetOutput, maxTokensArgument, openBudget, withMarker, z } from '@keel-mcp/core'
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
  description: "Paths by glob ('*.ts' at any depth, 'src/**/*.ts' by path). Text: search_content.",
  input: {
    path: searchRoot,
    pattern: z.string().refine(nonEmpty, 'must not be empty').describe('Pattern'),
    exclude: globsArgument('Exclude'),
    gitignore: gitignoreArgument,
    case_sensitive: z.boolean().default(true).describe('Case sensitive'),
    limit: pageSize(500, 200).describe('Limit'),
    cursor: cursorArgument,
    max_tokens: maxTokensArgument,
  },
  output: {
    paths: z.array(z.string()),
    total: z.number().int(),
    nextCursor: z.string().optional(),
    skipped: skippedShape,
    ...budgetOutput,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const { path, pattern, exclude, gitignore, case_sensitive, limit } = args
    const budget = openBudget('search_files', args, { upstream: true })
    const guard = await guardOf(context)
    const root = await guard.resolveSafe(path)
    const result = await searchFiles(root, pattern, {
      exclude,
      respectGitignore: gitignore,
      caseSensitive: case_sensitive,
      limit,
      cursor: budget.start.upstream,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    const base = displayPath(guard, root.path)
    const page = budget.items(
      result.paths.map((entry) => displayJoin(base, entry)),
      (entry) => entry,
      { noun: 'paths' },
    )
    const paths = page.shown
    const nextCursor = page.cut ? undefined : result.nextCursor
    const notices: string[] = []
    if (nextCursor) notices.push(`[${paths.length} of ${result.total} matches; more: cursor "${nextCursor}"]`)
    if (result.scanLimited) notices.push('[the walk stopped at its entry limit: some matches may be missing]')
    notices.push(skippedNotice(result.problems, base))
    const none = gitignore
      ? "No matches (.gitignore'd paths skipped; gitignore: false includes them)."
      : 'No matches.'
    return {
      data: {
        paths,
        total: result.total,
        ...(nextCursor ? { nextCursor } : {}),
        ...skippedOf(result.problems),
        ...(page.cut ? { budget: page.cut } : {}),
      },
      text: withNotices(withMarker(paths.length ? page.text : none, page.marker), ...notices),
    }
  },
})
