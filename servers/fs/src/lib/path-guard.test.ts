import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, snapshot, useTempDirectories } from '../../test/temp-tree.js'
import { FsError } from './errors.js'
import { intersectRoots, isWithin, PathGuard, type ResolveOptions } from './path-guard.js'
import { writeFileAtomic } from './safe-io.js'

const tempDirectory = useTempDirectories()

/** base/allowed (the root), base/allowed_evil and base/outside, with links from inside to outside. */
async function setup() {
  const base = await tempDirectory()
  const allowed = path.join(base, 'allowed')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    allowed: {
      'file.txt': 'inside',
      dir: { 'nested.txt': 'nested' },
      'link-out': { symlink: path.join(outside, 'secret.txt') },
      'link-dir-out': { symlink: outside },
      'link-in': { symlink: 'file.txt' },
      'dangling-out': { symlink: path.join(outside, 'nope.txt') },
      'dangling-in': { symlink: 'nothing-yet.txt' },
      '%2e%2e': { 'decoy.txt': 'literal percent name' },
    },
    allowed_evil: { 'secret.txt': 'evil' },
    outside: { 'secret.txt': 'secret', sub: { 'deep.txt': 'deep' } },
  })
  // A link in the middle of a path: allowed/dir/mid -> outside/sub
  await symlink(path.join(outside, 'sub'), path.join(allowed, 'dir', 'mid'))
  const { guard, warnings } = await PathGuard.create([allowed])
  expect(warnings).toEqual([])
  return { base, allowed, outside, guard }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'ok'
  } catch (error) {
    if (error instanceof FsError) return error.code
    throw error
  }
}

describe('isWithin', () => {
  it.each([
    ['/allowed', '/allowed', true],
    ['/allowed', '/allowed/a/b', true],
    ['/allowed', '/allowed_evil', false],
    ['/allowed', '/allowed_evil/x', false],
    ['/allowed', '/allow', false],
    ['/', '/anything', true],
  ])('isWithin(%s, %s) is %s', (parent, child, expected) => {
    expect(isWithin(parent, child)).toBe(expected)
  })
})

describe('resolveSafe refuses escapes', () => {
  const cases: Array<
    [string, (context: { base: string; allowed: string; outside: string }) => string, ResolveOptions, string]
  > = [
    ['relative ..', () => '../outside/secret.txt', {}, 'permission_denied'],
    [
      '.. inside an absolute path',
      ({ allowed }) => `${allowed}/dir/../../outside/secret.txt`,
      {},
      'permission_denied',
    ],
    ['absolute path outside', ({ outside }) => `${outside}/secret.txt`, {}, 'permission_denied'],
    ['system file', () => '/etc/passwd', {}, 'permission_denied'],
    ['prefix trick /allowed_evil', ({ base }) => `${base}/allowed_evil/secret.txt`, {}, 'permission_denied'],
    ['symlink to an outside file', () => 'link-out', {}, 'permission_denied'],
    ['symlink to an outside file, for write', () => 'link-out', { forWrite: true }, 'permission_denied'],
    ['symlinked parent directory', () => 'link-dir-out/secret.txt', {}, 'permission_denied'],
    [
      'new file under a symlinked parent',
      () => 'link-dir-out/new.txt',
      { forWrite: true },
      'permission_denied',
    ],
    ['symlink in the middle', () => 'dir/mid/deep.txt', {}, 'permission_denied'],
    ['new file below a middle symlink', () => 'dir/mid/new/x.txt', { forWrite: true }, 'permission_denied'],
    ['dangling symlink leading outside', () => 'dangling-out', { forWrite: true }, 'permission_denied'],
    ['NUL byte', () => 'file.txt\0.png', {}, 'permission_denied'],
    ['home directory ~', () => '~/.ssh/id_rsa', {}, 'permission_denied'],
    ['bare ~', () => '~', {}, 'permission_denied'],
    ['empty path', () => '', {}, 'invalid_argument'],
    ['file URI outside', () => 'file:///etc/passwd', {}, 'permission_denied'],
    [
      'file URI with encoded .. segments',
      ({ allowed }) => `file://${allowed}/%2e%2e/outside/secret.txt`,
      {},
      'permission_denied',
    ],
    [
      'file URI with an encoded slash',
      ({ allowed }) => `file://${allowed}/..%2foutside`,
      {},
      'invalid_argument',
    ],
    ['non-local file URI', () => 'file://server/share/x', {}, 'invalid_argument'],
    ['percent-encoded .. is a literal name', () => '%2e%2e/%2e%2e/outside/secret.txt', {}, 'not_found'],
  ]
  it.each(cases)('%s', async (_name, input, options, expected) => {
    const context = await setup()
    expect(await codeOf(context.guard.resolveSafe(input(context), options))).toBe(expected)
  })

  it('names the allowed directories in a denial, never the outside target', async () => {
    const { guard, allowed, outside } = await setup()
    const error = await guard.resolveSafe('link-out').catch((reason: unknown) => reason)
    expect(error).toBeInstanceOf(FsError)
    expect((error as FsError).message).toContain(allowed)
    expect((error as FsError).message).not.toContain(outside)
    const absolute = await guard.resolveSafe('/etc/passwd').catch((reason: unknown) => reason)
    expect((absolute as FsError).message).toContain(`Allowed directories: ${allowed}`)
  })

  it('explains that ~ is not expanded, naming the allowed directories', async () => {
    const { guard, allowed } = await setup()
    await expect(guard.resolveSafe('~/notes.txt')).rejects.toThrow(/'~' is not expanded/)
    await expect(guard.resolveSafe('~/notes.txt')).rejects.toThrow(`Allowed directories: ${allowed}`)
    await expect(guard.resolveSafe('a\0b')).rejects.toThrow(`Allowed directories: ${allowed}`)
  })

  it('accepts a file URI inside the roots', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe(`file://${allowed}/dir/nested.txt`)
    expect(file.path).toBe(path.join(allowed, 'dir', 'nested.txt'))
  })
})

