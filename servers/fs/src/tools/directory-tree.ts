import { budgetOutput, maxTokensArgument, openBudget, withMarker, z } from '@keel-mcp/core'
import { directoryTree } from '../lib/index.js'
import {
  count,
  cursorArgument,
  defineTool,
  displayPath,
  gitignoreArgument,
  globsArgument,
  guardOf,
  limits,
  pageSize,
  searchRoot,
  skippedNotice,
  withNotices,
} from './shared.js'

export const directoryTreeTool = defineTool({
  name: 'directory_tree',
  title: 'Directory tree',
  description: 'Recursive tree (name/ directory, name@ symlink).',
  input: {
    path: searchRoot,
    max_depth: count().optional().describe('1: no recursion'),
    exclude: globsArgument('Exclude'),
    gitignore: gitignoreArgument,
    max_entries: pageSize(5000, 500).describe('Max entries'),
    cursor: cursorArgument,
    max_tokens: maxTokensArgument,
  },
  // The tree itself is the text only: a structured copy would send it twice.
  output: { shown: z.number().int(), total: z.number().int(), truncated: z.boolean(), ...budgetOutput },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const { path, max_depth, exclude, gitignore, max_entries } = args
    // A cut continues in the same tree text (walked again), past the characters shown.
    const budget = openBudget('directory_tree', args)
    const guard = await guardOf(context)
    const root = await guard.resolveSafe(path)
    const tree = await directoryTree(root, {
      maxDepth: max_depth,
      exclude,
      respectGitignore: gitignore,
      maxEntries: max_entries,
      maxBytes: limits.treeBytes,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    const data = { shown: tree.shownEntries, total: tree.totalEntries, truncated: tree.truncated }
    const part = budget.text(tree.text)
    if (part.cut) return { data: { ...data, budget: part.cut }, text: withMarker(part.text, part.marker) }
    const notices: string[] = []
    if (tree.truncated) {
      const levels = tree.shownDepth
        ? `, ${tree.shownDepth} level${tree.shownDepth === 1 ? '' : 's'} complete`
        : ''
      notices.push(
        `[truncated: ${tree.shownEntries} of ${tree.totalEntries} entries shown${levels}. Narrow it: a subdirectory, max_depth, exclude, or a larger max_entries]`,
      )
    }
    if (tree.depthLimited) notices.push(`[max_depth ${max_depth} reached: deeper levels not listed]`)
    if (tree.scanLimited)
      notices.push('[the walk stopped at its entry limit: narrow the path or exclude more]')
    notices.push(skippedNotice(tree.problems, displayPath(guard, root.path)))
    return {
      data,
      text: withNotices(tree.text === '' ? '[empty directory]' : part.text, ...notices),
    }
  },
})
