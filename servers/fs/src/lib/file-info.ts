import type { Stats } from 'node:fs'
import { lstat, realpath } from 'node:fs/promises'
import { toFsError } from './errors.js'
import type { SafePath } from './path-guard.js'

/** Metadata of one entry, from {@link getFileInfo}. */
export interface FileInfo {
  path: string
  type: 'file' | 'directory' | 'symlink' | 'other'
  /** Bytes; for a symbolic link, the length of the link itself. */
  size: number
  /** ISO time of creation, when the file system records it. */
  created: string | undefined
  modified: string
  accessed: string
  /** Permission bits in octal, e.g. `644` (`4755` with setuid). */
  permissions: string
  isSymbolicLink: boolean
  /** The link's canonical target when it is inside the allowed roots (never revealed otherwise). */
  linkTarget: string | undefined
  /** Where a symbolic link leads: inside the roots, outside them, or nowhere (dangling). */
  linkStatus: 'inside' | 'outside' | 'broken' | undefined
}

/**
 * Stats one entry without following a final symbolic link. Resolve the path with
 * `followFinalSymlink: false` to describe a link itself (otherwise the guard has already resolved it to its
 * target, which is then described).
 *
 * @throws FsError `not_found`, `permission_denied`.
 */
export async function getFileInfo(
  file: SafePath,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<FileInfo> {
  options.signal?.throwIfAborted()
  let info: Stats
  try {
    info = await lstat(file.path)
  } catch (error) {
    throw toFsError(error, file.path)
  }
  const isSymbolicLink = info.isSymbolicLink()
  let linkTarget: string | undefined
  let linkStatus: FileInfo['linkStatus']
  if (isSymbolicLink) {
    const target = await realpath(file.path).catch(() => undefined)
    if (target === undefined) linkStatus = 'broken'
    else if (file.guard.rootOf(target) !== undefined) {
      linkStatus = 'inside'
      linkTarget = target
    } else linkStatus = 'outside'
  }
  return {
    path: file.path,
    type: isSymbolicLink ? 'symlink' : info.isDirectory() ? 'directory' : info.isFile() ? 'file' : 'other',
    size: info.size,
    created: info.birthtimeMs > 0 ? info.birthtime.toISOString() : undefined,
    modified: info.mtime.toISOString(),
    accessed: info.atime.toISOString(),
    permissions: (info.mode & 0o7777).toString(8).padStart(3, '0'),
    isSymbolicLink,
    linkTarget,
    linkStatus,
  }
}
