import { constants, type Dirent } from 'node:fs'
import { type FileHandle, lstat, mkdir, open, readdir, readlink } from 'node:fs/promises'
import path from 'node:path'
import { FsError, isErrnoError, toFsError } from './errors.js'
import { isWithin, type SafePath } from './path-guard.js'

/**
 * Directories opened once, then used by descriptor: the defence against a directory inside a root
 * being swapped for a symbolic link between the path check and the operation (TOCTOU).
 *
 * Node has no `openat`/`renameat`/`mkdirat`, but Linux resolves `/proc/self/fd/<fd>/<name>` by
 * taking the directory the descriptor already holds and looking up `<name>` inside it: a swap of
 * any directory on the original path changes nothing. So a directory is opened component by
 * component from the root, each with O_NOFOLLOW (a symlink anywhere refuses the walk), and every
 * write, rename, link, mkdir and temporary file then names its target through that descriptor.
 * Elsewhere (no /proc) the plain path is used after the same checks: the race is narrowed, not
 * closed, and the README says so.
 */

const directoryFlags = constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | (constants.O_NOFOLLOW ?? 0)
const anchorsSupported = process.platform === 'linux'

/** A directory held open: {@link at} names an entry inside it, immune to swaps of its path. */
export interface AnchoredDirectory {
  /** The canonical path, for messages. */
  readonly path: string
  /** A path that reaches `name` inside this very directory (no `/` in `name`). */
  at(name: string): string
  /** The directory's entries, read through the held descriptor (types as the directory reports them). */
  list(): Promise<Dirent[]>
  /** fsync the directory (makes a rename durable); best effort. */
  sync(): Promise<void>
  close(): Promise<void>
}

function plain(directory: string): AnchoredDirectory {
  return {
    path: directory,
    at: (name) => path.join(directory, name),
    list: () => readdir(directory, { withFileTypes: true }),
    sync: async () => {
      const handle = await open(directory, constants.O_RDONLY).catch(() => undefined)
      await handle?.sync().catch(() => {})
      await handle?.close().catch(() => {})
    },
    close: async () => {},
  }
}

async function isLink(entry: string): Promise<boolean> {
  return (await lstat(entry).catch(() => undefined))?.isSymbolicLink() === true
}

function refusedComponent(error: unknown, at: string): FsError {
  if (isErrnoError(error) && (error.code === 'ELOOP' || error.code === 'EMLINK')) {
    return new FsError(
      'permission_denied',
      `A symbolic link is in the way (writes never follow links): ${at}`,
      {
        cause: error,
      },
    )
  }
  if (isErrnoError(error) && error.code === 'ENOTDIR') {
    return new FsError('not_a_directory', `Not a directory: ${at}`, { cause: error })
  }
  if (isErrnoError(error) && error.code === 'ENOENT') {
    return new FsError('not_found', `Directory does not exist: ${at}`, {
      hint: 'Create it first (create_directory).',
      cause: error,
    })
  }
  return toFsError(error, at) as FsError
}

/**
 * Opens `directory` (canonical, inside `target.root`) by walking from the root one component at a
 * time without following links, creating missing components when `create` is set (each mkdir is
 * itself anchored to its parent's descriptor). Close the result.
 *
 * @throws FsError `permission_denied` (a link in the way, or outside the root), `not_found`, `not_a_directory`.
 */
export async function anchorDirectory(
  target: SafePath,
  directory: string,
  options: { create?: boolean } = {},
): Promise<AnchoredDirectory> {
  const root = target.root
  if (!isWithin(root, directory)) {
    throw new FsError('permission_denied', `Outside the allowed directories: ${directory}`)
  }
  if (!anchorsSupported) {
    if (options.create)
      await mkdir(directory, { recursive: true }).catch((error) => {
        throw refusedComponent(error, directory)
      })
    target.guard.assertInside(directory, target.path)
    return plain(directory)
  }
  const components = path.relative(root, directory).split(path.sep).filter(Boolean)
  let handle: FileHandle
  try {
    handle = await open(root, directoryFlags)
  } catch (error) {
    throw refusedComponent(error, root)
  }
  let reached = root
  try {
    for (const component of components) {
      if (component === '..' || component === '.') {
        throw new FsError('permission_denied', `Refusing a relative component in ${directory}`)
      }
      reached = path.join(reached, component)
      const entry = `/proc/self/fd/${handle.fd}/${component}`
      let next: FileHandle
      try {
        next = await open(entry, directoryFlags)
      } catch (error) {
        // With O_DIRECTORY a link fails as ENOTDIR: tell a link in the way from a plain file.
        if (isErrnoError(error) && error.code === 'ENOTDIR' && (await isLink(entry))) {
          throw refusedComponent(Object.assign(new Error('a link'), { code: 'ELOOP' }), reached)
        }
        if (!(options.create && isErrnoError(error) && error.code === 'ENOENT'))
          throw refusedComponent(error, reached)
        await mkdir(entry).catch((reason: unknown) => {
          if (!(isErrnoError(reason) && reason.code === 'EEXIST')) throw refusedComponent(reason, reached)
        })
        next = await open(entry, directoryFlags).catch((reason: unknown) => {
          throw refusedComponent(reason, reached)
        })
      }
      await handle.close()
      handle = next
    }
    // Structurally inside already (every step was a real directory under the root); the kernel's
    // own name for it is checked as well, so a bind mount or rename cannot surprise us.
    const actual = (await readlink(`/proc/self/fd/${handle.fd}`)).replace(/ \(deleted\)$/, '')
    target.guard.assertInside(actual, target.path)
  } catch (error) {
    await handle.close().catch(() => {})
    throw error instanceof FsError ? error : toFsError(error, reached)
  }
  const held = handle
  return {
    path: directory,
    at: (name) => {
      if (name.includes('/') || name === '' || name === '.' || name === '..') {
        throw new FsError('invalid_argument', `Not a plain name: ${name}`)
      }
      return `/proc/self/fd/${held.fd}/${name}`
    },
    list: () => readdir(`/proc/self/fd/${held.fd}`, { withFileTypes: true }),
    sync: () => held.sync().catch(() => {}),
    close: () => held.close().catch(() => {}),
  }
}
