import { execFileSync } from 'node:child_process'
import * as nodeFs from 'node:fs'
import { type Dirent, readdir as readdirCallback } from 'node:fs'
import { chmod, rm, symlink, utimes } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, type Tree, useTempDirectories } from '../../test/temp-tree.js'
import { listDirectory } from './list-directory.js'
import { PathGuard } from './path-guard.js'
import { searchFiles } from './search-files.js'
import { directoryTree } from './tree.js'
import type { WalkFileSystem } from './walk.js'

const tempDirectory = useTempDirectories()

async function setup(tree: Tree) {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  await makeTree(root, tree)
  const { guard } = await PathGuard.create([root])
  return { base, root, guard, rootPath: await guard.resolveSafe('.') }
}

/** A file system whose readdir fails with `code` for the directories `fails` names (absolute, with slash). */
function failingReaddir(fails: (directory: string) => string | undefined): WalkFileSystem {
  return {
    readdir(directory, options, callback) {
      const code = fails(directory)
      if (code) {
        callback(Object.assign(new Error(`${code}: simulated`), { code }), [] as Dirent[])
        return
      }
      readdirCallback(directory, options, callback)
    },
    readFile: (target, callback) => nodeFs.readFile(target, callback),
    lstat: (target, callback) => nodeFs.lstat(target, callback),
  }
}

const project: Tree = {
  '.gitignore': 'node_modules/\n*.log\n!keep.log\n/build\n',
  '.git': { HEAD: 'ref: refs/heads/main\n', objects: { pack: { 'x.pack': 'data' } } },
  'README.md': '# readme',
  'error.log': 'ignored',
  'keep.log': 'kept by negation',
  build: { 'out.js': 'ignored: anchored to the root' },
  node_modules: { lib: { 'index.js': 'ignored' } },
  src: {
    '.gitignore': 'generated/\n*.tmp\n!important.tmp\n',
    'index.ts': 'export {}',
    'scratch.tmp': 'ignored by nested',
    'important.tmp': 'kept by nested negation',
    generated: { 'types.ts': 'ignored' },
    build: { 'kept.ts': '/build only matches at the root' },
    deep: { 'debug.log': 'ignored by root *.log', 'util.ts': 'kept' },
  },
}

