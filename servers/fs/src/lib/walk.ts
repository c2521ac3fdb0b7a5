import type { Dirent, Stats } from 'node:fs'
import * as nativeFs from 'node:fs'
import { lstat, readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { type FSLike, fdir } from 'fdir'
import ignore from 'ignore'
import { decodeCursor, encodeCursor, queryKey } from './cursor.js'
import { FsError, isErrnoError, toFsError } from './errors.js'
import { compileGlobs } from './glob.js'
import type { SafePath } from './path-guard.js'

/**
 * The file system calls a walk makes. Defaults to `node:fs`; tests inject failures through it (a permission
 * error cannot be produced for real when the tests run as root).
 */
export interface WalkFileSystem {
  readdir(
    path: string,
    options: { withFileTypes: true },
    callback: (error: NodeJS.ErrnoException | null, entries: Dirent[]) => void,
  ): void
  readFile(path: string, callback: (error: NodeJS.ErrnoException | null, data: Buffer) => void): void
  lstat(path: string, callback: (error: NodeJS.ErrnoException | null, stats: Stats) => void): void
}

const nodeFileSystem: WalkFileSystem = {
  readdir: (target, options, callback) => nativeFs.readdir(target, options, callback),
  readFile: (target, callback) => nativeFs.readFile(target, callback),
  lstat: (target, callback) => nativeFs.lstat(target, callback),
}

/** One entry a walk had to skip. */
export interface WalkProblem {
  /** Relative to the walk root; directories end with `/`. */
  path: string
  /** The errno code, e.g. `EACCES` (unreadable) or `ENOENT` (vanished during the walk). */
  code: string
}

/** Entries skipped because they could not be read; a walk never fails for them. */
export interface WalkProblems {
  count: number
  /** The first few (at most 5). */
  samples: WalkProblem[]
}

/** Options shared by the walking functions. */
export interface WalkOptions {
  /** Globs (glob.ts) of entries to leave out, matched like `searchFiles` patterns; a matching directory is not entered. */
  exclude?: readonly string[] | undefined
  /** Honour `.gitignore` files (nested ones too, with git's precedence). Default true. `.git` is always skipped. */
  respectGitignore?: boolean | undefined
  /** Levels to descend: 1 = the root's own entries only. Default unlimited. */
  maxDepth?: number | undefined
  signal?: AbortSignal | undefined
  /** For tests and virtual file systems. */
  fileSystem?: WalkFileSystem | undefined
}

/** Most entries one walk collects before it stops (memory bound); results then say `scanLimited`. */
export const defaultScanLimit = 500_000
const maxSamples = 5
const maxGitignoreBytes = 1024 * 1024

/** Collects skipped entries during one walk or search. */
export class ProblemLog {
  count = 0
  samples: WalkProblem[] = []

  add(relativePath: string, error: unknown): void {
    this.count++
    if (this.samples.length < maxSamples) {
      this.samples.push({ path: relativePath, code: isErrnoError(error) ? error.code! : 'EUNKNOWN' })
    }
  }

  toJSON(): WalkProblems {
    return { count: this.count, samples: this.samples }
  }
}

interface IgnoreRules {
  /** Directory of the .gitignore, relative to the walk root (`''` or ending with `/`). */
  base: string
  /** Prepended to the path below `base`, for .gitignore files above the walk root. */
  prefix: string
  /**
   * Every pattern is a bare name (no `/` but a trailing one): git then matches it against the entry's name at
   * any depth, so testing the name alone gives the same answer, and ignore()'s cache serves repeated names.
   */
  byName: boolean
  matcher: ignore.Ignore
}

function compileRules(text: string, base: string, prefix: string): IgnoreRules {
  const byName = text.split(/\r?\n/).every((line) => {
    const pattern = line.trim()
    if (pattern === '' || pattern.startsWith('#')) return true
    return !pattern.replace(/^!/, '').replace(/\/+$/, '').includes('/')
  })
  return { base, prefix, byName, matcher: ignore({ ignoreCase }).add(text) }
}

interface CrawlOptions extends WalkOptions {
  /** Output filter on the relative path (directories without the trailing slash). */
  include?: ((relativePath: string, isDirectory: boolean) => boolean) | undefined
  includeDirectories: boolean
  scanLimit: number
}

interface CrawlResult {
  /** Relative paths with `/` separators; directories end with `/`. Unsorted. */
  paths: string[]
  /** Relative paths of symbolic links (listed, never followed). */
  symlinks: Set<string>
  problems: ProblemLog
  scanLimited: boolean
}

const ignoreCase = process.platform === 'darwin' || process.platform === 'win32'

function parentOf(relativeDirectory: string): string {
  const index = relativeDirectory.lastIndexOf('/', relativeDirectory.length - 2)
  return index === -1 ? '' : relativeDirectory.slice(0, index + 1)
}

/** The .gitignore rules that apply in one directory, shallowest first. */
interface IgnoreChain {
  rules: readonly IgnoreRules[]
  /**
   * Decisions by entry name (plus `/` for directories), when every rule file tests by name: then the answer is
   * the same anywhere in the subtree, and most names repeat (index.ts, package.json, node_modules/).
   */
  byName: Map<string, boolean> | undefined
}

const emptyChain: IgnoreChain = { rules: [], byName: undefined }
const maxCachedNames = 100_000

function extendChain(chain: IgnoreChain, rules: IgnoreRules): IgnoreChain {
  const all = [...chain.rules, rules]
  return { rules: all, byName: all.every((item) => item.byName) ? new Map() : undefined }
}

function isIgnored(chain: IgnoreChain, relativePath: string, name: string, isDirectory: boolean): boolean {
  const suffix = isDirectory ? '/' : ''
  const cache = chain.byName
  const key = cache ? name + suffix : ''
  if (cache) {
    const known = cache.get(key)
    if (known !== undefined) return known
  }
  let decision = false
  // Deeper .gitignore files take precedence; within one, ignore() applies "last matching rule wins".
  for (let index = chain.rules.length - 1; index >= 0; index--) {
    const rules = chain.rules[index]!
    const local = rules.byName ? name + suffix : rules.prefix + relativePath.slice(rules.base.length) + suffix
    let result: ignore.TestResult
    try {
      result = rules.matcher.test(local)
    } catch {
      continue // a name ignore() cannot express as a relative path: not ignored
    }
    if (result.ignored) {
      decision = true
      break
    }
    if (result.unignored) break
  }
  if (cache && cache.size < maxCachedNames) cache.set(key, decision)
  return decision
}

/** Builds an exclude matcher; a trailing `/` is dropped (directories match by name, not with a slash). */
export function globMatcher(
  patterns: readonly string[],
  options: { caseSensitive?: boolean | undefined } = {},
): ((relativePath: string) => boolean) | undefined {
  const cleaned = patterns.map((pattern) => normalizePattern(pattern).replace(/\/+$/, '')).filter(Boolean)
  if (cleaned.length === 0) return undefined
  // Linear-time matching (glob.ts): no pattern can block the event loop. A pattern without a slash
  // matches an entry's name, one with a slash its path from the root.
  const globOptions = { caseSensitive: options.caseSensitive !== false }
  const byName = cleaned.filter((pattern) => !pattern.includes('/'))
  const byPath = cleaned.filter((pattern) => pattern.includes('/'))
  const nameMatcher = byName.length ? compileGlobs(byName, globOptions) : undefined
  const pathMatcher = byPath.length ? compileGlobs(byPath, globOptions) : undefined
  return (relativePath) => {
    if (pathMatcher?.(relativePath)) return true
    if (!nameMatcher) return false
    const slash = relativePath.lastIndexOf('/')
    return nameMatcher(slash === -1 ? relativePath : relativePath.slice(slash + 1))
  }
}

function normalizePattern(pattern: string): string {
  if (typeof pattern !== 'string' || pattern.length === 0) {
    throw new FsError('invalid_argument', 'Glob patterns must be non-empty strings.')
  }
  if (pattern.startsWith('/')) {
    throw new FsError(
      'invalid_argument',
      `Glob patterns are relative to the directory searched: ${pattern}`,
      {
        hint: 'Drop the leading slash, or search from a different directory.',
      },
    )
  }
  return pattern.replace(/^(\.\/)+/, '')
}

async function assertDirectory(directory: SafePath): Promise<void> {
  let info: Stats
  try {
    info = await stat(directory.path)
  } catch (error) {
    throw toFsError(error, directory.path)
  }
  if (!info.isDirectory()) {
    throw new FsError('not_a_directory', `Not a directory: ${directory.path}`, {
      hint: 'Use get_file_info or read_text_file for files.',
    })
  }
}

/**
 * .gitignore files between the repository top (or the allowed root) and the walk root, as git would apply
 * them. If they ignore the walk root itself the user asked for it explicitly, so they are not applied.
 */
async function ancestorRules(root: SafePath): Promise<IgnoreRules[]> {
  if (root.path === root.root) return []
  const ancestors: string[] = []
  for (let current = path.dirname(root.path); ; current = path.dirname(current)) {
    ancestors.unshift(current)
    if (current === root.root || path.dirname(current) === current) break
  }
  let top = 0
  for (let index = ancestors.length - 1; index >= 0; index--) {
    if (await lstat(path.join(ancestors[index]!, '.git')).catch(() => undefined)) {
      top = index
      break
    }
  }
  if (await lstat(path.join(root.path, '.git')).catch(() => undefined)) return []
  const rules: IgnoreRules[] = []
  for (const directory of ancestors.slice(top)) {
    const file = path.join(directory, '.gitignore')
    const info = await lstat(file).catch(() => undefined)
    if (!info?.isFile() || info.size > maxGitignoreBytes) continue
    const text = await readFile(file, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    const prefix = `${path.relative(directory, root.path).split(path.sep).join('/')}/`
    rules.push(compileRules(text, '', prefix))
  }
  for (let index = rules.length - 1; index >= 0; index--) {
    const result = rules[index]!.matcher.test(rules[index]!.prefix)
    if (result.ignored) return []
    if (result.unignored) break
  }
  return rules
}

function isUnknownType(entry: Dirent): boolean {
  if (entry.isFile() || entry.isDirectory()) return false
  return !(
    entry.isSymbolicLink() ||
    entry.isFIFO() ||
    entry.isSocket() ||
    entry.isCharacterDevice() ||
    entry.isBlockDevice()
  )
}

/**
 * The walk engine: fdir drives the traversal (fast, concurrent, never follows symlinks: they are listed as
 * entries), and a wrapped `readdir` prunes each directory's entries (`.git`, excludes, .gitignore) before fdir
 * sees them, so ignored subtrees are never read. One `ignore` instance per .gitignore file, shared by its
 * whole subtree; no per-entry stat or realpath.
 */
async function crawl(root: SafePath, options: CrawlOptions): Promise<CrawlResult> {
  const { signal } = options
  signal?.throwIfAborted()
  await assertDirectory(root)
  const fileSystem = options.fileSystem ?? nodeFileSystem
  const respectGitignore = options.respectGitignore ?? true
  const exclude = globMatcher(options.exclude ?? [])
  const problems = new ProblemLog()
  const symlinks = new Set<string>()
  const rootPrefix = root.path.endsWith(path.sep) ? root.path : root.path + path.sep
  const baseRules = respectGitignore ? await ancestorRules(root) : []
  const baseChain = baseRules.reduce(extendChain, emptyChain)
  const chains = new Map<string, IgnoreChain>()
  let rootError: NodeJS.ErrnoException | undefined

  const filterEntries = (relativeDirectory: string, entries: Dirent[], chain: IgnoreChain) => {
    const kept: Dirent[] = []
    const hasRules = chain.rules.length > 0
    for (const entry of entries) {
      const name = entry.name
      if (name === '.git') continue
      // Built only when something needs it: most entries are tested by name alone.
      const relativePath = exclude || (hasRules && !chain.byName) ? relativeDirectory + name : ''
      if (exclude?.(relativePath)) continue
      if (hasRules && isIgnored(chain, relativePath, name, entry.isDirectory())) continue
      if (entry.isSymbolicLink()) symlinks.add(relativeDirectory + name)
      kept.push(entry)
    }
    return kept
  }

  const loadRules = (directory: string, relativeDirectory: string, done: (rules?: IgnoreRules) => void) => {
    fileSystem.readFile(`${directory}.gitignore`, (error, data) => {
      if (error) {
        problems.add(`${relativeDirectory}.gitignore`, error)
        done()
        return
      }
      if (data.length > maxGitignoreBytes) {
        done()
        return
      }
      done(compileRules(data.toString('utf8'), relativeDirectory, ''))
    })
  }

  const resolveUnknownTypes = (directory: string, entries: Dirent[], done: (entries: Dirent[]) => void) => {
    // Some file systems do not report entry types; lstat those few (never stat: links stay links).
    if (!entries.some(isUnknownType)) {
      done(entries)
      return
    }
    const unknown = entries.filter(isUnknownType)
    let pending = unknown.length
    const replaced = new Map<Dirent, Dirent>()
    for (const entry of unknown) {
      fileSystem.lstat(directory + entry.name, (error, info) => {
        if (!error) replaced.set(entry, direntFromStats(entry.name, info))
        if (--pending === 0) done(entries.map((item) => replaced.get(item) ?? item))
      })
    }
  }

  const wrappedReaddir = (
    directory: string,
    _options: unknown,
    callback: (error: NodeJS.ErrnoException | null, entries: Dirent[]) => void,
  ) => {
    const relativeDirectory = directory.length > rootPrefix.length ? directory.slice(rootPrefix.length) : ''
    fileSystem.readdir(directory, { withFileTypes: true }, (error, rawEntries) => {
      if (error) {
        // An unreadable or vanished directory is reported and skipped; the walk goes on.
        if (relativeDirectory === '') rootError = error
        else problems.add(relativeDirectory, error)
        callback(null, [])
        return
      }
      resolveUnknownTypes(directory, rawEntries, (entries) => {
        const inherited =
          relativeDirectory === '' ? baseChain : (chains.get(parentOf(relativeDirectory)) ?? baseChain)
        const hasGitignore =
          respectGitignore && entries.some((entry) => entry.name === '.gitignore' && entry.isFile())
        if (!hasGitignore) {
          chains.set(relativeDirectory, inherited)
          callback(null, filterEntries(relativeDirectory, entries, inherited))
          return
        }
        loadRules(directory, relativeDirectory, (rules) => {
          const chain = rules ? extendChain(inherited, rules) : inherited
          chains.set(relativeDirectory, chain)
          callback(null, filterEntries(relativeDirectory, entries, chain))
        })
      })
    })
  }

  const fileSystemForFdir = {
    ...nativeFs,
    readdir: wrappedReaddir,
  } as unknown as FSLike

  let builder = new fdir({ fs: fileSystemForFdir }).withRelativePaths().withMaxFiles(options.scanLimit + 1)
  if (options.includeDirectories) builder = builder.withDirs()
  if (options.maxDepth !== undefined) builder = builder.withMaxDepth(Math.max(0, options.maxDepth - 1))
  if (signal) builder = builder.withAbortSignal(signal)
  const include = options.include
  if (include) {
    builder = builder.filter((candidate, isDirectory) => {
      if (candidate === '.') return false
      return include(isDirectory ? candidate.slice(0, -1) : candidate, isDirectory)
    })
  }
  const found = (await builder.crawl(root.path).withPromise()) as string[]
  signal?.throwIfAborted()
  if (rootError) throw toFsError(rootError, root.path)

  const paths = found
  // fdir lists the root itself as '.' (first) when directories are included.
  const rootIndex = options.includeDirectories && !include ? paths.indexOf('.') : -1
  if (rootIndex !== -1) paths.splice(rootIndex, 1)
  const scanLimited = paths.length > options.scanLimit
  if (scanLimited) paths.length = options.scanLimit
  if (path.sep !== '/') {
    for (let index = 0; index < paths.length; index++) paths[index] = paths[index]!.split(path.sep).join('/')
  }
  return { paths, symlinks, problems, scanLimited }
}

function direntFromStats(name: string, info: Stats): Dirent {
  return {
    name,
    isFile: () => info.isFile(),
    isDirectory: () => info.isDirectory(),
    isSymbolicLink: () => info.isSymbolicLink(),
    isFIFO: () => info.isFIFO(),
    isSocket: () => info.isSocket(),
    isCharacterDevice: () => info.isCharacterDevice(),
    isBlockDevice: () => info.isBlockDevice(),
  } as Dirent
}

function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0
}

// ---------------------------------------------------------------------------------------------------------
// directoryTree

/** Options of {@link directoryTree}. */
export interface DirectoryTreeOptions extends WalkOptions {
  /** Most lines in the output. Default 500. */
  maxEntries?: number | undefined
  /** Most bytes in the output. Default 32 KiB. */
  maxBytes?: number | undefined
}

/** The result of {@link directoryTree}. */
export interface DirectoryTreeResult {
  /**
   * One line per entry, indented two spaces per level, sorted by name: `name/` for a directory, `name@` for a
   * symbolic link (not followed). A directory whose contents did not fit reads `name/ (+N entries)`.
   */
  text: string
  /** Entries found (after excludes and .gitignore, within maxDepth). */
  totalEntries: number
  shownEntries: number
  /** Not every entry found is shown. */
  truncated: boolean
  /** When truncated by depth: the number of levels shown in full. */
  shownDepth: number | undefined
  /** maxDepth stopped the walk: directories at the last level were not opened. */
  depthLimited: boolean
  /** The walk hit its memory bound ({@link defaultScanLimit}); narrow the walk. */
  scanLimited: boolean
  problems: WalkProblems
}

/**
 * A compact, bounded tree of `root`. When everything does not fit, it shows as many whole levels as fit and
 * annotates the directories whose contents were left out, so the model sees the overall shape first.
 */
export async function directoryTree(
  root: SafePath,
  options: DirectoryTreeOptions = {},
): Promise<DirectoryTreeResult> {
  const maxEntries = options.maxEntries ?? 500
  const maxBytes = options.maxBytes ?? 32 * 1024
  const crawled = await crawl(root, { ...options, includeDirectories: true, scanLimit: defaultScanLimit })
  // Default sort = UTF-16 code unit order, which keeps every directory's entries right after it (preorder).
  const paths = crawled.paths.sort()
  const count = paths.length
  // Per entry: depth, and the bytes of its line; the lines themselves are only built for what is shown.
  const depths = new Uint16Array(count)
  const lineBytes = new Uint32Array(count)
  let deepest = -1
  for (let index = 0; index < count; index++) {
    const entryPath = paths[index]!
    const end = entryPath.endsWith('/') ? entryPath.length - 1 : entryPath.length
    let depth = 0
    let slash = entryPath.indexOf('/')
    let lastSlash = -1
    while (slash !== -1 && slash < end) {
      depth++
      lastSlash = slash
      slash = entryPath.indexOf('/', slash + 1)
    }
    depths[index] = depth
    // indentation + name + marker + newline; names are mostly ASCII, so length is a fair first estimate.
    lineBytes[index] = depth * 2 + (end - lastSlash - 1) + 2
    if (depth > deepest) deepest = depth
  }
  const render = (index: number) => {
    const entryPath = paths[index]!
    const isDirectory = entryPath.endsWith('/')
    const bare = isDirectory ? entryPath.slice(0, -1) : entryPath
    const name = bare.slice(bare.lastIndexOf('/') + 1)
    const marker = isDirectory ? '/' : crawled.symlinks.has(bare) ? '@' : ''
    return `${'  '.repeat(depths[index]!)}${name}${marker}`
  }
  let depthLimited = false
  if (options.maxDepth !== undefined) {
    for (let index = 0; index < count && !depthLimited; index++) {
      depthLimited = depths[index] === options.maxDepth - 1 && paths[index]!.endsWith('/')
    }
  }
  const base = {
    totalEntries: count,
    depthLimited,
    scanLimited: crawled.scanLimited,
    problems: crawled.problems.toJSON(),
  }

  let estimatedBytes = 0
  for (let index = 0; index < count; index++) estimatedBytes += lineBytes[index]!
  if (count <= maxEntries && estimatedBytes <= maxBytes) {
    const lines = Array.from({ length: count }, (_, index) => render(index))
    const text = lines.join('\n')
    if (Buffer.byteLength(text) <= maxBytes) {
      return { ...base, text, shownEntries: count, truncated: false, shownDepth: undefined }
    }
  }

  // Cumulative cost of showing every level up to d; each directory at the cut gets an annotation (~16 bytes).
  const countByDepth = new Array<number>(deepest + 1).fill(0)
  const bytesByDepth = new Array<number>(deepest + 1).fill(0)
  const directoriesByDepth = new Array<number>(deepest + 1).fill(0)
  for (let index = 0; index < count; index++) {
    const depth = depths[index]!
    countByDepth[depth]!++
    bytesByDepth[depth]! += lineBytes[index]!
    if (paths[index]!.endsWith('/')) directoriesByDepth[depth]!++
  }
  let shownDepth = -1
  let levelCount = 0
  let levelBytes = 0
  for (let depth = 0; depth <= deepest; depth++) {
    levelCount += countByDepth[depth]!
    levelBytes += bytesByDepth[depth]!
    if (levelCount > maxEntries || levelBytes + directoriesByDepth[depth]! * 16 > maxBytes) break
    shownDepth = depth
  }

  const lines: string[] = []
  let usedBytes = 0
  let shown = 0
  if (shownDepth >= 0) {
    // Preorder: everything deeper than the cut belongs to the last directory seen at the cut depth.
    const hidden = new Map<number, number>()
    let cut = -1
    for (let index = 0; index < count; index++) {
      if (depths[index]! > shownDepth) {
        if (cut !== -1) hidden.set(cut, (hidden.get(cut) ?? 0) + 1)
      } else {
        cut = depths[index] === shownDepth && paths[index]!.endsWith('/') ? index : -1
      }
    }
    for (let index = 0; index < count; index++) {
      if (depths[index]! > shownDepth) continue
      const omitted = hidden.get(index)
      const line = omitted
        ? `${render(index)} (+${omitted} ${omitted === 1 ? 'entry' : 'entries'})`
        : render(index)
      const bytes = Buffer.byteLength(line) + 1
      if (usedBytes + bytes > maxBytes) break
      lines.push(line)
      usedBytes += bytes
      shown++
    }
    if (shown < countByDepth.slice(0, shownDepth + 1).reduce((sum, value) => sum + value, 0)) {
      lines.push(`… ${count - shown} more entries`)
    }
  } else {
    // Even the first level is too big: list it in order until the budget runs out.
    for (let index = 0; index < count; index++) {
      if (depths[index]! > 0) continue
      const line = render(index)
      const bytes = Buffer.byteLength(line) + 1
      if (shown >= maxEntries || usedBytes + bytes > maxBytes) break
      lines.push(line)
      usedBytes += bytes
      shown++
    }
    lines.push(`… ${count - shown} more entries`)
  }
  return {
    ...base,
    text: lines.join('\n'),
    shownEntries: shown,
    truncated: true,
    shownDepth: shownDepth >= 0 ? shownDepth + 1 : 0,
  }
}

// ---------------------------------------------------------------------------------------------------------
// searchFiles

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

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new FsError('invalid_argument', `${name} must be a positive integer.`)
  }
  return value
}

