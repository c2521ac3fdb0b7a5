import { constants, type Stats } from 'node:fs'
import { type FileHandle, lstat, mkdir, open, readlink, rename, rm, symlink } from 'node:fs/promises'
import path from 'node:path'
import { nodeCrypto } from '@keel-mcp/core'
import { type AnchoredDirectory, anchorDirectory } from './anchor.js'
import { FsError, isErrnoError, toFsError } from './errors.js'
import { canonicalPrefix } from './fs-ops.js'
import { isWithin, type SafePath } from './path-guard.js'
import { assertDescriptorInside } from './safe-io.js'
import { type DirectoryGroup, joinRelative, listTree } from './tree-list.js'

const noFollow = constants.O_NOFOLLOW ?? 0
const readFlags = constants.O_RDONLY | noFollow | (constants.O_NONBLOCK ?? 0)
const createFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | noFollow

/** What a copy does (before it runs) and did. */
export interface CopyPlan {
  type: 'file' | 'directory'
  files: number
  directories: number
  /** Links recreated as links (their targets stay inside the allowed directories). */
  links: number
  /** Entries left out, relative to the source: links leading out of the roots, devices, FIFOs, sockets. */
  skipped: string[]
  /** The destination exists and will be replaced (files only, with `overwrite`). */
  replaces: boolean
  bytes: number
}

/** Options of {@link copyEntry}. */
export interface CopyOptions {
  /** Replace an existing destination file. Directories are never merged. Default false. */
  overwrite?: boolean | undefined
  maxEntries?: number
  /** Called with the plan before anything is written; throw to stop. */
  confirm?: (plan: CopyPlan) => Promise<void>
  signal?: AbortSignal | undefined
}

/**
 * Copies a file, or a directory with everything in it. Resolve the source normally (its canonical
 * path is inside the roots) and the destination with `forWrite: true`. Every directory on both sides
 * is opened component by component without following links (anchor.ts) and every file is opened
 * with O_NOFOLLOW and re-checked by descriptor, so a link swapped in after the checks cannot lead
 * the copy out of the roots. A link inside a copied tree is recreated as a link only when its target,
 * read from its new place, stays inside the roots; otherwise it is left out and reported.
 *
 * @throws FsError `conflict`, `not_found`, `permission_denied`, `invalid_argument`, `too_large`.
 */
