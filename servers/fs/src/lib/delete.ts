import type { Stats } from 'node:fs'
import { lstat, rmdir, unlink } from 'node:fs/promises'
import path from 'node:path'
import { type AnchoredDirectory, anchorDirectory } from './anchor.js'
import { FsError, isErrnoError, toFsError } from './errors.js'
import type { SafePath } from './path-guard.js'
import { type DirectoryGroup, type EntryType, joinRelative, listTree } from './tree-list.js'

/** What a delete removes (or, on a dry run, would remove). */
export interface DeletePlan {
  /** What the path itself is (a link is a link: its target is never touched). */
  type: EntryType
  /** Every path that goes, relative to the deleted path's parent, `/`-separated; directories end in `/`. */
  paths: string[]
  files: number
  directories: number
  links: number
}

/** Options of {@link deleteEntry}. */
export interface DeleteOptions {
  /** Delete a directory with everything in it. Without it only files, links and empty directories go. */
  recursive?: boolean
  /** Plan only: nothing is deleted. */
  dryRun?: boolean
  maxEntries?: number
  /** Called with the plan before anything is deleted; throw to stop (e.g. the user declined). */
  confirm?: (plan: DeletePlan) => Promise<void>
  signal?: AbortSignal | undefined
}

/**
 * Deletes a file, a symbolic link (the link, never its target) or a directory (empty, or with
 * `recursive` the whole tree). Resolve the path with `followFinalSymlink: false`. The tree is listed
 * first through descriptors opened component by component without following links (tree-list.ts),
 * so the plan never reaches outside the roots; then every entry is removed by name through its
 * directory's descriptor, children before parents. An entry that changes meanwhile fails the delete
 * (a new file makes its directory non-empty) rather than widening it. An allowed root itself is
 * never deleted.
 *
 * @throws FsError `permission_denied`, `not_found`, `conflict` (a non-empty directory without
 * `recursive`), `too_large` (past `maxEntries`).
 */
export async function deleteEntry(target: SafePath, options: DeleteOptions = {}): Promise<DeletePlan> {
  options.signal?.throwIfAborted()
  if (target.path === target.root) {
    throw new FsError(
      'permission_denied',
      `An allowed root directory itself cannot be deleted: ${target.path}`,
    )
  }
  const name = path.basename(target.path)
  const parent = await anchorDirectory(target, path.dirname(target.path))
  try {
    const entry = parent.at(name)
    const info = await lstatOrThrow(entry, target.path)
    const { plan, groups } = info.isDirectory()
      ? await planDirectory(target, name, options)
      : { plan: planSingle(info, name), groups: [] }
    if (options.dryRun) return plan
    await options.confirm?.(plan)
    options.signal?.throwIfAborted()
    try {
      if (plan.type === 'directory') {
        await removeContents(target, groups, options.signal)
        await rmdir(entry)
      } else {
        await unlink(entry)
      }
    } catch (error) {
      if (isErrnoError(error) && error.code === 'ENOTEMPTY') {
        throw new FsError('conflict', `Entries appeared while deleting; the rest is left: ${target.path}`, {
          cause: error,
          hint: 'List the directory again and retry.',
        })
      }
      throw toFsError(error, target.path)
    }
    await parent.sync()
    return plan
  } finally {
    await parent.close()
  }
}

function planSingle(info: Stats, name: string): DeletePlan {
  const type: EntryType = info.isSymbolicLink() ? 'link' : info.isFile() ? 'file' : 'other'
  return {
    type,
    paths: [name],
    files: type === 'file' || type === 'other' ? 1 : 0,
    directories: 0,
    links: type === 'link' ? 1 : 0,
  }
}

async function planDirectory(
  target: SafePath,
  name: string,
  options: DeleteOptions,
): Promise<{ plan: DeletePlan; groups: DirectoryGroup[] }> {
  const { groups, count } = await listTree(target, {
    maxEntries: options.maxEntries,
    signal: options.signal,
  })
  if (count > 0 && !options.recursive) {
    throw new FsError(
      'conflict',
      `Directory is not empty (${count} ${count === 1 ? 'entry' : 'entries'}): ${target.path}`,
      { hint: 'Set recursive to delete it with everything in it (dry_run first shows what would go).' },
    )
  }
  const plan: DeletePlan = { type: 'directory', paths: [`${name}/`], files: 0, directories: 1, links: 0 }
  for (const group of groups) {
    const prefix = group.directory ? `${name}/${group.directory}/` : `${name}/`
    for (const entry of group.entries) {
      plan.paths.push(prefix + entry.name + (entry.type === 'directory' ? '/' : ''))
      if (entry.type === 'directory') plan.directories++
      else if (entry.type === 'link') plan.links++
      else plan.files++
    }
  }
  return { plan, groups }
}

/**
 * Removes the planned entries (and only those: what was confirmed is what goes) by name through
 * their directory's descriptor, deepest directories first. A directory that gained entries since
 * the plan fails with ENOTEMPTY and is left with them.
 */
async function removeContents(
  target: SafePath,
  groups: DirectoryGroup[],
  signal: AbortSignal | undefined,
): Promise<void> {
  for (const group of [...groups].reverse()) {
    signal?.throwIfAborted()
    const directory: AnchoredDirectory = await anchorDirectory(
      target,
      joinRelative(target.path, group.directory),
    )
    try {
      for (const entry of group.entries) {
        if (entry.type === 'directory') await rmdir(directory.at(entry.name))
        else await unlink(directory.at(entry.name))
      }
    } finally {
      await directory.close()
    }
  }
}

async function lstatOrThrow(entry: string, shown: string): Promise<Stats> {
  try {
    return await lstat(entry)
  } catch (error) {
    throw toFsError(error, shown)
  }
}