describe('resolveSafe accepts paths inside the roots', () => {
  it('resolves a relative path against the first root', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe('file.txt')
    expect(file).toMatchObject({ path: path.join(allowed, 'file.txt'), root: allowed, exists: true })
  })

  it('accepts an absolute path and normalises it', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe(`${allowed}/dir/../file.txt`)
    expect(file.path).toBe(path.join(allowed, 'file.txt'))
  })

  it('treats percent-encoding literally', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe('%2e%2e/decoy.txt')
    expect(file.path).toBe(path.join(allowed, '%2e%2e', 'decoy.txt'))
  })

  it('resolves a symlink whose target stays inside to the target', async () => {
    const { guard, allowed } = await setup()
    expect((await guard.resolveSafe('link-in')).path).toBe(path.join(allowed, 'file.txt'))
  })

  it('refuses to write through a symlink even when its target is inside', async () => {
    const { guard, allowed } = await setup()
    const error = await guard.resolveSafe('link-in', { forWrite: true }).catch((reason: unknown) => reason)
    expect(error).toMatchObject({ code: 'permission_denied', hint: expect.stringContaining(allowed) })
  })

  it('resolves a new file to its canonical parent plus name', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe('dir/new/deeper.txt', { forWrite: true })
    expect(file).toMatchObject({ path: path.join(allowed, 'dir', 'new', 'deeper.txt'), exists: false })
  })

  it('reports a missing file as not_found when it must exist', async () => {
    const { guard } = await setup()
    expect(await codeOf(guard.resolveSafe('missing.txt'))).toBe('not_found')
    expect(await codeOf(guard.resolveSafe('missing.txt', { mustExist: false }))).toBe('ok')
  })

  it('follows a dangling in-root symlink to where a write would land', async () => {
    const { guard, allowed } = await setup()
    const file = await guard.resolveSafe('dangling-in', { mustExist: false })
    expect(file).toMatchObject({ path: path.join(allowed, 'nothing-yet.txt'), exists: false })
  })

  it('describes a link itself with followFinalSymlink: false, even one pointing outside', async () => {
    const { guard, allowed } = await setup()
    const link = await guard.resolveSafe('link-out', { followFinalSymlink: false })
    expect(link).toMatchObject({ path: path.join(allowed, 'link-out'), isSymbolicLink: true, exists: true })
  })

  it('resolves a relative path starting with a root name inside that root', async () => {
    const { guard, allowed } = await setup()
    expect((await guard.resolveSafe('allowed/file.txt')).path).toBe(path.join(allowed, 'file.txt'))
  })

  it('prefers a real entry of the first root over a root name', async () => {
    const { guard, allowed } = await setup()
    await mkdir(path.join(allowed, 'allowed'))
    await writeFile(path.join(allowed, 'allowed', 'file.txt'), 'shadow')
    expect((await guard.resolveSafe('allowed/file.txt')).path).toBe(path.join(allowed, 'allowed', 'file.txt'))
  })

  it('accepts paths spelled through a symlinked root', async () => {
    const { base, allowed } = await setup()
    const alias = path.join(base, 'alias')
    await symlink(allowed, alias)
    const { guard } = await PathGuard.create([alias])
    expect(guard.roots).toEqual([allowed])
    expect((await guard.resolveSafe(`${alias}/file.txt`)).path).toBe(path.join(allowed, 'file.txt'))
  })
})