// ---------------------------------------------------------------------------------------------------------
// listDirectory

/** One entry of {@link listDirectory}. */
export interface DirectoryEntry {
  name: string
  type: 'file' | 'directory' | 'symlink' | 'other'
  /** Bytes (of the link itself for a symlink); present with `includeSizes` or when sorting by size/mtime. */
  size?: number
  /** ISO time of the last modification; present with `includeSizes` or size/mtime sorting. */
  modified?: string
}

/** Options of {@link listDirectory}. */
export interface ListDirectoryOptions {
  /** `name` (default, ascending), `size` (largest file first; directories and links count as 0) or `mtime` (newest first). */
  sortBy?: 'name' | 'size' | 'mtime' | undefined
  /** Add size and modification time (one lstat per entry). */
  includeSizes?: boolean | undefined
  cursor?: string | undefined
  /** Page size. Default 500. */
  limit?: number | undefined
  signal?: AbortSignal | undefined
  /** For tests and virtual file systems. */
  fileSystem?: WalkFileSystem | undefined
}

/** The result of {@link listDirectory}. */
export interface ListDirectoryResult {
  entries: DirectoryEntry[]
  /** Entries in the directory (every page). */
  total: number
  nextCursor: string | undefined
  /** Sum of file sizes on this page, with `includeSizes`. */
  totalSize: number | undefined
  /** Entries that vanished or could not be stat'ed. */
  problems: WalkProblems
}

