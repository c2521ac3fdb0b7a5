import type { Dirent, Stats } from 'node:fs'
import path from 'node:path'
import { decodeCursor, encodeCursor, queryKey } from './cursor.js'
import { FsError, toFsError } from './errors.js'
import type { SafePath } from './path-guard.js'
import {
  assertDirectory,
  compareStrings,
  nodeFileSystem,
  ProblemLog,
  positiveInteger,
  type WalkFileSystem,
  type WalkProblems,
} from './walk.js'

// list_directory: one directory, sorted and paged, with sizes on request.

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
