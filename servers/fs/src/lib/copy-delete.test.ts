import { lstat, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, snapshot, useTempDirectories } from '../../test/temp-tree.js'
import { copyEntry } from './copy.js'
import { deleteEntry } from './delete.js'
import { PathGuard } from './path-guard.js'

const tempDirectory = useTempDirectories()

async function setup() {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    root: {
      'a.txt': 'alpha',
      tree: {
        'one.txt': 'one',
        sub: { 'two.txt': 'two', deeper: { 'three.txt': 'three' } },
        'inside-link': { symlink: '../a.txt' },
      },
    },
    outside: { 'secret.txt': 'secret', nested: { 'more.txt': 'more' } },
  })
  await symlink(path.join(outside, 'secret.txt'), path.join(root, 'tree', 'out-link'))
  const { guard } = await PathGuard.create([root])
  return { base, root, outside, guard }
}

describe('copyEntry', () => {
  it('copies a file, refuses an existing destination, and replaces it with overwrite', async () => {
    const { root, guard } = await setup()
    const plan = await copyEntry(
      await guard.resolveSafe('a.txt'),
      await guard.resolveSafe('b.txt', { forWrite: true }),
    )
    expect(plan).toMatchObject({ type: 'file', files: 1, bytes: 5, replaces: false })
    expect(await readFile(path.join(root, 'b.txt'), 'utf8')).toBe('alpha')
    await writeFile(path.join(root, 'b.txt'), 'other')
    await expect(
      copyEntry(await guard.resolveSafe('a.txt'), await guard.resolveSafe('b.txt', { forWrite: true })),
    ).rejects.toMatchObject({ code: 'conflict' })
    expect(await readFile(path.join(root, 'b.txt'), 'utf8')).toBe('other')
    const replaced = await copyEntry(
      await guard.resolveSafe('a.txt'),
      await guard.resolveSafe('b.txt', { forWrite: true }),
      { overwrite: true },
    )
    expect(replaced.replaces).toBe(true)
    expect(await readFile(path.join(root, 'b.txt'), 'utf8')).toBe('alpha')
  })

  it('copies a file larger than its 1 MiB buffer byte for byte, keeping its mode', async () => {
    const { root, guard } = await setup()
    const big = Buffer.alloc(3 * 1024 * 1024 + 17)
    for (let index = 0; index < big.length; index++) big[index] = (index * 31) % 251
    await writeFile(path.join(root, 'big.bin'), big, { mode: 0o640 })
    const plan = await copyEntry(
      await guard.resolveSafe('big.bin'),
      await guard.resolveSafe('big-copy.bin', { forWrite: true }),
    )
    expect(plan.bytes).toBe(big.length)
    expect((await readFile(path.join(root, 'big-copy.bin'))).equals(big)).toBe(true)
    expect((await lstat(path.join(root, 'big-copy.bin'))).mode & 0o777).toBe(0o640)
  })

  it('copies a tree, recreating inside links and leaving out links that lead outside', async () => {
    const { root, guard } = await setup()
    const plan = await copyEntry(
      await guard.resolveSafe('tree'),
      await guard.resolveSafe('copy', { forWrite: true }),
    )
    expect(plan).toMatchObject({
      type: 'directory',
      files: 3,
      directories: 3,
      links: 1,
      skipped: ['out-link'],
    })
    expect(await readFile(path.join(root, 'copy/sub/deeper/three.txt'), 'utf8')).toBe('three')
    expect(await readlink(path.join(root, 'copy/inside-link'))).toBe('../a.txt')
    await expect(lstat(path.join(root, 'copy/out-link'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('leaves out a relative link that would point outside from its new depth', async () => {
    const { root, guard } = await setup()
    await makeTree(root, { deep: { er: {} } })
    await symlink('../../a.txt', path.join(root, 'tree', 'sub', 'up'))
    const plan = await copyEntry(
      await guard.resolveSafe('tree/sub'),
      await guard.resolveSafe('deep/er/x', { forWrite: true }),
    )
    expect(plan.links).toBe(1)
    const escaping = await copyEntry(
      await guard.resolveSafe('tree'),
      await guard.resolveSafe('deep/er/y', { forWrite: true }),
    )
    // At deep/er/y both relative links (../a.txt, ../../a.txt) still name places inside the root.
    expect(escaping.skipped).toEqual(['out-link'])
    const top = await copyEntry(
      await guard.resolveSafe('tree/sub'),
      await guard.resolveSafe('z', { forWrite: true }),
    )
    // From z/, ../../a.txt leaves the root.
    expect(top.skipped).toEqual(['up'])
  })

  it('refuses copying a directory into itself and merging into an existing directory', async () => {
    const { guard } = await setup()
    await expect(
      copyEntry(await guard.resolveSafe('tree'), await guard.resolveSafe('tree/sub/x', { forWrite: true })),
    ).rejects.toMatchObject({ code: 'invalid_argument' })
    await expect(
      copyEntry(await guard.resolveSafe('tree'), await guard.resolveSafe('tree/sub', { forWrite: true }), {
        overwrite: true,
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument' })
  })

  it('fails, reading nothing outside, when a directory is swapped for a link to the outside after the plan', async () => {
    const { root, outside, guard } = await setup()
    const destination = await guard.resolveSafe('copy', { forWrite: true })
    await expect(
      copyEntry(await guard.resolveSafe('tree'), destination, {
        confirm: async () => {
          await rename(path.join(root, 'tree/sub'), path.join(root, 'moved-sub'))
          await symlink(path.join(outside, 'nested'), path.join(root, 'tree/sub'))
        },
      }),
    ).rejects.toMatchObject({ code: 'permission_denied' })
    const copied = await snapshot(path.join(root, 'copy'))
    expect(Object.keys(copied).some((name) => name.includes('more.txt'))).toBe(false)
  })
})

describe('deleteEntry', () => {
  it('deletes a file, and a link without touching its target', async () => {
    const { root, outside, guard } = await setup()
    expect(await deleteEntry(await guard.resolveSafe('a.txt', { followFinalSymlink: false }))).toMatchObject({
      type: 'file',
      paths: ['a.txt'],
    })
    await expect(lstat(path.join(root, 'a.txt'))).rejects.toMatchObject({ code: 'ENOENT' })
    await deleteEntry(await guard.resolveSafe('tree/out-link', { followFinalSymlink: false }))
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret')
  })

  it('refuses a non-empty directory without recursive, and lists the tree on a dry run', async () => {
    const { root, guard } = await setup()
    const target = await guard.resolveSafe('tree', { followFinalSymlink: false })
    await expect(deleteEntry(target)).rejects.toMatchObject({ code: 'conflict' })
    const before = await snapshot(root)
    const plan = await deleteEntry(target, { recursive: true, dryRun: true })
    expect(plan.paths).toEqual([
      'tree/',
      'tree/inside-link',
      'tree/one.txt',
      'tree/out-link',
      'tree/sub/',
      'tree/sub/deeper/',
      'tree/sub/two.txt',
      'tree/sub/deeper/three.txt',
    ])
    expect(plan).toMatchObject({ files: 3, directories: 3, links: 2 })
    expect(await snapshot(root)).toEqual(before)
  })

  it('deletes a tree recursively, never following its links, and refuses a root', async () => {
    const { root, outside, guard } = await setup()
    const outsideBefore = await snapshot(outside)
    await deleteEntry(await guard.resolveSafe('tree', { followFinalSymlink: false }), { recursive: true })
    await expect(lstat(path.join(root, 'tree'))).rejects.toMatchObject({ code: 'ENOENT' })
    expect(await snapshot(outside)).toEqual(outsideBefore)
    await expect(
      deleteEntry(await guard.resolveSafe('.', { followFinalSymlink: false }), { recursive: true }),
    ).rejects.toMatchObject({ code: 'permission_denied' })
  })

  it('deletes nothing outside when a planned directory is swapped for a link to the outside', async () => {
    const { root, outside, guard } = await setup()
    const outsideBefore = await snapshot(outside)
    await expect(
      deleteEntry(await guard.resolveSafe('tree', { followFinalSymlink: false }), {
        recursive: true,
        confirm: async () => {
          await rm(path.join(root, 'tree/sub'), { recursive: true })
          await symlink(path.join(outside, 'nested'), path.join(root, 'tree/sub'))
        },
      }),
    ).rejects.toMatchObject({ code: 'permission_denied' })
    expect(await snapshot(outside)).toEqual(outsideBefore)
  })

  it('deletes only what was planned: an entry added meanwhile keeps its directory', async () => {
    const { root, guard } = await setup()
    await expect(
      deleteEntry(await guard.resolveSafe('tree', { followFinalSymlink: false }), {
        recursive: true,
        confirm: async () => writeFile(path.join(root, 'tree/sub/new.txt'), 'new'),
      }),
    ).rejects.toMatchObject({ code: 'conflict' })
    expect(await readFile(path.join(root, 'tree/sub/new.txt'), 'utf8')).toBe('new')
  })
})