const statConcurrency = 32

/**
 * Lists one directory (no .gitignore filtering, `.git` included: this is a plain listing), sorted and
 * paginated. Symbolic links are reported as such, never followed.
 *
 * @throws FsError `not_a_directory`, `not_found`, `permission_denied`, `invalid_argument` (cursor).
 */
export async function listDirectory(
  directory: SafePath,
  options: ListDirectoryOptions = {},
): Promise<ListDirectoryResult> {
  const { signal } = options
  const sortBy = options.sortBy ?? 'name'
  if (!['name', 'size', 'mtime'].includes(sortBy)) {
    throw new FsError('invalid_argument', 'sortBy must be one of name, size, mtime.')
  }
  const limit = positiveInteger(options.limit ?? 500, 'limit')
  const key = queryKey('listDirectory', directory.path, sortBy)
  const [offset] = decodeCursor(options.cursor, key, 1) as [number]
  signal?.throwIfAborted()
  await assertDirectory(directory)
  const fileSystem = options.fileSystem ?? nodeFileSystem
  let dirents: Dirent[]
  try {
    dirents = await new Promise<Dirent[]>((resolve, reject) =>
      fileSystem.readdir(directory.path, { withFileTypes: true }, (error, entries) =>
        error ? reject(error) : resolve(entries),
      ),
    )
  } catch (error) {
    throw toFsError(error, directory.path)
  }
  const problems = new ProblemLog()
  const needStats = options.includeSizes || sortBy !== 'name'
  let entries: DirectoryEntry[] = dirents.map((entry) => ({ name: entry.name, type: entryType(entry) }))
  entries.sort((left, right) => compareStrings(left.name, right.name))

  const statPage = async (page: DirectoryEntry[]) => {
    const vanished = new Set<DirectoryEntry>()
    let next = 0
    const worker = async () => {
      while (next < page.length) {
        signal?.throwIfAborted()
        const entry = page[next++]!
        try {
          const info = await new Promise<Stats>((resolve, reject) =>
            fileSystem.lstat(path.join(directory.path, entry.name), (error, stats) =>
              error ? reject(error) : resolve(stats),
            ),
          )
          entry.size = info.size
          entry.modified = info.mtime.toISOString()
          if (entry.type === 'other') entry.type = statsType(info)
        } catch (error) {
          problems.add(entry.name, error)
          vanished.add(entry)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(statConcurrency, page.length) }, worker))
    return vanished
  }

  if (sortBy !== 'name') {
    // Sorting by size or time needs every entry's stats before the page can be cut.
    const vanished = await statPage(entries)
    entries = entries.filter((entry) => !vanished.has(entry))
    const field =
      sortBy === 'size'
        ? // A directory's or link's own size says nothing about its contents: only files rank by size.
          (entry: DirectoryEntry) => (entry.type === 'file' ? entry.size! : 0)
        : (entry: DirectoryEntry) => Date.parse(entry.modified!)
    entries.sort((left, right) => field(right) - field(left) || compareStrings(left.name, right.name))
  }
  let page = entries.slice(offset, offset + limit)
  if (needStats && sortBy === 'name') {
    const vanished = await statPage(page)
    page = page.filter((entry) => !vanished.has(entry))
  }
  const next = offset + limit
  return {
    entries: page,
    total: entries.length,
    nextCursor: next < entries.length ? encodeCursor(key, [next]) : undefined,
    totalSize: options.includeSizes
      ? page.reduce((sum, entry) => sum + (entry.type === 'file' ? (entry.size ?? 0) : 0), 0)
      : undefined,
    problems: problems.toJSON(),
  }
}

function entryType(entry: Dirent): DirectoryEntry['type'] {
  if (entry.isSymbolicLink()) return 'symlink'
  if (entry.isDirectory()) return 'directory'
  if (entry.isFile()) return 'file'
  return 'other'
}

function statsType(info: Stats): DirectoryEntry['type'] {
  if (info.isSymbolicLink()) return 'symlink'
  if (info.isDirectory()) return 'directory'
  if (info.isFile()) return 'file'
  return 'other'
}
