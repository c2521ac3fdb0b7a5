import { lstat, mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, snapshot, useTempDirectories } from '../../test/temp-tree.js'
import { createDirectory, moveFile } from './fs-ops.js'
import { PathGuard } from './path-guard.js'

const tempDirectory = useTempDirectories()

async function setup() {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    root: { 'a.txt': 'alpha', 'b.txt': 'beta', dir: { 'inner.txt': 'inner' }, empty: {} },
    outside: { 'secret.txt': 'secret' },
  })
  await symlink(outside, path.join(root, 'out-link'))
  const { guard } = await PathGuard.create([root])
  return { base, root, outside, guard }
}

describe('createDirectory', () => {
  it('creates nested directories and is idempotent', async () => {
    const { root, guard } = await setup()
    const target = await guard.resolveSafe('x/y/z', { forWrite: true })
    expect(await createDirectory(target)).toEqual({ created: true })
    expect((await stat(path.join(root, 'x/y/z'))).isDirectory()).toBe(true)
    expect(await createDirectory(await guard.resolveSafe('x/y/z', { forWrite: true }))).toEqual({
      created: false,
    })
  })

  it('refuses a path that exists as a file, or below one', async () => {
    const { guard } = await setup()
    await expect(createDirectory(await guard.resolveSafe('a.txt', { forWrite: true }))).rejects.toMatchObject(
      {
        code: 'not_a_directory',
      },
    )
    await expect(
      createDirectory(await guard.resolveSafe('a.txt/sub', { forWrite: true })),
    ).rejects.toMatchObject({
      code: 'not_a_directory',
    })
  })

  it('cannot create anything through a symlinked parent leading outside', async () => {
    const { outside, guard } = await setup()
    const before = await snapshot(outside)
    await expect(guard.resolveSafe('out-link/new/dir', { forWrite: true })).rejects.toMatchObject({
      code: 'permission_denied',
    })
    expect(await snapshot(outside)).toEqual(before)
  })
})

