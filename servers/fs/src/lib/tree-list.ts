import path from 'node:path'
import { anchorDirectory } from './anchor.js'
import { FsError } from './errors.js'
import type { SafePath } from './path-guard.js'

/** What an entry of a listed tree is; links are never followed, so a link is a `link`. */
export type EntryType = 'file' | 'directory' | 'link' | 'other'

/** The entries of one directory of a listed tree. */
export interface DirectoryGroup {
  /** The directory, relative to the tree's top (`''` for the top itself), `/`-separated. */
  directory: string
  entries: Array<{ name: string; type: EntryType }>
}

/** Entries a copy or delete walks at most: past it the operation is refused before it starts. */
export const defaultMaxTreeEntries = 100_000

/**
 * Lists a directory tree, directories in pre-order (a directory's group comes before its
 * subdirectories' groups). Every directory is opened component by component from its root without
 * following links (anchor.ts) and read through that descriptor: a directory swapped for a link to
 * the outside fails the walk instead of leading it out of the roots. Links are reported as links.
 *
 * @throws FsError `too_large` past `maxEntries`, and anything {@link anchorDirectory} throws.
 */
export async function listTree(
  top: SafePath,
  options: { maxEntries?: number; signal?: AbortSignal | undefined } = {},
): Promise<{ groups: DirectoryGroup[]; count: number }> {
  const maxEntries = options.maxEntries ?? defaultMaxTreeEntries
  const groups: DirectoryGroup[] = []
  const pending: string[] = ['']
  let count = 0
  while (pending.length > 0) {
    options.signal?.throwIfAborted()
    const relative = pending.pop() as string
    const anchored = await anchorDirectory(top, path.join(top.path, ...relative.split('/').filter(Boolean)))
    let listed: Awaited<ReturnType<typeof anchored.list>>
    try {
      listed = await anchored.list()
    } finally {
      await anchored.close()
    }
    const entries: DirectoryGroup['entries'] = []
    const subdirectories: string[] = []
    for (const entry of listed.sort((left, right) => (left.name < right.name ? -1 : 1))) {
      if (++count > maxEntries) {
        throw new FsError(
          'too_large',
          `More than ${maxEntries} entries under ${top.path}: refused before anything was changed.`,
          { hint: 'Work on a smaller part of the tree.' },
        )
      }
      const type: EntryType = entry.isSymbolicLink()
        ? 'link'
        : entry.isDirectory()
          ? 'directory'
          : entry.isFile()
            ? 'file'
            : 'other'
      entries.push({ name: entry.name, type })
      if (type === 'directory') subdirectories.push(relative ? `${relative}/${entry.name}` : entry.name)
    }
    groups.push({ directory: relative, entries })
    // Reversed so that the stack pops them in name order.
    pending.push(...subdirectories.reverse())
  }
  return { groups, count }
}

/** `top` joined with a `/`-separated relative path. */
export function joinRelative(top: string, relative: string): string {
  return relative ? path.join(top, ...relative.split('/')) : top
}
