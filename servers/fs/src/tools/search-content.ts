import { stat } from 'node:fs/promises'
import { budgetOutput, maxTokensArgument, openBudget, withMarker, z } from '@keel-mcp/core'
import { searchContent } from '../lib/index.js'
import {
  count,
  cursorArgument,
  defineTool,
  displayJoin,
  displayPath,
  flag,
  gitignoreArgument,
  globsArgument,
  guardOf,
  items,
  limits,
  pageSize,
  skippedNotice,
  skippedOf,
  skippedShape,
  withNotices,
} from './shared.js'

export const searchContentTool = defineTool({
  name: 'search_content',
  title: 'Search content',
  description: 'Text in files, like grep -rn (binaries skipped). File names: search_files.',
  input: {
    pattern: z.string().describe('Text, or JS regex if regex'),
    path: z.string().default('.').describe('Path'),
    regex: flag('Regex'),
    case_sensitive: z.boolean().default(true).describe('Case sensitive'),
    include: globsArgument('Globs'),
    exclude: globsArgument('Exclude'),
    gitignore: gitignoreArgument,
    context: count(0).max(20).optional().describe('Lines around matches'),
    max_matches: pageSize(500, 100).describe('Max matches'),
    cursor: cursorArgument,
    max_tokens: maxTokensArgument,
  },
  output: {
    matches: items(),
    filesSearched: z.number().int(),
    nextCursor: z.string().optional(),
    skipped: skippedShape,
    ...budgetOutput,
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  // A slow query or a search of a large tree can run as an MCP task: the client polls for it.
  taskSupport: 'optional',
  async run(args, context) {
    const budget = openBudget('search_content', args, { upstream: true })
    const guard = await guardOf(context)
    const root = await guard.resolveSafe(args.path)
    const result = await searchContent(root, args.pattern, {
      regex: args.regex ?? false,
      caseSensitive: args.case_sensitive,
      include: args.include,
      exclude: args.exclude,
      respectGitignore: args.gitignore,
      contextBefore: args.context ?? 0,
      contextAfter: args.context ?? 0,
      maxMatches: args.max_matches,
      maxBytes: limits.matchBytes,
      cursor: budget.start.upstream,
      signal: context.signal,
      fileSystem: context.deps.walkFileSystem,
    })
    // Walk results are relative to the directory searched; a file searched on its own is reported by name.
    const base = displayPath(guard, root.path)
    const searchedFile = (await stat(root.path)).isFile()
    const shown = (relative: string) => (searchedFile ? base : displayJoin(base, relative))
    const found = result.matches.map((match) => ({
      path: shown(match.path),
      line: match.line,
      text: match.text,
      ...(match.before.length ? { before: match.before } : {}),
      ...(match.after.length ? { after: match.after } : {}),
    }))
    // One item of the budget per match, with its context lines: a cut never splits a match.
    const page = budget.items(
      found,
      (match) => {
        const lines: string[] = []
        const first = match.line - (match.before?.length ?? 0)
        match.before?.forEach((line, offset) => {
          lines.push(`${match.path}-${first + offset}-${line}`)
        })
        lines.push(`${match.path}:${match.line}:${match.text}`)
        match.after?.forEach((line, offset) => {
          lines.push(`${match.path}-${match.line + 1 + offset}-${line}`)
        })
        return lines.join('\n')
      },
      { noun: 'matches' },
    )
    const matches = page.shown
    const text = page.lines.join((args.context ?? 0) > 0 ? '\n--\n' : '\n')
    const nextCursor = page.cut ? undefined : result.nextCursor
    const notices: string[] = []
    if (nextCursor) notices.push(`[${matches.length} matches on this page; more: cursor "${nextCursor}"]`)
    if (result.skipped.tooLarge) notices.push(`[skipped ${result.skipped.tooLarge} files over 10 MiB]`)
    if (result.longLinesTruncated)
      notices.push(
        `[${result.longLinesTruncated} lines longer than 10,000 characters were searched in their first 10,000 only]`,
      )
    if (result.scanLimited)
      notices.push('[the walk stopped at its entry limit: some files were not searched]')
    notices.push(skippedNotice(result.problems, base))
    const none = `No matches in ${result.filesSearched} file${result.filesSearched === 1 ? '' : 's'}${args.gitignore ? " (.gitignore'd files skipped)" : ''}.`
    return {
      data: {
        matches,
        filesSearched: result.filesSearched,
        ...(nextCursor ? { nextCursor } : {}),
        ...skippedOf(result.problems),
        ...(page.cut ? { budget: page.cut } : {}),
      },
      text: withNotices(withMarker(matches.length ? text : none, page.marker), ...notices),
    }
  },
})