describe('writes never touch anything outside the roots', () => {
  it('leaves an outside sentinel directory unchanged after every escape attempt', async () => {
    const { guard, outside, base } = await setup()
    const before = await snapshot(outside)
    const beforeEvil = await snapshot(path.join(base, 'allowed_evil'))
    const attempts = [
      '../outside/secret.txt',
      `${outside}/secret.txt`,
      `${outside}/created.txt`,
      'link-out',
      'link-dir-out/secret.txt',
      'link-dir-out/created.txt',
      'dir/mid/deep.txt',
      'dir/mid/created.txt',
      'dangling-out',
      `${base}/allowed_evil/secret.txt`,
    ]
    for (const attempt of attempts) {
      const outcome = await guard
        .resolveSafe(attempt, { forWrite: true })
        .then((file) => writeFileAtomic(file, 'pwned'))
        .then(
          () => 'written',
          (error: unknown) => (error instanceof FsError ? error.code : String(error)),
        )
      expect(outcome, attempt).toBe('permission_denied')
    }
    expect(await snapshot(outside)).toEqual(before)
    expect(await snapshot(path.join(base, 'allowed_evil'))).toEqual(beforeEvil)
  })
})

describe('roots', () => {
  it('reports a missing root as a warning and drops it', async () => {
    const base = await tempDirectory()
    const { guard, warnings } = await PathGuard.create([path.join(base, 'missing'), base])
    expect(guard.roots).toEqual([base])
    expect(warnings).toEqual([{ root: path.join(base, 'missing'), reason: 'does not exist', dropped: true }])
  })

  it('reports a file given as a root', async () => {
    const base = await tempDirectory()
    await writeFile(path.join(base, 'plain.txt'), 'x')
    const { guard, warnings } = await PathGuard.create([path.join(base, 'plain.txt')])
    expect(guard.roots).toEqual([])
    expect(warnings[0]).toMatchObject({ reason: 'is not a directory', dropped: true })
  })

  it('refuses every path when no root is configured', async () => {
    const { guard } = await PathGuard.create([])
    await expect(guard.resolveSafe('/tmp')).rejects.toMatchObject({ code: 'permission_denied' })
    expect(guard.describeRoots()).toMatch(/No allowed directories/)
  })

  it('resolves relative roots against the working directory and canonicalises them', async () => {
    const { guard } = await PathGuard.create(['.'])
    expect(guard.roots).toEqual([await realpath(process.cwd())])
  })
})

describe('intersectRoots', () => {
  it.each([
    ['a client root inside a CLI root narrows to it', ['/a'], ['/a/b'], ['/a/b']],
    ['a client root outside every CLI root is dropped', ['/a'], ['/x'], []],
    ['a client root containing a CLI root keeps the CLI root', ['/a/b'], ['/a'], ['/a/b']],
    ['prefix tricks do not count as inside', ['/a'], ['/a_evil'], []],
    ['without CLI roots the client roots are used', [], ['/x', '/y'], ['/x', '/y']],
    ['nested client roots collapse to the outer one', ['/a'], ['/a/b/c', '/a/b'], ['/a/b']],
    ['several CLI roots', ['/a', '/b'], ['/b/c', '/a', '/z'], ['/b/c', '/a']],
    ['an empty client list leaves nothing', ['/a'], [], []],
  ])('%s', (_name, cli, client, expected) => {
    expect(intersectRoots(cli, client)).toEqual(expected)
  })

  it('narrow() can only narrow, and reports dropped client roots', async () => {
    const { base, allowed, guard } = await setup()
    const { guard: narrowed, warnings } = await guard.narrow([
      path.join(allowed, 'dir'),
      path.join(base, 'outside'),
    ])
    expect(narrowed.roots).toEqual([path.join(allowed, 'dir')])
    expect(warnings).toEqual([
      { root: path.join(base, 'outside'), reason: 'is outside every allowed directory', dropped: true },
    ])
    await expect(narrowed.resolveSafe(path.join(allowed, 'file.txt'))).rejects.toMatchObject({
      code: 'permission_denied',
    })
    // Narrowing again starts from the CLI roots: a wider client root cannot exceed them.
    const { guard: again } = await narrowed.narrow([base])
    expect(again.roots).toEqual([allowed])
  })

  it('narrow() never lets client roots stand in for configured directories that could not be used', async () => {
    const base = await tempDirectory()
    const { guard, warnings } = await PathGuard.create([path.join(base, 'missing')])
    expect(guard.roots).toEqual([])
    expect(guard.configured).toBe(true)
    expect(warnings).toMatchObject([{ reason: 'does not exist', dropped: true }])
    const { guard: narrowed } = await guard.narrow([base])
    expect(narrowed.roots).toEqual([])
  })

  it('narrow() uses the client roots as they are when no directories were configured', async () => {
    const base = await tempDirectory()
    const { guard } = await PathGuard.create([])
    expect(guard.configured).toBe(false)
    const { guard: narrowed } = await guard.narrow([base])
    expect(narrowed.roots).toEqual([base])
  })
})