describe('moveFile', () => {
  const source = (guard: PathGuard, input: string) => guard.resolveSafe(input, { followFinalSymlink: false })
  const destination = (guard: PathGuard, input: string) => guard.resolveSafe(input, { forWrite: true })

  it('renames a file', async () => {
    const { root, guard } = await setup()
    expect(await moveFile(await source(guard, 'a.txt'), await destination(guard, 'dir/renamed.txt'))).toEqual(
      {
        overwritten: false,
      },
    )
    expect(await readFile(path.join(root, 'dir/renamed.txt'), 'utf8')).toBe('alpha')
    await expect(lstat(path.join(root, 'a.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('refuses to clobber an existing file without overwrite, leaving both untouched', async () => {
    const { root, guard } = await setup()
    const before = await snapshot(root)
    await expect(
      moveFile(await source(guard, 'a.txt'), await destination(guard, 'b.txt')),
    ).rejects.toMatchObject({
      code: 'conflict',
    })
    expect(await snapshot(root)).toEqual(before)
  })

  it('refuses a file onto an existing directory, even with overwrite, and says how to move into it', async () => {
    const { root, guard } = await setup()
    const before = await snapshot(root)
    for (const overwrite of [false, true]) {
      await expect(
        moveFile(await source(guard, 'a.txt'), await destination(guard, 'dir'), { overwrite }),
      ).rejects.toMatchObject({
        code: 'conflict',
        hint: `To move the file into it, give the full new path: ${path.join(root, 'dir', 'a.txt')}`,
      })
    }
    expect(await snapshot(root)).toEqual(before)
  })

  it('replaces an existing file with overwrite', async () => {
    const { root, guard } = await setup()
    const result = await moveFile(await source(guard, 'a.txt'), await destination(guard, 'b.txt'), {
      overwrite: true,
    })
    expect(result).toEqual({ overwritten: true })
    expect(await readFile(path.join(root, 'b.txt'), 'utf8')).toBe('alpha')
  })

  it('moves a directory, and refuses to clobber an existing directory', async () => {
    const { root, guard } = await setup()
    await expect(
      moveFile(await source(guard, 'dir'), await destination(guard, 'empty')),
    ).rejects.toMatchObject({
      code: 'conflict',
    })
    await moveFile(await source(guard, 'dir'), await destination(guard, 'moved'))
    expect(await readFile(path.join(root, 'moved/inner.txt'), 'utf8')).toBe('inner')
  })

  it('replaces an empty directory with overwrite, but never a non-empty one', async () => {
    const { root, guard } = await setup()
    await moveFile(await source(guard, 'dir'), await destination(guard, 'empty'), { overwrite: true })
    expect(await readFile(path.join(root, 'empty/inner.txt'), 'utf8')).toBe('inner')
    await makeTree(path.join(root, 'full'), { 'x.txt': 'x' })
    await makeTree(path.join(root, 'other'), { 'y.txt': 'y' })
    await expect(
      moveFile(await source(guard, 'other'), await destination(guard, 'full'), { overwrite: true }),
    ).rejects.toMatchObject({ code: 'conflict' })
  })

  it('refuses to move a directory into itself', async () => {
    const { guard } = await setup()
    await expect(
      moveFile(await source(guard, 'dir'), await destination(guard, 'dir/sub')),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
    })
  })

  it('refuses to move an allowed root', async () => {
    const { guard } = await setup()
    await expect(
      moveFile(await source(guard, '.'), await destination(guard, 'elsewhere')),
    ).rejects.toMatchObject({
      code: 'permission_denied',
    })
  })

  it('refuses to move a link whose target is outside the roots, leaving both untouched', async () => {
    const { root, outside, guard } = await setup()
    const before = await snapshot(outside)
    await expect(
      moveFile(await source(guard, 'out-link'), await destination(guard, 'dir/link-moved')),
    ).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await readlink(path.join(root, 'out-link'))).toBe(outside)
    expect(await snapshot(outside)).toEqual(before)
  })

  it('refuses to move a relative link to a depth where it would resolve outside', async () => {
    const { root, guard } = await setup()
    await mkdir(path.join(root, 'a/b'), { recursive: true })
    await writeFile(path.join(root, 'target.txt'), 'inside')
    await symlink('../../target.txt', path.join(root, 'a/b/rel'))
    // At the top, ../../target.txt leaves the root.
    await expect(
      moveFile(await source(guard, 'a/b/rel'), await destination(guard, 'rel')),
    ).rejects.toMatchObject({
      code: 'permission_denied',
    })
    // The same link inside a moved directory: the directory is refused too.
    await expect(moveFile(await source(guard, 'a/b'), await destination(guard, 'b'))).rejects.toMatchObject({
      code: 'permission_denied',
    })
    // Where it still resolves inside, it moves.
    await mkdir(path.join(root, 'c/d'), { recursive: true })
    await moveFile(await source(guard, 'a/b/rel'), await destination(guard, 'c/d/rel'))
    expect(await readlink(path.join(root, 'c/d/rel'))).toBe('../../target.txt')
  })

  it('cannot move anything to or from outside the roots', async () => {
    const { root, outside, guard } = await setup()
    const before = await snapshot(outside)
    await expect(destination(guard, 'out-link/stolen.txt')).rejects.toMatchObject({
      code: 'permission_denied',
    })
    await expect(source(guard, `${outside}/secret.txt`)).rejects.toMatchObject({ code: 'permission_denied' })
    await expect(source(guard, 'out-link/secret.txt')).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await snapshot(outside)).toEqual(before)
    expect(await readFile(path.join(root, 'a.txt'), 'utf8')).toBe('alpha')
  })

  it('says when the destination directory does not exist', async () => {
    const { guard } = await setup()
    await expect(
      moveFile(await source(guard, 'a.txt'), await destination(guard, 'no/such/dir.txt')),
    ).rejects.toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('Destination directory does not exist'),
    })
  })

  it('refuses a missing source', async () => {
    const { guard } = await setup()
    await expect(source(guard, 'missing.txt')).rejects.toMatchObject({ code: 'not_found' })
    const resolved = await guard.resolveSafe('missing.txt', { mustExist: false })
    await expect(moveFile(resolved, await destination(guard, 'x.txt'))).rejects.toMatchObject({
      code: 'not_found',
    })
  })
})
