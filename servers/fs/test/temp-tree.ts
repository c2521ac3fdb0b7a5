import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach } from 'vitest'

/**
 * Real temporary directories for the lib tests, removed after each test. `useTempDirectories()` must be called
 * at the top of a test file; it returns a function that makes a fresh canonical directory.
 */
export function useTempDirectories(): () => Promise<string> {
  const created: string[] = []
  afterEach(async () => {
    await Promise.all(created.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
  })
  return async () => {
    const directory = await realpath(await mkdtemp(path.join(tmpdir(), 'keel-fs-')))
    created.push(directory)
    return directory
  }
}

/** A tree description: a string is a file's content, an object a directory, `{ symlink }` a link. */
export type Tree = { [name: string]: string | Buffer | Tree | { symlink: string } }

/** Creates `tree` under `base`. */
export async function makeTree(base: string, tree: Tree): Promise<void> {
  await mkdir(base, { recursive: true })
  for (const [name, value] of Object.entries(tree)) {
    const target = path.join(base, name)
    if (typeof value === 'string' || Buffer.isBuffer(value)) {
      await mkdir(path.dirname(target), { recursive: true })
      await writeFile(target, value)
    } else if ('symlink' in value && typeof value.symlink === 'string') {
      await symlink(value.symlink, target)
    } else {
      await makeTree(target, value as Tree)
    }
  }
}

/** Every entry under `base` with its content (files) or marker, for "nothing changed" assertions. */
export async function snapshot(base: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {}
  const entries = await readdir(base, { recursive: true, withFileTypes: true })
  for (const entry of entries) {
    const full = path.join(entry.parentPath, entry.name)
    const relative = path.relative(base, full)
    if (entry.isFile()) result[relative] = (await readFile(full)).toString('base64')
    else if (entry.isSymbolicLink()) result[relative] = 'symlink'
    else result[relative] = entry.isDirectory() ? 'dir' : 'other'
  }
  return result
}
