import { chmod, stat, symlink } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, useTempDirectories } from '../../test/temp-tree.js'
import { getFileInfo } from './file-info.js'
import { PathGuard } from './path-guard.js'

const tempDirectory = useTempDirectories()

async function setup() {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    root: { 'a.txt': 'alpha', 'b.txt': 'beta', dir: {} },
    outside: { 'secret.txt': 'secret' },
  })
  await symlink(outside, path.join(root, 'out-link'))
  const { guard } = await PathGuard.create([root])
  return { root, outside, guard }
}

describe('getFileInfo', () => {
  it('describes a file', async () => {
    const { root, guard } = await setup()
    await chmod(path.join(root, 'a.txt'), 0o640)
    const info = await getFileInfo(await guard.resolveSafe('a.txt'))
    expect(info).toMatchObject({
      path: path.join(root, 'a.txt'),
      type: 'file',
      size: 5,
      permissions: '640',
      isSymbolicLink: false,
      linkTarget: undefined,
      linkStatus: undefined,
    })
    expect(new Date(info.modified).getTime()).toBe((await stat(path.join(root, 'a.txt'))).mtime.getTime())
    expect(info.accessed).toMatch(/^\d{4}-\d\d-\d\dT/)
  })

  it('describes a directory', async () => {
    const { guard } = await setup()
    expect(await getFileInfo(await guard.resolveSafe('dir'))).toMatchObject({ type: 'directory' })
  })

  it('shows the target of a link that stays inside the roots', async () => {
    const { root, guard } = await setup()
    await symlink('a.txt', path.join(root, 'in-link'))
    const info = await getFileInfo(await guard.resolveSafe('in-link', { followFinalSymlink: false }))
    expect(info).toMatchObject({
      type: 'symlink',
      isSymbolicLink: true,
      linkTarget: path.join(root, 'a.txt'),
      linkStatus: 'inside',
    })
  })

  it('never reveals the target of a link leading outside', async () => {
    const { outside, guard } = await setup()
    const info = await getFileInfo(await guard.resolveSafe('out-link', { followFinalSymlink: false }))
    expect(info).toMatchObject({ isSymbolicLink: true, linkTarget: undefined, linkStatus: 'outside' })
    expect(JSON.stringify(info)).not.toContain(outside)
  })

  it('reports a broken link', async () => {
    const { root, guard } = await setup()
    await symlink('nowhere', path.join(root, 'broken'))
    const info = await getFileInfo(await guard.resolveSafe('broken', { followFinalSymlink: false }))
    expect(info).toMatchObject({ isSymbolicLink: true, linkStatus: 'broken' })
  })

  it('prints special permission bits', async () => {
    const { root, guard } = await setup()
    await chmod(path.join(root, 'b.txt'), 0o4755)
    expect((await getFileInfo(await guard.resolveSafe('b.txt'))).permissions).toBe('4755')
  })
})
