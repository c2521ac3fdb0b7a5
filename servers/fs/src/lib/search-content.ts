import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import v8 from 'node:v8'
import { decodeCursor, encodeCursor, queryKey } from './cursor.js'
import { FsError, toFsError } from './errors.js'
import { foldCase, linearRegex } from './glob.js'
import type { SafePath } from './path-guard.js'
import { assertDescriptorInsideSync, hasProcFileDescriptors, looksBinary } from './safe-io.js'
import { listFilesForSearch } from './search-files.js'
import { ProblemLog, type WalkOptions, type WalkProblems } from './walk.js'

/** Options of {@link searchContent}. */
export interface SearchContentOptions extends WalkOptions {
  /** Treat `query` as a JavaScript regular expression (no flags; per line). Default false: literal text. */
  regex?: boolean | undefined
  /** Default true. */
  caseSensitive?: boolean | undefined
  /** Only files matching these globs (same rules as `searchFiles` patterns). */
  include?: readonly string[] | undefined
  /** Lines of context before each match (at most 20). Default 0. */
  contextBefore?: number | undefined
  /** Lines of context after each match (at most 20). Default 0. */
  contextAfter?: number | undefined
  /** Page size: matching lines returned per call. Default 100. */
  maxMatches?: number | undefined
  /** Larger files are skipped (and counted). Default 10 MiB. */
  maxFileBytes?: number | undefined
  /**
   * Approximate cap on the text of one page (matched lines, context lines and paths, in UTF-16 units). The page
   * ends early, with a `nextCursor`, once the next match would exceed it; a page always holds at least one
   * match. Default unlimited (only `maxMatches` applies).
   */
  maxBytes?: number | undefined
  /** From a previous result's `nextCursor`, with the same query and options. */
  cursor?: string | undefined
}

/** One matching line. */
export interface ContentMatch {
  /** Relative to the search root (for a file root: its name). */
  path: string
  /** 1-based. */
  line: number
  /** 1-based column (UTF-16 units) of the first match on the line. */
  column: number
  /** The line without its line ending; very long lines are clipped around the match. */
  text: string
  before: string[]
  after: string[]
}

/** The result of {@link searchContent}. */
export interface SearchContentResult {
  matches: ContentMatch[]
  /** Pass as `cursor` for more matches; undefined when the search is complete. */
  nextCursor: string | undefined
  /** Files read (on this page). */
  filesSearched: number
  skipped: {
    /** Files that looked binary. */
    binary: number
    /** Files over `maxFileBytes`. */
    tooLarge: number
  }
  /** Regex mode inspects at most the first 10,000 characters of a line; lines cut that way. */
  longLinesTruncated: number
  /** The file walk hit its memory bound; some files were not searched. */
  scanLimited: boolean
  /** Unreadable or vanished files and directories (skipped). */
  problems: WalkProblems
}

/** Regex mode inspects at most this many characters of a line: a guard against pathological backtracking. */
export const maxRegexLineLength = 10_000
const maxContext = 20
/** Longest stretch of synchronous file reading before the search yields to the event loop. */
const sliceMilliseconds = 8
const maxShownLine = 500
const readFlags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)

let backtrackingFallbackEnabled = false

/**
 * Asks V8 to switch a regular expression to its linear-time engine when it backtracks excessively, so a
 * model-supplied pattern like `(a+)+$` cannot pin the CPU. Process-wide and idempotent; it only changes how
 * long such patterns take, never what they match. Patterns the linear engine cannot run (backreferences,
 * lookarounds) stay bounded only by {@link maxRegexLineLength}.
 */
export function enableRegexBacktrackingFallback(): void {
  if (backtrackingFallbackEnabled) return
  backtrackingFallbackEnabled = true
  try {
    v8.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks')
  } catch {
    // Unknown flag on some future V8: the line-length cap still applies.
  }
}

interface LineMatch {
  line: number
  column: number
  text: string
  before: string[]
  after: string[]
}

type FileOutcome =
  | { kind: 'matches'; matches: LineMatch[]; longLines: number }
  | { kind: 'binary' }
  | { kind: 'tooLarge' }
  | { kind: 'failed'; error: unknown }

interface Matcher {
  /** Quick whole-file rejection on the raw bytes, when possible. */
  mayMatch(data: Buffer): boolean
  /** Quick whole-file rejection on the decoded text, when possible. */
  mayMatchText(text: string): boolean
  /** Column (0-based) of the first match in `line`, or -1. */
  find(line: string): number
}

