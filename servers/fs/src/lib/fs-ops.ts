import { constants, type Stats } from 'node:fs'
import {
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  realpath,
  rename,
  rmdir,
  unlink,
} from 'node:fs/promises'
import path from 'node:path'
import { type AnchoredDirectory, anchorDirectory } from './anchor.js'
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
  // Each missing component is created through its parent's descriptor (anchor.ts): a parent swapped
  // for a link to the outside after the guard's check cannot redirect the mkdir.
  const anchored = await anchorDirectory(directory, directory.path, { create: true })
  await anchored.close()
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
  // Both parents are opened once and every name is reached through their descriptors (anchor.ts):
  // a directory on either path swapped for a link to the outside cannot redirect the move.
  const from = await anchorDirectory(source, path.dirname(source.path))
  let to: AnchoredDirectory | undefined
  try {
    to = await anchorDirectory(destination, path.dirname(destination.path)).catch((error: unknown) => {
      if (error instanceof FsError && error.code === 'not_found') {
        throw new FsError(
          'not_found',
          `Destination directory does not exist: ${path.dirname(destination.path)}`,
          {
            hint: 'Create it first (create_directory).',
          },
        )
      }
      throw error
    })
    const sourceEntry = from.at(path.basename(source.path))
    const destinationEntry = to.at(path.basename(destination.path))
    const sourceInfo = await lstatOrThrow(sourceEntry, source.path)
    if (sourceInfo.isDirectory() && isWithin(source.path, destination.path)) {
      throw new FsError('invalid_argument', `Cannot move a directory into itself: ${destination.path}`)
    }
    // A relative link means something else at another depth: none may point outside the roots there.
    await assertLinksStayInside(source, destination, sourceEntry, sourceInfo, options.signal)
    const existing = await lstat(destinationEntry).catch(() => undefined)
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
      if (overwrite)
        await renameAcrossDevices(sourceEntry, destinationEntry, sourceInfo, false, destination.path)
      else if (sourceInfo.isDirectory())
        await moveDirectoryExclusive(sourceEntry, destinationEntry, destination.path)
      else await moveFileExclusive(sourceEntry, destinationEntry, sourceInfo, destination.path)
    } catch (error) {
      throw toFsError(error, destination.path)
    }
    await to.sync()
    return { overwritten: existing !== undefined }
  } finally {
    await from.close()
    await to?.close()
  }
}

/** The canonical form of `target` as far as it exists (links followed), plus the missing rest. */
export async function canonicalPrefix(target: string): Promise<string> {
  let existing = target
  const rest: string[] = []
  for (let depth = 0; depth < 4096; depth++) {
    try {
      return path.join(await realpath(existing), ...rest)
    } catch {
      const parent = path.dirname(existing)
      if (parent === existing) break
      rest.unshift(path.basename(existing))
      existing = parent
    }
  }
  return target
}

/** Entries a moved directory is checked through for links, at most: past it the move is refused. */
const maxLinkCheckEntries = 100_000

/**
 * Refuses a move that would leave a symbolic link pointing outside the allowed directories at its
 * new place: the moved entry itself when it is a link, and every link inside a moved directory
 * (a relative target such as `../../x` resolves from the link's own directory, which the move
 * changes). Absolute targets are checked too.
 */
async function assertLinksStayInside(
  source: SafePath,
  destination: SafePath,
  sourceEntry: string,
  info: Stats,
  signal: AbortSignal | undefined,
): Promise<void> {
  const check = async (entry: string, relativeInside: string) => {
    const target = await readlink(entry)
    const newDirectory = path.dirname(path.join(destination.path, relativeInside))
    const resolved = await canonicalPrefix(path.resolve(newDirectory, target))
    if (destination.guard.rootOf(resolved) === undefined) {
      // The link's target is not echoed: it may name a path outside the allowed directories.
      throw new FsError(
        'permission_denied',
        `Refusing to move: the symbolic link ${path.join(source.path, relativeInside)} would point outside the allowed directories at ${path.join(destination.path, relativeInside)}`,
        { hint: 'Links keep their target text; a relative target means something else at another depth.' },
      )
    }
  }
  if (info.isSymbolicLink()) return check(sourceEntry, '')
  if (!info.isDirectory()) return
  const pending: string[] = ['']
  let seen = 0
  while (pending.length > 0) {
    signal?.throwIfAborted()
    const relative = pending.pop() as string
    const entries = await readdir(relative ? path.join(sourceEntry, relative) : sourceEntry, {
      withFileTypes: true,
    })
    for (const entry of entries) {
      if (++seen > maxLinkCheckEntries) {
        throw new FsError(
          'too_large',
          `Refusing to move a directory of more than ${maxLinkCheckEntries} entries: ${source.path}`,
        )
      }
      const inside = path.join(relative, entry.name)
      if (entry.isSymbolicLink()) await check(path.join(sourceEntry, inside), inside)
      else if (entry.isDirectory()) pending.push(inside)
    }
  }
}

