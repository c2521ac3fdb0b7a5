import type { Dirent, Stats } from 'node:fs'
import * as nativeFs from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { type FSLike, fdir } from 'fdir'
import { FsError, isErrnoError, toFsError } from './errors.js'
import {
  ancestorRules,
  compileRules,
  emptyChain,
  extendChain,
  type IgnoreChain,
  type IgnoreRules,
  isIgnored,
  maxGitignoreBytes,
  parentOf,
} from './gitignore.js'
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

export const nodeFileSystem: WalkFileSystem = {
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

export interface CrawlOptions extends WalkOptions {
  /** Output filter on the relative path (directories without the trailing slash). */
  include?: ((relativePath: string, isDirectory: boolean) => boolean) | undefined
  includeDirectories: boolean
  scanLimit: number
}

export interface CrawlResult {
  /** Relative paths with `/` separators; directories end with `/`. Unsorted. */
  paths: string[]
  /** Relative paths of symbolic links (listed, never followed). */
  symlinks: Set<string>
  problems: ProblemLog
  scanLimited: boolean
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

export async function assertDirectory(directory: SafePath): Promise<void> {
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

export function isUnknownType(entry: Dirent): boolean {
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
export async function crawl(root: SafePath, options: CrawlOptions): Promise<CrawlResult> {
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

export function direntFromStats(name: string, info: Stats): Dirent {
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

export function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0
}

// ---------------------------------------------------------------------------------------------------------
// directoryTree

export function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new FsError('invalid_argument', `${name} must be a positive integer.`)
  }
  return value
}