/** Texts longer than this skip the whole-text prefilter, so the per-line length cap keeps bounding regex work. */
const maxPrefilterLength = 1024 * 1024

function buildMatcher(query: string, regex: boolean, caseSensitive: boolean): Matcher {
  if (!regex && caseSensitive) {
    const needle = Buffer.from(query, 'utf8')
    return {
      mayMatch: (data) => data.includes(needle),
      mayMatchText: () => true,
      find: (line) => line.indexOf(query),
    }
  }
  const written = regex ? query : query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  try {
    new RegExp(written)
  } catch (error) {
    throw new FsError('invalid_argument', `Invalid regular expression: ${(error as Error).message}`)
  }
  // Only patterns V8's linear-time engine can run are accepted (as ripgrep's default engine does):
  // lookarounds and backreferences can take exponential time on a crafted line, and no time limit
  // can interrupt a regex running on the event loop. Case-insensitivity is folded into the pattern
  // because the linear engine has no `i` flag. Accepted patterns then run on the fast engine, which
  // V8 switches to the linear one when a match backtracks excessively.
  const source = caseSensitive ? written : foldCase(written)
  if (!linearRegex(source)) {
    throw new FsError(
      'invalid_argument',
      'Lookarounds ((?=…), (?!…), (?<=…), (?<!…)) and backreferences (\\1, \\k<name>) are not supported: they can take exponential time.',
      {
        hint: 'Rewrite without them (match the wider text and narrow with a second search), or search the literal text.',
      },
    )
  }
  const flags = ''
  const expression = new RegExp(source, flags)
  // One multiline test over the whole text rejects most files without splitting them into lines. It can only
  // over-approximate the per-line search, except with lookbehind or backreferences (which could see across a
  // line break) and with CR line endings (`$` would not match before \r): those go line by line.
  const prefilter = /\(\?<[=!]|\\[1-9]|\\k</.test(source) ? undefined : new RegExp(source, `${flags}m`)
  const asciiLiteral = !regex && /^[\x20-\x7e]*$/.test(query)
  const lowered = Buffer.from(query.toLowerCase(), 'latin1')
  const uppered = Buffer.from(query.toUpperCase(), 'latin1')
  return {
    // Case-insensitive ASCII literal: the first byte in either case must occur somewhere.
    mayMatch: (data) => !asciiLiteral || data.includes(lowered[0]!) || data.includes(uppered[0]!),
    mayMatchText: (text) =>
      !prefilter || text.length > maxPrefilterLength || text.includes('\r') || prefilter.test(text),
    find: (line) => {
      const match = expression.exec(line)
      return match ? match.index : -1
    },
  }
}

/**
 * Searches file contents under `root` (a directory, or a single file) for a literal string or a regular
 * expression, line by line, like `grep -rn`. Skips binary files, files over `maxFileBytes`, `.git`,
 * .gitignore'd paths and symbolic links. Results are in path order and paginated by cursor.
 *
 * @throws FsError `invalid_argument` (empty query, bad regex, bad cursor), `not_found`, `permission_denied`.
 */
export async function searchContent(
  root: SafePath,
  query: string,
  options: SearchContentOptions = {},
): Promise<SearchContentResult> {
  if (typeof query !== 'string' || query.length === 0) {
    throw new FsError('invalid_argument', 'The search query must not be empty.')
  }
  const { signal } = options
  const regex = options.regex ?? false
  const caseSensitive = options.caseSensitive ?? true
  const contextBefore = clampContext(options.contextBefore, 'contextBefore')
  const contextAfter = clampContext(options.contextAfter, 'contextAfter')
  const maxMatches = positiveInteger(options.maxMatches ?? 100, 'maxMatches')
  const maxFileBytes = positiveInteger(options.maxFileBytes ?? 10 * 1024 * 1024, 'maxFileBytes')
  const maxBytes =
    options.maxBytes === undefined ? Number.POSITIVE_INFINITY : positiveInteger(options.maxBytes, 'maxBytes')
  if (regex) enableRegexBacktrackingFallback()
  const matcher = buildMatcher(query, regex, caseSensitive)
  const key = queryKey(
    'searchContent',
    root.path,
    query,
    regex,
    caseSensitive,
    options.include ?? [],
    options.exclude ?? [],
    options.respectGitignore ?? true,
    options.maxDepth ?? null,
    maxFileBytes,
  )
  const [startFile, skipInFile] = decodeCursor(options.cursor, key, 2) as [number, number]
  signal?.throwIfAborted()

  let info: Stats
  try {
    info = await stat(root.path)
  } catch (error) {
    throw toFsError(error, root.path)
  }
  let directory: string
  let files: string[]
  let scanLimited = false
  let problems: ProblemLog
  if (info.isDirectory()) {
    const listed = await listFilesForSearch(root, { ...options, include: options.include })
    directory = root.path
    files = listed.files
    scanLimited = listed.scanLimited
    problems = listed.problems
  } else {
    directory = path.dirname(root.path)
    files = [path.basename(root.path)]
    problems = new ProblemLog()
  }

  const result: SearchContentResult = {
    matches: [],
    nextCursor: undefined,
    filesSearched: 0,
    skipped: { binary: 0, tooLarge: 0 },
    longLinesTruncated: 0,
    scanLimited,
    problems: { count: 0, samples: [] },
  }
  // Why synchronous reads: per small file, four thread-pool round trips (open, fstat, read, close) cost far
  // more than the syscalls themselves; measured on 100k files, sync reads were 4-5x faster than 16 concurrent
  // async ones. The loop yields to the event loop every few milliseconds, so requests, progress and aborts
  // still get their turn. Files are visited strictly in path order, so pages are stable.
  const scratch = { buffer: Buffer.allocUnsafe(64 * 1024) }
  const directoryPrefix = directory.endsWith(path.sep) ? directory : directory + path.sep
  let sliceStart = performance.now()
  let usedBytes = 0
  for (let index = startFile; index < files.length; index++) {
    if (performance.now() - sliceStart > sliceMilliseconds) {
      await new Promise((resolve) => setImmediate(resolve))
      sliceStart = performance.now()
    }
    signal?.throwIfAborted()
    const cap = (index === startFile ? skipInFile : 0) + maxMatches - result.matches.length + 1
    const outcome = searchFile(root, directoryPrefix + files[index]!, matcher, scratch, {
      regex,
      contextBefore,
      contextAfter,
      maxFileBytes,
      cap,
    })
    if (outcome.kind === 'binary') result.skipped.binary++
    else if (outcome.kind === 'tooLarge') result.skipped.tooLarge++
    else if (outcome.kind === 'failed') problems.add(files[index]!, outcome.error)
    if (outcome.kind !== 'failed') result.filesSearched++
    if (outcome.kind !== 'matches') continue
    result.longLinesTruncated += outcome.longLines
    const skip = index === startFile ? skipInFile : 0
    const available = outcome.matches.slice(skip)
    const file = files[index]!
    let taken = 0
    for (const match of available) {
      if (result.matches.length === maxMatches) break
      const size = matchSize(file, match)
      if (usedBytes + size > maxBytes && result.matches.length > 0) break
      usedBytes += size
      result.matches.push({ path: file, ...match })
      taken++
    }
    if (taken < available.length) {
      result.nextCursor = encodeCursor(key, [index, skip + taken])
      break
    }
    if (result.matches.length === maxMatches && index + 1 < files.length) {
      result.nextCursor = encodeCursor(key, [index + 1, 0])
      break
    }
  }
  result.problems = problems.toJSON()
  return result
}

interface FileSearchOptions {
  regex: boolean
  contextBefore: number
  contextAfter: number
  maxFileBytes: number
  /** Stop after this many matching lines (one more than needed tells whether more follow). */
  cap: number
}

function searchFile(
  root: SafePath,
  file: string,
  matcher: Matcher,
  scratch: { buffer: Buffer },
  options: FileSearchOptions,
): FileOutcome {
  let descriptor: number | undefined
  let data: Buffer
  try {
    // O_NOFOLLOW: a file swapped for a symlink after the walk is not followed (ELOOP, reported as a problem).
    // O_NONBLOCK: a FIFO swapped in fails the read (EAGAIN) instead of hanging.
    descriptor = openSync(file, readFlags)
    // A parent directory swapped for a symlink since the walk would lead outside: check what was opened.
    // (No fstat on Linux: the size comes from reading, which is one syscall fewer per file.)
    assertDescriptorInsideSync(
      descriptor,
      hasProcFileDescriptors ? undefined : fstatSync(descriptor),
      file,
      root,
    )
    let filled = 0
    for (;;) {
      if (filled === scratch.buffer.length) {
        if (filled > options.maxFileBytes) return { kind: 'tooLarge' }
        const grown = Buffer.allocUnsafe(Math.min(scratch.buffer.length * 2, options.maxFileBytes + 1))
        scratch.buffer.copy(grown, 0, 0, filled)
        scratch.buffer = grown
      }
      const wanted = scratch.buffer.length - filled
      const bytesRead = readSync(descriptor, scratch.buffer, filled, wanted, filled)
      filled += bytesRead
      // A regular file returns a short read only at its end.
      if (bytesRead < wanted) break
    }
    if (filled > options.maxFileBytes) return { kind: 'tooLarge' }
    // The scratch buffer is reused: nothing below keeps a reference to it (matches are decoded strings).
    data = scratch.buffer.subarray(0, filled)
  } catch (error) {
    return { kind: 'failed', error }
  } finally {
    if (descriptor !== undefined) closeSync(descriptor)
  }
  if (looksBinary(data, true)) return { kind: 'binary' }
  if (!matcher.mayMatch(data)) return { kind: 'matches', matches: [], longLines: 0 }
  const text = data.toString('utf8')
  if (!matcher.mayMatchText(text)) return { kind: 'matches', matches: [], longLines: 0 }
  return matchLines(text, matcher, options)
}

function matchLines(text: string, matcher: Matcher, options: FileSearchOptions): FileOutcome {
  const matches: LineMatch[] = []
  if (text.length === 0) return { kind: 'matches', matches, longLines: 0 }
  let longLines = 0
  let lineNumber = 1
  let start = 0
  while (start <= text.length && matches.length < options.cap) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    if (start === end && end === text.length && start > 0) break // no line after a final newline
    let line = text.slice(start, end)
    if (line.endsWith('\r')) line = line.slice(0, -1)
    let inspected = line
    if (options.regex && line.length > maxRegexLineLength) {
      inspected = line.slice(0, maxRegexLineLength)
      longLines++
    }
    const column = matcher.find(inspected)
    if (column !== -1) {
      matches.push({
        line: lineNumber,
        column: column + 1,
        text: clipAround(line, column),
        before: options.contextBefore ? linesBefore(text, start, options.contextBefore) : [],
        after: options.contextAfter ? linesAfter(text, end, options.contextAfter) : [],
      })
    }
    lineNumber++
    start = end + 1
  }
  return { kind: 'matches', matches, longLines }
}