async function moveDirectoryExclusive(from: string, to: string, shown: string): Promise<void> {
  // mkdir is atomic and exclusive; rename() may then replace that empty directory (POSIX allows it), so a
  // directory that appeared at `to` in the meantime is never clobbered.
  try {
    await mkdir(to)
  } catch (error) {
    if (isErrnoError(error) && error.code === 'EEXIST') throw conflict(shown)
    throw error
  }
  try {
    await rename(from, to)
  } catch (error) {
    await rmdir(to).catch(() => {})
    if (isErrnoError(error) && error.code === 'EXDEV') {
      throw new FsError('invalid_argument', `Cannot move a directory across file systems: ${shown}`, {
        cause: error,
      })
    }
    if (isErrnoError(error) && error.code === 'ENOTEMPTY') throw conflict(shown)
    throw error
  }
}

async function moveFileExclusive(from: string, to: string, info: Stats, shown: string): Promise<void> {
  try {
    // link() never replaces an existing name: the race-free "create only if absent".
    await link(from, to)
  } catch (error) {
    if (!isErrnoError(error)) throw error
    if (error.code === 'EEXIST') throw conflict(shown)
    if (error.code === 'EXDEV') {
      await renameAcrossDevices(from, to, info, true, shown)
      return
    }
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK'].includes(error.code ?? '')) throw error
    // No hard links on this file system: reserve the name exclusively, then rename over the reservation.
    const placeholder = await open(
      to,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
      0o600,
    ).catch((reason: unknown) => {
      if (isErrnoError(reason) && reason.code === 'EEXIST') throw conflict(shown)
      throw reason
    })
    await placeholder.close()
    await rename(from, to)
    return
  }
  await unlink(from)
}

async function renameAcrossDevices(
  from: string,
  to: string,
  info: Stats,
  exclusive: boolean,
  shown: string,
): Promise<void> {
  try {
    await rename(from, to)
    return
  } catch (error) {
    if (!isErrnoError(error) || error.code !== 'EXDEV') {
      if (isErrnoError(error) && (error.code === 'ENOTEMPTY' || error.code === 'EEXIST'))
        throw conflict(shown)
      throw error
    }
    if (!info.isFile()) {
      throw new FsError('invalid_argument', `Only regular files can be moved across file systems: ${shown}`, {
        cause: error,
      })
    }
  }
  // Copy from a descriptor opened without following links (the name could have become a link
  // since the lstat), into a name created exclusively (or truncated in place when overwriting).
  const input = await open(from, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0))
  try {
    const output = await open(
      to,
      constants.O_WRONLY |
        constants.O_CREAT |
        (constants.O_NOFOLLOW ?? 0) |
        (exclusive ? constants.O_EXCL : constants.O_TRUNC),
      info.mode & 0o7777,
    ).catch((reason: unknown) => {
      if (isErrnoError(reason) && reason.code === 'EEXIST') throw conflict(shown)
      throw reason
    })
    try {
      const buffer = Buffer.allocUnsafe(1 << 20)
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, buffer.length, null)
        if (bytesRead === 0) break
        await output.write(buffer, 0, bytesRead)
      }
      await output.sync()
    } finally {
      await output.close()
    }
  } finally {
    await input.close()
  }
  await unlink(from)
}

async function lstatOrThrow(target: string, shown: string): Promise<Stats> {
  try {
    return await lstat(target)
  } catch (error) {
    throw toFsError(error, shown)
  }
}

function conflict(target: string): FsError {
  return new FsError('conflict', `Destination already exists: ${target}`, {
    hint: 'Set overwrite to true to replace it, or choose another destination.',
  })
}
