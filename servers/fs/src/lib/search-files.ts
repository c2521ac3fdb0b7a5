import { decodeCursor, encodeCursor, queryKey } from './cursor.js'
import type { SafePath } from './path-guard.js'
import {
  crawl,
  defaultScanLimit,
  globMatcher,
  type ProblemLog,
  positiveInteger,
  type WalkOptions,
  type WalkProblems,
} from './walk.js'

// search_files and the file list of search_content: a crawl filtered by globs.

/** Options of {@link searchFiles}. */
export interface SearchFilesOptions extends WalkOptions {
  /** Match case-sensitively. Default true. */
  caseSensitive?: boolean | undefined
  /** From a previous result's `nextCursor`, with the same root, pattern and options. */
  cursor?: string | undefined
  /** Page size. Default 200. */
  limit?: number | undefined
}

/** The result of {@link searchFiles}. */
export interface SearchFilesResult {
  /** Matches relative to the root, sorted; directories end with `/`. */
  paths: string[]
  /** All matches (every page). */
  total: number
  /** Pass as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  /** The walk hit its memory bound; matches may be missing. Narrow the root or the pattern. */
  scanLimited: boolean
  problems: WalkProblems
}

/**
 * Finds entries whose path relative to `root` matches the glob `pattern` (glob.ts; dotfiles included;
 * a pattern without `/` matches base names, so `*.ts` finds TypeScript files at any depth). Sorted, paginated.
 *
 * @throws FsError `invalid_argument` (bad pattern or cursor), `not_a_directory`, `not_found`.
 */
export async function searchFiles(
  root: SafePath,
  pattern: string,
  options: SearchFilesOptions = {},
): Promise<SearchFilesResult> {
  const limit = positiveInteger(options.limit ?? 200, 'limit')
  const matcher = globMatcher([pattern], { caseSensitive: options.caseSensitive })!
  const key = queryKey(
    'searchFiles',
    root.path,
    pattern,
    options.exclude ?? [],
    options.respectGitignore ?? true,
    options.maxDepth ?? null,
    options.caseSensitive ?? true,
  )
  const [offset] = decodeCursor(options.cursor, key, 1) as [number]
  const crawled = await crawl(root, {
    ...options,
    includeDirectories: true,
    include: (relativePath) => matcher(relativePath),
    scanLimit: defaultScanLimit,
  })
  const sorted = crawled.paths.sort()
  const page = sorted.slice(offset, offset + limit)
  const next = offset + page.length
  return {
    paths: page,
    total: sorted.length,
    nextCursor: next < sorted.length ? encodeCursor(key, [next]) : undefined,
    scanLimited: crawled.scanLimited,
    problems: crawled.problems.toJSON(),
  }
}

/**
 * The files under `root` a content search should read: sorted relative paths, after `.git`, excludes and
 * .gitignore, optionally narrowed by include globs. Symbolic links are left out (never followed).
 */
export async function listFilesForSearch(
  root: SafePath,
  options: WalkOptions & {
    include?: readonly string[] | undefined
    caseSensitiveGlobs?: boolean | undefined
  },
): Promise<{ files: string[]; scanLimited: boolean; problems: ProblemLog }> {
  const include = options.include?.length
    ? globMatcher(options.include, { caseSensitive: options.caseSensitiveGlobs })
    : undefined
  const crawled = await crawl(root, {
    ...options,
    includeDirectories: false,
    include: include ? (relativePath) => include(relativePath) : undefined,
    scanLimit: defaultScanLimit,
  })
  const { symlinks } = crawled
  const files = symlinks.size ? crawled.paths.filter((entry) => !symlinks.has(entry)) : crawled.paths
  return { files: files.sort(), scanLimited: crawled.scanLimited, problems: crawled.problems }
}