/** The approximate text size of one match as the tool layer shows it (path, line, context, separators). */
function matchSize(file: string, match: LineMatch): number {
  let size = file.length + match.text.length + 16
  for (const line of match.before) size += file.length + line.length + 16
  for (const line of match.after) size += file.length + line.length + 16
  return size
}

function stripCarriageReturn(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line
}

function linesBefore(text: string, lineStart: number, count: number): string[] {
  const lines: string[] = []
  let end = lineStart - 1 // the newline ending the previous line
  while (lines.length < count && end >= 0) {
    const start = text.lastIndexOf('\n', end - 1) + 1
    lines.unshift(clipAround(stripCarriageReturn(text.slice(start, end)), 0))
    end = start - 1
  }
  return lines
}

function linesAfter(text: string, lineEnd: number, count: number): string[] {
  const lines: string[] = []
  let start = lineEnd + 1
  while (lines.length < count && start < text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    lines.push(clipAround(stripCarriageReturn(text.slice(start, end)), 0))
    start = end + 1
  }
  return lines
}

/** Keeps a long line readable: a window around the match, marked with ellipses. */
function clipAround(line: string, column: number): string {
  if (line.length <= maxShownLine) return line
  const from = Math.max(0, column - 100)
  const to = Math.min(line.length, from + maxShownLine)
  return `${from > 0 ? '…' : ''}${line.slice(from, to)}${to < line.length ? '…' : ''}`
}

function clampContext(value: number | undefined, name: string): number {
  if (value === undefined) return 0
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new FsError('invalid_argument', `${name} must be a non-negative integer.`)
  }
  return Math.min(value, maxContext)
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new FsError('invalid_argument', `${name} must be a positive integer.`)
  }
  return value
}