describe('directoryTree', () => {
  it('renders an indented, sorted tree with directory and symlink markers', async () => {
    const { root, rootPath } = await setup({ b: { 'x.txt': '' }, 'a.txt': '', c: {} })
    await symlink(path.join(root, 'a.txt'), path.join(root, 'link'))
    const result = await directoryTree(rootPath)
    expect(result.text).toBe(['a.txt', 'b/', '  x.txt', 'c/', 'link@'].join('\n'))
    expect(result).toMatchObject({ totalEntries: 5, shownEntries: 5, truncated: false, depthLimited: false })
  })

  it('honours nested .gitignore files like git and always skips .git', async () => {
    const { rootPath } = await setup(project)
    const result = await directoryTree(rootPath)
    expect(result.text.split('\n')).toEqual([
      '.gitignore',
      'README.md',
      'keep.log',
      'src/',
      '  .gitignore',
      '  build/',
      '    kept.ts',
      '  deep/',
      '    util.ts',
      '  important.tmp',
      '  index.ts',
    ])
  })

  it('agrees with git about which files are ignored', async () => {
    const { root, rootPath } = await setup(project)
    await rm(path.join(root, '.git'), { recursive: true })
    execFileSync('git', ['init', '-q'], { cwd: root })
    const fromGit = execFileSync('git', ['ls-files', '--others', '--exclude-standard'], {
      cwd: root,
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .sort()
    const ours = (await searchFiles(rootPath, '**', { limit: 1000 })).paths.filter(
      (entry) => !entry.endsWith('/'),
    )
    expect(ours).toEqual(fromGit)
  })

  it('shows everything but .git with respectGitignore: false', async () => {
    const { rootPath } = await setup(project)
    const result = await directoryTree(rootPath, { respectGitignore: false })
    expect(result.text).toContain('node_modules/')
    expect(result.text).toContain('error.log')
    expect(result.text).not.toContain('.git/')
    expect(result.text).not.toContain('x.pack')
  })

  it('applies .gitignore files above the walked directory', async () => {
    const { guard } = await setup(project)
    const result = await directoryTree(await guard.resolveSafe('src/deep'))
    expect(result.text).toBe('util.ts')
  })

  it('still lists a directory the user asked for even though it is ignored', async () => {
    const { guard } = await setup(project)
    const result = await directoryTree(await guard.resolveSafe('node_modules'))
    expect(result.text).toBe('lib/\n  index.js')
  })

  it('leaves out excluded globs, without entering excluded directories', async () => {
    const { rootPath } = await setup({
      src: { 'a.ts': '', 'a.test.ts': '' },
      dist: { 'a.js': '' },
      'notes.md': '',
    })
    const result = await directoryTree(rootPath, { exclude: ['dist/', '*.test.ts'] })
    expect(result.text).toBe('notes.md\nsrc/\n  a.ts')
  })

  it('stops at maxDepth and says so', async () => {
    const { rootPath } = await setup({ a: { b: { c: { 'd.txt': '' } } }, 'top.txt': '' })
    const result = await directoryTree(rootPath, { maxDepth: 2 })
    expect(result.text).toBe('a/\n  b/\ntop.txt')
    expect(result.depthLimited).toBe(true)
  })

  it('shows whole levels that fit and annotates what was left out', async () => {
    const tree: Tree = { 'top.txt': '' }
    for (const name of ['alpha', 'beta']) {
      tree[name] = Object.fromEntries(Array.from({ length: 30 }, (_, index) => [`file${index}.txt`, '']))
    }
    const { rootPath } = await setup(tree)
    const result = await directoryTree(rootPath, { maxEntries: 10 })
    expect(result.text).toBe('alpha/ (+30 entries)\nbeta/ (+30 entries)\ntop.txt')
    expect(result).toMatchObject({ truncated: true, totalEntries: 63, shownEntries: 3, shownDepth: 1 })
  })

  it('lists the first level partially when even that does not fit', async () => {
    const tree = Object.fromEntries(
      Array.from({ length: 50 }, (_, index) => [`f${String(index).padStart(2, '0')}`, '']),
    )
    const { rootPath } = await setup(tree)
    const result = await directoryTree(rootPath, { maxEntries: 5 })
    expect(result.text).toBe('f00\nf01\nf02\nf03\nf04\n… 45 more entries')
    expect(result).toMatchObject({ truncated: true, shownEntries: 5 })
  })

  it('respects the byte budget', async () => {
    const tree = Object.fromEntries(
      Array.from({ length: 100 }, (_, index) => [`${'x'.repeat(50)}${index}`, '']),
    )
    const { rootPath } = await setup(tree)
    const result = await directoryTree(rootPath, { maxBytes: 1000 })
    expect(Buffer.byteLength(result.text)).toBeLessThanOrEqual(1100)
    expect(result.truncated).toBe(true)
  })

  it('lists a symlink to an outside directory without following it', async () => {
    const { base, root, rootPath } = await setup({ 'inside.txt': '' })
    await makeTree(path.join(base, 'outside'), { 'secret.txt': 'secret' })
    await symlink(path.join(base, 'outside'), path.join(root, 'escape'))
    const result = await directoryTree(rootPath)
    expect(result.text).toBe('escape@\ninside.txt')
  })

  it('reports a permission-denied subdirectory and keeps walking', async () => {
    const { root, rootPath } = await setup({ locked: { 'hidden.txt': '' }, open: { 'seen.txt': '' } })
    const lockedPath = `${path.join(root, 'locked')}/`
    const result = await directoryTree(rootPath, {
      fileSystem: failingReaddir((directory) => (directory === lockedPath ? 'EACCES' : undefined)),
    })
    expect(result.text).toBe('locked/\nopen/\n  seen.txt')
    expect(result.problems).toEqual({ count: 1, samples: [{ path: 'locked/', code: 'EACCES' }] })
  })

  it('reports a directory that vanishes mid-walk and keeps walking', async () => {
    const { root, rootPath } = await setup({ doomed: { 'x.txt': '' }, stays: { 'y.txt': '' } })
    const doomed = `${path.join(root, 'doomed')}/`
    const fileSystem: WalkFileSystem = {
      readdir(directory, options, callback) {
        // Really remove it just before reading it: the real readdir then fails with ENOENT.
        if (directory === doomed) nodeFs.rmSync(directory, { recursive: true })
        readdirCallback(directory, options, callback)
      },
      readFile: (target, callback) => nodeFs.readFile(target, callback),
      lstat: (target, callback) => nodeFs.lstat(target, callback),
    }
    const result = await directoryTree(rootPath, { fileSystem })
    expect(result.text).toBe('doomed/\nstays/\n  y.txt')
    expect(result.problems).toEqual({ count: 1, samples: [{ path: 'doomed/', code: 'ENOENT' }] })
  })

  it('handles a really unreadable directory (reported as non-root, read as root)', async () => {
    const { root, rootPath } = await setup({ locked: { 'hidden.txt': '' } })
    await chmod(path.join(root, 'locked'), 0o000)
    try {
      const result = await directoryTree(rootPath)
      if (process.getuid?.() === 0) {
        // root bypasses permission bits, so the directory is simply read.
        expect(result.text).toBe('locked/\n  hidden.txt')
        expect(result.problems.count).toBe(0)
      } else {
        expect(result.text).toBe('locked/')
        expect(result.problems.samples).toEqual([{ path: 'locked/', code: 'EACCES' }])
      }
    } finally {
      await chmod(path.join(root, 'locked'), 0o755)
    }
  })

  it('fails when the root itself cannot be read, and for a file', async () => {
    const { root, rootPath, guard } = await setup({ 'file.txt': '' })
    await expect(
      directoryTree(rootPath, {
        fileSystem: failingReaddir((directory) => (directory === `${root}/` ? 'EACCES' : undefined)),
      }),
    ).rejects.toMatchObject({ code: 'permission_denied' })
    await expect(directoryTree(await guard.resolveSafe('file.txt'))).rejects.toMatchObject({
      code: 'not_a_directory',
    })
  })

  it('honours an aborted signal', async () => {
    const { rootPath } = await setup({ 'a.txt': '' })
    await expect(directoryTree(rootPath, { signal: AbortSignal.abort() })).rejects.toThrow(/abort/i)
  })
})

describe('searchFiles', () => {
  const tree: Tree = {
    'index.ts': '',
    'index.test.ts': '',
    src: { 'a.ts': '', 'a.test.ts': '', nested: { 'b.test.ts': '', 'c.js': '' } },
    '.config': { 'settings.ts': '' },
    docs: { 'guide.md': '' },
  }

  it.each([
    ['*.test.ts', ['index.test.ts', 'src/a.test.ts', 'src/nested/b.test.ts']],
    ['**/*.test.ts', ['index.test.ts', 'src/a.test.ts', 'src/nested/b.test.ts']],
    ['src/*.ts', ['src/a.test.ts', 'src/a.ts']],
    [
      'src/**',
      ['src/', 'src/a.test.ts', 'src/a.ts', 'src/nested/', 'src/nested/b.test.ts', 'src/nested/c.js'],
    ],
    ['nested', ['src/nested/']],
    [
      '*.ts',
      [
        '.config/settings.ts',
        'index.test.ts',
        'index.ts',
        'src/a.test.ts',
        'src/a.ts',
        'src/nested/b.test.ts',
      ],
    ],
    ['{docs,src}/*.md', ['docs/guide.md']],
    ['*.py', []],
  ])('%s', async (pattern, expected) => {
    const { rootPath } = await setup(tree)
    const result = await searchFiles(rootPath, pattern)
    expect(result.paths).toEqual(expected)
    expect(result.total).toBe(expected.length)
  })

  it('matches case-insensitively on request', async () => {
    const { rootPath } = await setup({ 'README.MD': '', 'readme.md': '' })
    expect((await searchFiles(rootPath, 'readme.md')).paths).toEqual(['readme.md'])
    expect((await searchFiles(rootPath, 'readme.md', { caseSensitive: false })).paths).toEqual([
      'README.MD',
      'readme.md',
    ])
  })

  it('pages through every match with the cursor, in a stable order', async () => {
    const files = Object.fromEntries(Array.from({ length: 23 }, (_, index) => [`file${index}.txt`, '']))
    const { rootPath } = await setup({ ...files, sub: files })
    const all = (await searchFiles(rootPath, '*.txt', { limit: 1000 })).paths
    expect(all).toHaveLength(46)
    const paged: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await searchFiles(rootPath, '*.txt', { limit: 10, cursor })
      expect(page.total).toBe(46)
      paged.push(...page.paths)
      cursor = page.nextCursor
      pages++
    } while (cursor)
    expect(paged).toEqual(all)
    expect(pages).toBe(5)
  })

  it('rejects a cursor from another query, and a malformed one', async () => {
    const { rootPath } = await setup({ 'a.txt': '', 'b.txt': '' })
    const first = await searchFiles(rootPath, '*.txt', { limit: 1 })
    expect(first.nextCursor).toBeDefined()
    await expect(searchFiles(rootPath, '*.md', { cursor: first.nextCursor })).rejects.toMatchObject({
      code: 'invalid_argument',
      message: 'This cursor belongs to a different query.',
    })
    await expect(searchFiles(rootPath, '*.txt', { cursor: 'not-a-cursor' })).rejects.toMatchObject({
      code: 'invalid_argument',
      message: 'Invalid cursor.',
    })
  })

  it('rejects an absolute pattern', async () => {
    const { rootPath } = await setup({ 'a.txt': '' })
    await expect(searchFiles(rootPath, '/etc/*')).rejects.toMatchObject({ code: 'invalid_argument' })
  })

  it('respects .gitignore and exclude', async () => {
    const { rootPath } = await setup(project)
    const result = await searchFiles(rootPath, '*.log')
    expect(result.paths).toEqual(['keep.log'])
    expect((await searchFiles(rootPath, '*.ts', { exclude: ['deep'] })).paths).toEqual([
      'src/build/kept.ts',
      'src/index.ts',
    ])
  })
})

describe('listDirectory', () => {
  async function listing() {
    const context = await setup({ 'b.txt': 'bb', 'a.txt': 'aaaa', 'c.txt': 'c', sub: {} })
    await symlink('a.txt', path.join(context.root, 'link'))
    const now = Date.now() / 1000
    await utimes(path.join(context.root, 'c.txt'), now, now - 10)
    await utimes(path.join(context.root, 'a.txt'), now, now - 100)
    await utimes(path.join(context.root, 'b.txt'), now, now - 1000)
    return context
  }

  it('lists names and types sorted by name, links not followed', async () => {
    const { rootPath } = await listing()
    const result = await listDirectory(rootPath)
    expect(result.entries).toEqual([
      { name: 'a.txt', type: 'file' },
      { name: 'b.txt', type: 'file' },
      { name: 'c.txt', type: 'file' },
      { name: 'link', type: 'symlink' },
      { name: 'sub', type: 'directory' },
    ])
    expect(result).toMatchObject({ total: 5, nextCursor: undefined, totalSize: undefined })
  })

  it('adds sizes and times on request', async () => {
    const { rootPath } = await listing()
    const result = await listDirectory(rootPath, { includeSizes: true })
    expect(result.entries[0]).toMatchObject({ name: 'a.txt', size: 4, modified: expect.any(String) })
    expect(result.totalSize).toBe(7)
  })

  it('sorts by size (largest first) and by modification time (newest first)', async () => {
    const { rootPath } = await listing()
    const bySize = await listDirectory(rootPath, { sortBy: 'size' })
    expect(bySize.entries.slice(0, 3).map((entry) => entry.name)).toEqual(['a.txt', 'b.txt', 'c.txt'])
    const byTime = await listDirectory(rootPath, { sortBy: 'mtime' })
    const files = byTime.entries.filter((entry) => entry.type === 'file').map((entry) => entry.name)
    expect(files).toEqual(['c.txt', 'a.txt', 'b.txt'])
  })

  it('paginates with a cursor', async () => {
    const { rootPath } = await listing()
    const first = await listDirectory(rootPath, { limit: 2 })
    const second = await listDirectory(rootPath, { limit: 2, cursor: first.nextCursor })
    const third = await listDirectory(rootPath, { limit: 2, cursor: second.nextCursor })
    expect([...first.entries, ...second.entries, ...third.entries].map((entry) => entry.name)).toEqual([
      'a.txt',
      'b.txt',
      'c.txt',
      'link',
      'sub',
    ])
    expect(third.nextCursor).toBeUndefined()
    await expect(listDirectory(rootPath, { sortBy: 'size', cursor: first.nextCursor })).rejects.toMatchObject(
      {
        code: 'invalid_argument',
      },
    )
  })

  it('refuses a file', async () => {
    const { guard } = await listing()
    await expect(listDirectory(await guard.resolveSafe('a.txt'))).rejects.toMatchObject({
      code: 'not_a_directory',
    })
  })

  it('lists a broken symlink as a link', async () => {
    const { root, rootPath } = await setup({ 'f.txt': 'x', d: {} })
    await symlink(path.join(root, 'missing'), path.join(root, 'broken'))
    const result = await listDirectory(rootPath, { includeSizes: true })
    expect(result.entries.map((entry) => [entry.name, entry.type])).toEqual([
      ['broken', 'symlink'],
      ['d', 'directory'],
      ['f.txt', 'file'],
    ])
    expect(result.problems.count).toBe(0)
  })

  it('skips and reports an entry that vanishes between readdir and lstat', async () => {
    const { root, rootPath } = await setup({ 'gone.txt': 'x', 'stays.txt': 'y' })
    const fileSystem: WalkFileSystem = {
      readdir(directory, options, callback) {
        readdirCallback(directory, options, (error, entries) => {
          // Really delete it after it was listed: the real lstat then fails with ENOENT.
          nodeFs.rmSync(path.join(root, 'gone.txt'))
          callback(error, entries)
        })
      },
      readFile: (target, callback) => nodeFs.readFile(target, callback),
      lstat: (target, callback) => nodeFs.lstat(target, callback),
    }
    const result = await listDirectory(rootPath, { includeSizes: true, fileSystem })
    expect(result.entries.map((entry) => entry.name)).toEqual(['stays.txt'])
    expect(result.problems).toEqual({ count: 1, samples: [{ path: 'gone.txt', code: 'ENOENT' }] })
  })
})
