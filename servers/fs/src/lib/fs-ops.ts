import { constants, type Stats } from 'node:fs'
import { copyFile, link, lstat, mkdir, open, realpath, rename, rmdir, stat, unlink } from 'node:fs/promises'
import path from 'node:path'
import { FsError, isErrnoError, toFsError } from './errors.js'
import { isWithin, type SafePath } from './path-guard.js'

/**
 * Creates a directory and any missing parents (inside the root the guard checked). Idempotent: an existing
 * directory is fine.
 *
 * @throws FsError `not_a_directory` when the path (or a parent) exists as something else.
 */
export async function createDirectory(
  directory: SafePath,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<{ created: boolean }> {
  options.signal?.throwIfAborted()
  const existing = await lstat(directory.path).catch(() => undefined)
  if (existing) {
    if (existing.isDirectory()) return { created: false }
    throw new FsError('not_a_directory', `Already exists and is not a directory: ${directory.path}`)
  }
  try {
    await mkdir(directory.path, { recursive: true })
  } catch (error) {
    if (isErrnoError(error) && error.code === 'EEXIST') {
      throw new FsError('not_a_directory', `A parent exists and is not a directory: ${directory.path}`, {
        cause: error,
      })
    }
    throw toFsError(error, directory.path)
  }
  // Re-check what was created: a parent swapped for a symlink after the guard's check would show up here.
  directory.guard.assertInside(await realpath(directory.path), directory.path)
  return { created: true }
}

/** Options of {@link moveFile}. */
export interface MoveOptions {
  /** Replace an existing destination (a file, or an empty directory when moving a directory). Default false. */
  overwrite?: boolean | undefined
  signal?: AbortSignal | undefined
}

/**
 * Moves or renames a file, directory or symbolic link. Resolve the source with `followFinalSymlink: false`
 * (a link is moved as a link, its target untouched) and the destination with `forWrite: true` (both are then
 * inside the roots). Without `overwrite` an existing destination fails with `conflict` and the check is
 * race-free: files are hard-linked into place (link() refuses an existing name) and directories are renamed
 * onto a freshly, exclusively created empty directory. Moves across file systems copy files (not directories).
 *
 * @throws FsError `not_found`, `conflict`, `invalid_argument`, `permission_denied`, `not_a_file`.
 */
export async function moveFile(
  source: SafePath,
  destination: SafePath,
  options: MoveOptions = {},
): Promise<{ overwritten: boolean }> {
  const overwrite = options.overwrite ?? false
  options.signal?.throwIfAborted()
  if (source.path === source.root || destination.path === destination.root) {
    throw new FsError('permission_denied', 'An allowed root directory itself cannot be moved or replaced.')
  }
  if (source.path === destination.path) {
    throw new FsError('invalid_argument', `Source and destination are the same: ${source.path}`)
  }
  const sourceInfo = await lstatOrThrow(source.path)
  if (sourceInfo.isDirectory() && isWithin(source.path, destination.path)) {
    throw new FsError('invalid_argument', `Cannot move a directory into itself: ${destination.path}`)
  }
  const parent = path.dirname(destination.path)
  const parentInfo = await stat(parent).catch(() => undefined)
  if (!parentInfo?.isDirectory()) {
    throw new FsError('not_found', `Destination directory does not exist: ${parent}`, {
      hint: 'Create it first (create_directory).',
    })
  }
  const existing = await lstat(destination.path).catch(() => undefined)
  if (existing) {
    if (existing.isDirectory() && !sourceInfo.isDirectory()) {
      // `mv a dir/` habits: say how to move into the directory instead of suggesting overwrite.
      throw new FsError('conflict', `Destination is an existing directory: ${destination.path}`, {
        hint: `To move the file into it, give the full new path: ${path.join(destination.path, path.basename(source.path))}`,
      })
    }
    if (!overwrite) throw conflict(destination.path)
    if (existing.isSymbolicLink()) {
      throw new FsError('permission_denied', `Refusing to replace a symbolic link: ${destination.path}`)
    }
    if (existing.isDirectory() !== sourceInfo.isDirectory()) {
      throw new FsError(
        existing.isDirectory() ? 'not_a_file' : 'not_a_directory',
        `Cannot replace a ${existing.isDirectory() ? 'directory' : 'file'} with a ${sourceInfo.isDirectory() ? 'directory' : 'file'}: ${destination.path}`,
      )
    }
  }

  try {
    if (overwrite) await renameAcrossDevices(source.path, destination.path, sourceInfo, false)
    else if (sourceInfo.isDirectory()) await moveDirectoryExclusive(source.path, destination.path)
    else await moveFileExclusive(source.path, destination.path, sourceInfo)
  } catch (error) {
    throw toFsError(error, destination.path)
  }
  return { overwritten: existing !== undefined }
}

async function moveDirectoryExclusive(from: string, to: string): Promise<void> {
  // mkdir is atomic and exclusive; rename() may then replace that empty directory (POSIX allows it), so a
  // directory that appeared at `to` in the meantime is never clobbered.
  try {
    await mkdir(to)
  } catch (error) {
    if (isErrnoError(error) && error.code === 'EEXIST') throw conflict(to)
    throw error
  }
  try {
    await rename(from, to)
  } catch (error) {
    await rmdir(to).catch(() => {})
    if (isErrnoError(error) && error.code === 'EXDEV') {
      throw new FsError('invalid_argument', `Cannot move a directory across file systems: ${from}`, {
        cause: error,
      })
    }
    if (isErrnoError(error) && error.code === 'ENOTEMPTY') throw conflict(to)
    throw error
  }
}

async function moveFileExclusive(from: string, to: string, info: Stats): Promise<void> {
  try {
    // link() never replaces an existing name: the race-free "create only if absent".
    await link(from, to)
  } catch (error) {
    if (!isErrnoError(error)) throw error
    if (error.code === 'EEXIST') throw conflict(to)
    if (error.code === 'EXDEV') {
      await renameAcrossDevices(from, to, info, true)
      return
    }
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK'].includes(error.code ?? '')) throw error
    // No hard links on this file system: reserve the name exclusively, then rename over the reservation.
    const placeholder = await open(
      to,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
      0o600,
    ).catch((reason: unknown) => {
      if (isErrnoError(reason) && reason.code === 'EEXIST') throw conflict(to)
      throw reason
    })
    await placeholder.close()
    await rename(from, to)
    return
  }
  await unlink(from)
}

async function renameAcrossDevices(from: string, to: string, info: Stats, exclusive: boolean): Promise<void> {
  try {
    await rename(from, to)
    return
  } catch (error) {
    if (!isErrnoError(error) || error.code !== 'EXDEV') {
      if (isErrnoError(error) && (error.code === 'ENOTEMPTY' || error.code === 'EEXIST')) throw conflict(to)
      throw error
    }
    if (!info.isFile()) {
      throw new FsError('invalid_argument', `Only regular files can be moved across file systems: ${from}`, {
        cause: error,
      })
    }
  }
  await copyFile(from, to, exclusive ? constants.COPYFILE_EXCL : 0)
  await unlink(from)
}

async function lstatOrThrow(target: string): Promise<Stats> {
  try {
    return await lstat(target)
  } catch (error) {
    throw toFsError(error, target)
  }
}

function conflict(target: string): FsError {
  return new FsError('conflict', `Destination already exists: ${target}`, {
    hint: 'Set overwrite to true to replace it, or choose another destination.',
  })
}