export async function copyEntry(
  source: SafePath,
  destination: SafePath,
  options: CopyOptions = {},
): Promise<CopyPlan> {
  const { signal } = options
  signal?.throwIfAborted()
  if (destination.path === destination.root) {
    throw new FsError(
      'permission_denied',
      `An allowed root directory itself cannot be replaced: ${destination.path}`,
    )
  }
  if (source.path === destination.path) {
    throw new FsError('invalid_argument', `Source and destination are the same: ${source.path}`)
  }
  const name = path.basename(destination.path)
  const to = await anchorDirectory(destination, path.dirname(destination.path)).catch((error: unknown) => {
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
  try {
    const info = await stat(source)
    const existing = await lstat(to.at(name)).catch(() => undefined)
    if (info.isDirectory()) {
      if (isWithin(source.path, destination.path)) {
        throw new FsError('invalid_argument', `Cannot copy a directory into itself: ${destination.path}`)
      }
      if (existing) {
        throw new FsError('conflict', `Destination already exists: ${destination.path}`, {
          hint: 'Directories are never merged: choose a new name, or delete_file the destination first.',
        })
      }
      const { plan, groups } = await planTree(source, destination, options)
      await options.confirm?.(plan)
      await copyTree(source, destination, to, name, groups, plan, signal)
      return plan
    }
    if (!info.isFile()) throw new FsError('not_a_file', `Not a regular file or directory: ${source.path}`)
    if (existing) {
      if (!options.overwrite) {
        throw new FsError('conflict', `Destination already exists: ${destination.path}`, {
          hint: 'Set overwrite to true to replace it, or choose another destination.',
        })
      }
      if (existing.isSymbolicLink())
        throw new FsError('permission_denied', `Refusing to replace a symbolic link: ${destination.path}`)
      if (!existing.isFile()) throw new FsError('not_a_file', `Is not a file: ${destination.path}`)
    }
    const plan: CopyPlan = {
      type: 'file',
      files: 1,
      directories: 0,
      links: 0,
      skipped: [],
      replaces: existing !== undefined,
      bytes: info.size,
    }
    await options.confirm?.(plan)
    const from = await anchorDirectory(source, path.dirname(source.path))
    try {
      plan.bytes = await copyFile(source, from, path.basename(source.path), to, name, {
        replace: existing !== undefined,
        sync: true,
        signal,
      })
    } finally {
      await from.close()
    }
    await to.sync()
    return plan
  } finally {
    await to.close()
  }
}

/** lstat of the source through its parent's descriptor (a root is a directory by construction). */
async function stat(source: SafePath): Promise<Stats> {
  if (source.path === source.root) return lstat(source.path)
  const parent = await anchorDirectory(source, path.dirname(source.path))
  try {
    return await lstat(parent.at(path.basename(source.path)))
  } catch (error) {
    throw toFsError(error, source.path)
  } finally {
    await parent.close()
  }
}

async function planTree(
  source: SafePath,
  destination: SafePath,
  options: CopyOptions,
): Promise<{ plan: CopyPlan; groups: DirectoryGroup[] }> {
  const { groups } = await listTree(source, { maxEntries: options.maxEntries, signal: options.signal })
  const plan: CopyPlan = {
    type: 'directory',
    files: 0,
    directories: 1,
    links: 0,
    skipped: [],
    replaces: false,
    bytes: 0,
  }
  for (const group of groups) {
    for (const entry of group.entries) {
      const relative = group.directory ? `${group.directory}/${entry.name}` : entry.name
      if (entry.type === 'directory') plan.directories++
      else if (entry.type === 'file') plan.files++
      else if (entry.type === 'link' && (await linkStaysInside(source, destination, relative))) plan.links++
      else plan.skipped.push(relative)
    }
  }
  return { plan, groups }
}

/** Whether the link at `relative` under the source, recreated under the destination, points inside the roots. */
async function linkStaysInside(source: SafePath, destination: SafePath, relative: string): Promise<boolean> {
  const parent = await anchorDirectory(source, path.dirname(joinRelative(source.path, relative)))
  try {
    const target = await readlink(parent.at(path.basename(relative)))
    const newDirectory = path.dirname(joinRelative(destination.path, relative))
    return destination.guard.rootOf(await canonicalPrefix(path.resolve(newDirectory, target))) !== undefined
  } finally {
    await parent.close()
  }
}

async function copyTree(
  source: SafePath,
  destination: SafePath,
  to: AnchoredDirectory,
  name: string,
  groups: DirectoryGroup[],
  plan: CopyPlan,
  signal: AbortSignal | undefined,
): Promise<void> {
  try {
    await mkdir(to.at(name))
  } catch (error) {
    throw toFsError(error, destination.path)
  }
  const skipped = new Set(plan.skipped)
  let bytes = 0
  for (const group of groups) {
    signal?.throwIfAborted()
    // Groups come in pre-order: this directory was created while copying its parent's group.
    const from = await anchorDirectory(source, joinRelative(source.path, group.directory))
    let into: AnchoredDirectory | undefined
    try {
      into = await anchorDirectory(destination, joinRelative(destination.path, group.directory))
      for (const entry of group.entries) {
        const relative = group.directory ? `${group.directory}/${entry.name}` : entry.name
        const shown = joinRelative(destination.path, relative)
        if (skipped.has(relative)) continue
        try {
          if (entry.type === 'directory') await mkdir(into.at(entry.name))
          else if (entry.type === 'link')
            await symlink(await readlink(from.at(entry.name)), into.at(entry.name))
          else bytes += await copyFile(source, from, entry.name, into, entry.name, { signal })
        } catch (error) {
          throw toFsError(error, shown)
        }
      }
    } finally {
      await from.close()
      await into?.close()
    }
  }
  plan.bytes = bytes
}

/**
 * Copies one regular file from `from/name` to `into/target`: the source opened without following a
 * link and re-checked by descriptor; the destination created exclusively (never through a link), or,
 * with `replace`, written to a temporary file beside it and renamed over it.
 */
async function copyFile(
  source: SafePath,
  from: AnchoredDirectory,
  name: string,
  into: AnchoredDirectory,
  target: string,
  options: { replace?: boolean; sync?: boolean; signal?: AbortSignal | undefined },
): Promise<number> {
  const shown = path.join(from.path, name)
  const input = await open(from.at(name), readFlags).catch((error: unknown) => {
    throw toFsError(error, shown)
  })
  let output: FileHandle | undefined
  const temporary = options.replace
    ? `.${target}.${nodeCrypto().randomBytes(6).toString('hex')}.tmp`
    : undefined
  const written = into.at(temporary ?? target)
  try {
    const stats = await input.stat()
    if (!stats.isFile()) throw new FsError('not_a_file', `Not a regular file: ${shown}`)
    await assertDescriptorInside(input.fd, stats, from.at(name), { ...source, path: shown } as SafePath)
    output = await open(written, createFlags, stats.mode & 0o777).catch((error: unknown) => {
      if (isErrnoError(error) && error.code === 'EEXIST') {
        throw new FsError('conflict', `Already exists: ${path.join(into.path, target)}`)
      }
      throw error
    })
    const buffer = Buffer.allocUnsafe(Math.min(1 << 20, Math.max(stats.size, 1)))
    let total = 0
    for (;;) {
      options.signal?.throwIfAborted()
      const { bytesRead } = await input.read(buffer, 0, buffer.length, null)
      if (bytesRead === 0) break
      await output.write(buffer, 0, bytesRead)
      total += bytesRead
    }
    if (options.sync) await output.sync()
    await output.close()
    output = undefined
    if (temporary) await rename(written, into.at(target))
    return total
  } catch (error) {
    await output?.close().catch(() => {})
    if (output !== undefined || temporary) await rm(written, { force: true }).catch(() => {})
    throw error
  } finally {
    await input.close()
  }
}
