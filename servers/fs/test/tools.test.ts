import { readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { call, connect, fails, ok, useConnections } from './helpers.js'
import { makeTree, type Tree, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(24, 1),
])
const wav = Buffer.concat([
  Buffer.from('RIFF'),
  Buffer.alloc(4),
  Buffer.from('WAVEfmt '),
  Buffer.alloc(16, 2),
])
const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from([0, 1, 2, 3, 0xff])])

/** A root with a small project in it; returns the root and a connected client. */
async function project(tree: Tree = {}, argv: string[] = []) {
  const root = path.join(await tempDirectory(), 'project')
  await makeTree(root, {
    'README.md': '# Project\n\nHello.\n',
    src: {
      'app.ts': 'import { helper } from "./lib/helper"\n\nexport function main() {\n  return helper(42)\n}\n',
      lib: {
        'helper.ts': 'export function helper(value: number) {\n  // TODO: validate\n  return value * 2\n}\n',
      },
      'app.test.ts': 'test("main", () => {})\n',
    },
    '.gitignore': 'dist/\n*.log\n',
    dist: { 'bundle.js': 'compiled TODO\n' },
    'debug.log': 'TODO log\n',
    'image.png': png,
    ...tree,
  })
  const connection = await connect([root, ...argv])
  return { root, connection }
}

describe('read_text_file', () => {
  it('reads a whole file, its head, its tail and a line range', async () => {
    const { connection } = await project({ 'lines.txt': 'one\ntwo\nthree\nfour\nfive\n' })
    expect((await ok(connection, 'read_text_file', { path: 'lines.txt' })).text).toBe(
      'one\ntwo\nthree\nfour\nfive\n',
    )
    expect((await ok(connection, 'read_text_file', { path: 'lines.txt', head: 2 })).text).toBe('one\ntwo\n')
    expect((await ok(connection, 'read_text_file', { path: 'lines.txt', tail: 2 })).text).toBe('four\nfive\n')
    expect(
      (await ok(connection, 'read_text_file', { path: 'lines.txt', start_line: 2, end_line: 3 })).text,
    ).toBe('two\nthree\n')
    expect((await ok(connection, 'read_text_file', { path: 'lines.txt', start_line: 5 })).text).toBe('five\n')
  })

  it('accepts a huge head and returns the whole file', async () => {
    const { connection } = await project({ 'lines.txt': 'one\ntwo\n' })
    expect((await ok(connection, 'read_text_file', { path: 'lines.txt', head: 1_000_000_000 })).text).toBe(
      'one\ntwo\n',
    )
  })

  it('stops at 192 KiB with a notice, and continues from the line it names', async () => {
    const lines = Array.from({ length: 40_000 }, (_, index) => `line ${index + 1} ${'x'.repeat(10)}`)
    const content = `${lines.join('\n')}\n`
    // The operator's answer cap (25,000 tokens by default) would cut first: raise it past 192 KiB.
    const { connection } = await project({ 'big.txt': content }, ['--max-answer-tokens', '60000'])
    const notice =
      /\n\[truncated at 192 KiB: lines (\d+)-(\d+) of a [\d.]+ KiB file shown; continue with start_line=(\d+)\]$/
    let read = ''
    let startLine = 1
    let calls = 0
    for (;;) {
      const page = await ok(connection, 'read_text_file', { path: 'big.txt', start_line: startLine })
      calls++
      expect(Buffer.byteLength(page.text)).toBeLessThan(193 * 1024)
      const match = notice.exec(page.text)
      if (!match) {
        read += page.text
        break
      }
      expect(Number(match[1])).toBe(startLine)
      expect(Number(match[3])).toBe(Number(match[2]) + 1)
      read += page.text.slice(0, match.index + 1)
      startLine = Number(match[3])
    }
    expect(calls).toBe(5)
    expect(read === content).toBe(true)
  })

  it('says a file is empty', async () => {
    const { connection } = await project({ 'empty.txt': '' })
    expect((await ok(connection, 'read_text_file', { path: 'empty.txt' })).text).toBe('[empty file]')
  })

  it('refuses a binary file and points to read_media_file', async () => {
    const { connection } = await project()
    const text = await fails(connection, 'read_text_file', { path: 'image.png' }, 'invalid_argument')
    expect(text).toContain('Not a UTF-8 text file')
    expect(text).toContain('read_media_file')
  })

  it('refuses a directory, a missing file and conflicting ranges with clear errors', async () => {
    const { connection } = await project({ 'lines.txt': 'one\n' })
    expect(await fails(connection, 'read_text_file', { path: 'src' }, 'invalid_argument')).toContain(
      'directory',
    )
    expect(await fails(connection, 'read_text_file', { path: 'nope.txt' }, 'not_found')).toContain('nope.txt')
    expect(
      await fails(connection, 'read_text_file', { path: 'lines.txt', head: 1, tail: 1 }, 'invalid_argument'),
    ).toContain('only one of head, tail')
    expect(
      await fails(
        connection,
        'read_text_file',
        { path: 'lines.txt', start_line: 3, end_line: 2 },
        'invalid_argument',
      ),
    ).toContain('end_line (2) is before start_line (3)')
    expect(
      await fails(connection, 'read_text_file', { path: 'lines.txt', start_line: 9 }, 'invalid_argument'),
    ).toContain('past the end of the file (1 line)')
  })
})

describe('read_media_file', () => {
  it('returns images and audio as content blocks with the MIME type of their bytes', async () => {
    const { connection } = await project({ 'sound.bin': wav, 'picture.dat': png })
    const image = await ok(connection, 'read_media_file', { path: 'picture.dat' })
    expect(image.content).toEqual([{ type: 'image', mimeType: 'image/png', data: png.toString('base64') }])
    const audio = await ok(connection, 'read_media_file', { path: 'sound.bin' })
    expect(audio.content).toEqual([{ type: 'audio', mimeType: 'audio/wav', data: wav.toString('base64') }])
  })

  it('returns other binaries as an embedded resource', async () => {
    const { root, connection } = await project({ 'doc.pdf': pdf })
    const result = await ok(connection, 'read_media_file', { path: 'doc.pdf' })
    expect(result.content).toEqual([
      {
        type: 'resource',
        resource: {
          uri: `file://${root}/doc.pdf`,
          mimeType: 'application/pdf',
          blob: pdf.toString('base64'),
        },
      },
    ])
  })

  it('refuses a file over 5 MiB', async () => {
    const { connection } = await project({ 'huge.png': Buffer.concat([png, Buffer.alloc(5 * 1024 * 1024)]) })
    expect(await fails(connection, 'read_media_file', { path: 'huge.png' }, 'too_large')).toContain(
      'over the limit',
    )
  })
})

describe('read_multiple_files', () => {
  it('reads each file on its own: one failure does not fail the rest', async () => {
    const { connection } = await project()
    const result = await ok(connection, 'read_multiple_files', {
      paths: ['README.md', 'missing.txt', 'image.png', '/etc/passwd', 'src/app.test.ts'],
    })
    const files = result.structured.files
    expect(files.map((file: { path: string }) => file.path)).toEqual([
      'README.md',
      'missing.txt',
      'image.png',
      '/etc/passwd',
      'src/app.test.ts',
    ])
    expect(files[0]).toEqual({ path: 'README.md', content: '# Project\n\nHello.\n' })
    expect(files[1].error).toMatch(/^not_found: /)
    expect(files[2].error).toMatch(/^invalid_argument: Not a UTF-8 text file[\s\S]*read_media_file/)
    expect(files[3].error).toMatch(/^permission_denied: Access denied/)
    expect(files[4].content).toBe('test("main", () => {})\n')
    expect(result.text).toContain('==> README.md <==\n# Project\n\nHello.\n')
    expect(result.text).toContain('==> missing.txt <==\nnot_found:')
  })

  it('shares 96 KiB between the files: small ones whole, large ones cut with a continuation line', async () => {
    const big = `${Array.from({ length: 20_000 }, (_, index) => `row ${index}`).join('\n')}\n`
    const { connection } = await project({ 'a.txt': big, 'b.txt': big, 'small.txt': 'small\n' })
    const result = await ok(connection, 'read_multiple_files', { paths: ['a.txt', 'small.txt', 'b.txt'] })
    const [a, small, b] = result.structured.files
    expect(small).toEqual({ path: 'small.txt', content: 'small\n' })
    for (const file of [a, b]) {
      expect(file.truncated).toBe(true)
      expect(big.startsWith(file.content)).toBe(true)
      expect(file.nextLine).toBe(file.content.split('\n').length)
    }
    const total = a.content.length + b.content.length + small.content.length
    expect(total).toBeLessThanOrEqual(96 * 1024)
    expect(total).toBeGreaterThan(90 * 1024)
    expect(result.text).toContain(`continue with read_text_file start_line=${a.nextLine}`)
  })
})

describe('write_file', () => {
  it('creates a file, then replaces it, leaving no temporary files', async () => {
    const { root, connection } = await project()
    expect((await ok(connection, 'write_file', { path: 'notes/../new.txt', content: 'first' })).text).toBe(
      'Created new.txt (5 bytes)',
    )
    expect((await ok(connection, 'write_file', { path: 'new.txt', content: 'second' })).text).toBe(
      'Replaced new.txt (6 bytes)',
    )
    expect(await readFile(path.join(root, 'new.txt'), 'utf8')).toBe('second')
    expect((await readdir(root)).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })

  it('keeps the mode of a replaced file', async () => {
    const { root, connection } = await project({ 'script.sh': 'echo one\n' })
    const { chmod } = await import('node:fs/promises')
    await chmod(path.join(root, 'script.sh'), 0o750)
    await ok(connection, 'write_file', { path: 'script.sh', content: 'echo two\n' })
    expect((await stat(path.join(root, 'script.sh'))).mode & 0o777).toBe(0o750)
  })

  it('refuses to overwrite when asked not to', async () => {
    const { root, connection } = await project()
    const text = await fails(
      connection,
      'write_file',
      { path: 'README.md', content: 'x', overwrite: false },
      'conflict',
    )
    expect(text).toContain('Already exists')
    expect(await readFile(path.join(root, 'README.md'), 'utf8')).toBe('# Project\n\nHello.\n')
    await ok(connection, 'write_file', { path: 'fresh.txt', content: 'x', overwrite: false })
  })

  it('refuses a missing parent and a directory, writing nothing', async () => {
    const { root, connection } = await project()
    expect(
      await fails(connection, 'write_file', { path: 'no/such/dir/a.txt', content: 'x' }, 'not_found'),
    ).toContain('create_directory')
    await fails(connection, 'write_file', { path: 'src', content: 'x' }, 'invalid_argument')
    expect((await stat(path.join(root, 'src'))).isDirectory()).toBe(true)
  })
})

describe('edit_file', () => {
  const source = 'function greet(name) {\n  return "Hello, " + name\n}\n\nfunction part() {\n  return 1\n}\n'

  it('applies ordered edits and returns a diff', async () => {
    const { root, connection } = await project({ 'greet.js': source })
    const result = await ok(connection, 'edit_file', {
      path: 'greet.js',
      edits: [
        { old_text: '"Hello, "', new_text: '"Hi, "' },
        { old_text: 'return 1', new_text: 'return 2' },
      ],
    })
    expect(result.text).toMatch(/^Edited greet\.js \(2 edits\)\./)
    expect(result.text).toContain('-  return "Hello, " + name\n+  return "Hi, " + name')
    expect(result.text).not.toContain('Index:')
    expect(await readFile(path.join(root, 'greet.js'), 'utf8')).toBe(
      source.replace('Hello, ', 'Hi, ').replace('return 1', 'return 2'),
    )
  })

  it('only shows the diff in a dry run', async () => {
    const { root, connection } = await project({ 'greet.js': source })
    const result = await ok(connection, 'edit_file', {
      path: 'greet.js',
      edits: [{ old_text: 'return 1', new_text: 'return 3' }],
      dry_run: true,
    })
    expect(result.text).toMatch(/^Dry run: greet\.js not written/)
    expect(result.text).toContain('+  return 3')
    expect(await readFile(path.join(root, 'greet.js'), 'utf8')).toBe(source)
  })

  it("tolerates CRLF line endings and different indentation, keeping the file's own", async () => {
    const crlf = 'if (x) {\r\n    call(a)\r\n    call(b)\r\n}\r\n'
    const { root, connection } = await project({ 'crlf.js': crlf })
    const result = await ok(connection, 'edit_file', {
      path: 'crlf.js',
      edits: [{ old_text: 'call(a)\ncall(b)', new_text: 'call(a)\ncall(c)' }],
    })
    expect(result.text).toContain('edit 1: 1 replacement, matched ignoring indentation')
    expect(await readFile(path.join(root, 'crlf.js'), 'utf8')).toBe(
      'if (x) {\r\n    call(a)\r\n    call(c)\r\n}\r\n',
    )
  })

  it('names the edit that missed and shows the closest text, changing nothing', async () => {
    const { root, connection } = await project({ 'greet.js': source })
    const text = await fails(
      connection,
      'edit_file',
      {
        path: 'greet.js',
        edits: [
          { old_text: 'return 1', new_text: 'return 2' },
          { old_text: 'return "Helo, " + name', new_text: 'x' },
        ],
      },
      'not_found',
    )
    expect(text).toContain('edits[1]: old_text was not found. Closest match')
    expect(text).toContain('at line 2')
    expect(text).toContain('return "Hello, " + name')
    // The model can correct its old_text from the answer alone: what it sent, what the file has.
    expect(text).toContain(
      'Diff (- old_text, + file):\n-     │return "Helo, " + name\n+    2│  return "Hello, " + name',
    )
    expect(text).toContain('Copy old_text exactly')
    expect(text).not.toContain('oldText')
    expect(await readFile(path.join(root, 'greet.js'), 'utf8')).toBe(source)
  })

  it('refuses an ambiguous edit unless replace_all', async () => {
    const { root, connection } = await project({ 'twice.txt': 'a\nb\na\n' })
    expect(
      await fails(
        connection,
        'edit_file',
        { path: 'twice.txt', edits: [{ old_text: 'a', new_text: 'c' }] },
        'invalid_argument',
      ),
    ).toContain('matches 2 places (lines 1, 3)')
    await ok(connection, 'edit_file', {
      path: 'twice.txt',
      edits: [{ old_text: 'a', new_text: 'c', replace_all: true }],
    })
    expect(await readFile(path.join(root, 'twice.txt'), 'utf8')).toBe('c\nb\nc\n')
  })

  it('says when the edits change nothing, and refuses binary files', async () => {
    const { connection } = await project({ 'same.txt': 'keep\n' })
    expect(
      (
        await ok(connection, 'edit_file', {
          path: 'same.txt',
          edits: [{ old_text: 'keep', new_text: 'keep' }],
        })
      ).text,
    ).toBe('No change: the edits leave same.txt as it was.')
    await fails(
      connection,
      'edit_file',
      { path: 'image.png', edits: [{ old_text: 'PNG', new_text: 'x' }] },
      'invalid_argument',
    )
  })
})

describe('create_directory and move_file', () => {
  it('creates nested directories idempotently, and refuses a file in the way', async () => {
    const { root, connection } = await project()
    expect((await ok(connection, 'create_directory', { path: 'a/b/c' })).text).toBe('Created a/b/c/')
    expect((await ok(connection, 'create_directory', { path: 'a/b/c' })).text).toBe('Already exists: a/b/c/')
    expect((await stat(path.join(root, 'a/b/c'))).isDirectory()).toBe(true)
    await fails(connection, 'create_directory', { path: 'README.md' }, 'invalid_argument')
  })

  it('moves and renames files and directories, refusing to clobber unless asked', async () => {
    const { root, connection } = await project({ 'one.txt': 'one', 'two.txt': 'two' })
    expect((await ok(connection, 'move_file', { source: 'one.txt', destination: 'src/uno.txt' })).text).toBe(
      'Moved one.txt to src/uno.txt',
    )
    expect(
      await fails(connection, 'move_file', { source: 'two.txt', destination: 'src/uno.txt' }, 'conflict'),
    ).toContain('overwrite')
    expect(await readFile(path.join(root, 'src/uno.txt'), 'utf8')).toBe('one')
    expect(
      (await ok(connection, 'move_file', { source: 'two.txt', destination: 'src/uno.txt', overwrite: true }))
        .text,
    ).toBe('Moved two.txt to src/uno.txt (replaced the existing destination)')
    expect(await readFile(path.join(root, 'src/uno.txt'), 'utf8')).toBe('two')
    await ok(connection, 'move_file', { source: 'src/lib', destination: 'library' })
    expect(await readFile(path.join(root, 'library/helper.ts'), 'utf8')).toContain('helper')
    await fails(connection, 'move_file', { source: 'gone.txt', destination: 'x.txt' }, 'not_found')
    expect(
      await fails(connection, 'move_file', { source: 'README.md', destination: 'src' }, 'conflict'),
    ).toContain(`Hint: To move the file into it, give the full new path: ${root}/src/README.md`)
    await fails(connection, 'move_file', { source: 'src', destination: 'src/inner' }, 'invalid_argument')
  })

  // The schema no longer says "its parent must exist": the refusal names the tool that makes the parent.
  it('refuses a destination whose parent is missing, naming create_directory', async () => {
    const { root, connection } = await project({ 'one.txt': 'one' }, ['--toolsets', 'all'])
    for (const tool of ['move_file', 'copy_file'])
      expect(
        await fails(connection, tool, { source: 'one.txt', destination: 'no/such/one.txt' }, 'not_found'),
      ).toContain('create_directory')
    expect(await readFile(path.join(root, 'one.txt'), 'utf8')).toBe('one')
  })
})

describe('list_directory', () => {
  it('lists entries with type markers and structured entries', async () => {
    const { root, connection } = await project()
    await symlink('README.md', path.join(root, 'readme-link'))
    const result = await ok(connection, 'list_directory', { path: '.' })
    expect(result.text.split('\n')).toEqual([
      '.gitignore',
      'README.md',
      'debug.log',
      'dist/',
      'image.png',
      'readme-link@',
      'src/',
    ])
    expect(result.structured.total).toBe(7)
    expect(result.structured.entries[3]).toEqual({ name: 'dist', type: 'directory' })
  })

  it('adds sizes and times and sorts by size', async () => {
    const { connection } = await project()
    const result = await ok(connection, 'list_directory', { path: '.', sizes: true, sort: 'size' })
    expect(result.structured.entries[0]).toMatchObject({ name: 'image.png', type: 'file', size: png.length })
    expect(result.structured.entries[0].modified).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(result.text.split('\n')[0]).toMatch(/^image\.png\t32\t\d{4}-/)
    expect(result.text).toMatch(/\[files on this page: [\d.]+ B\]$/)
  })

  it('pages with a cursor and refuses a cursor from another listing', async () => {
    const tree: Tree = {}
    for (let index = 0; index < 25; index++) tree[`f${String(index).padStart(2, '0')}.txt`] = 'x'
    const { connection } = await project({ many: tree })
    const first = await ok(connection, 'list_directory', { path: 'many', limit: 10 })
    expect(first.structured.entries).toHaveLength(10)
    expect(first.text).toContain(`[10 of 25 entries; more: cursor "${first.structured.nextCursor}"]`)
    const names: string[] = first.structured.entries.map((entry: { name: string }) => entry.name)
    let cursor = first.structured.nextCursor
    while (cursor) {
      const page = await ok(connection, 'list_directory', { path: 'many', limit: 10, cursor })
      names.push(...page.structured.entries.map((entry: { name: string }) => entry.name))
      cursor = page.structured.nextCursor
    }
    expect(names).toEqual(Object.keys(tree))
    expect(
      await fails(
        connection,
        'list_directory',
        { path: '.', cursor: first.structured.nextCursor },
        'invalid_argument',
      ),
    ).toContain('different query')
    await fails(connection, 'list_directory', { path: '.', cursor: 'garbage' }, 'invalid_argument')
  })

  it('refuses a file where a directory is expected', async () => {
    const { connection } = await project()
    expect(await fails(connection, 'list_directory', { path: 'README.md' }, 'invalid_argument')).toContain(
      'Not a directory',
    )
  })
})

describe('directory_tree', () => {
  it('shows a compact tree that honours .gitignore, and everything with gitignore: false', async () => {
    const { connection } = await project()
    const tree = await ok(connection, 'directory_tree', { path: '.' })
    expect(tree.text).toBe(
      [
        '.gitignore',
        'README.md',
        'image.png',
        'src/',
        '  app.test.ts',
        '  app.ts',
        '  lib/',
        '    helper.ts',
      ].join('\n'),
    )
    const all = await ok(connection, 'directory_tree', { path: '.', gitignore: false })
    expect(all.text).toContain('dist/\n  bundle.js')
    expect(all.text).toContain('debug.log')
  })

  it('applies exclude globs and max_depth, and says when depth cut it', async () => {
    const { connection } = await project()
    expect((await ok(connection, 'directory_tree', { path: '.', exclude: ['*.md', 'lib'] })).text).toBe(
      ['.gitignore', 'image.png', 'src/', '  app.test.ts', '  app.ts'].join('\n'),
    )
    const shallow = await ok(connection, 'directory_tree', { path: '.', max_depth: 1 })
    expect(shallow.text).toBe(
      [
        '.gitignore',
        'README.md',
        'image.png',
        'src/',
        '[max_depth 1 reached: deeper levels not listed]',
      ].join('\n'),
    )
  })

  it('shows whole levels and marks cut directories when the tree does not fit', async () => {
    const many: Tree = {}
    for (let index = 0; index < 30; index++) many[`d${index}`] = { 'a.txt': 'a', 'b.txt': 'b' }
    const { connection } = await project({ many })
    const tree = await ok(connection, 'directory_tree', { path: 'many', max_entries: 40 })
    expect(tree.text).toContain('d0/ (+2 entries)')
    expect(tree.text).toContain('[truncated: 30 of 90 entries shown, 1 level complete.')
    expect(tree.text).not.toContain('a.txt')
  })

  it('lists symlinks without following them, and refuses a file', async () => {
    const { root, connection } = await project({ sub: {} })
    await symlink(path.join(root, 'src'), path.join(root, 'sub', 'src-link'))
    expect((await ok(connection, 'directory_tree', { path: 'sub' })).text).toBe('src-link@')
    await fails(connection, 'directory_tree', { path: 'README.md' }, 'invalid_argument')
  })
})

describe('search_files', () => {
  it('finds by name glob at any depth and by path glob, as paths to pass back', async () => {
    const { connection } = await project()
    const byName = await ok(connection, 'search_files', { path: '.', pattern: '*.ts' })
    expect(byName.structured).toEqual({
      paths: ['src/app.test.ts', 'src/app.ts', 'src/lib/helper.ts'],
      total: 3,
    })
    expect(byName.text).toBe('src/app.test.ts\nsrc/app.ts\nsrc/lib/helper.ts')
    const byPath = await ok(connection, 'search_files', { path: 'src', pattern: 'lib/*.ts' })
    expect(byPath.structured.paths).toEqual(['src/lib/helper.ts'])
    expect((await ok(connection, 'read_text_file', { path: byPath.structured.paths[0] })).text).toContain(
      'helper',
    )
  })

  it('honours .gitignore unless told not to, and says so when nothing matches', async () => {
    const { connection } = await project()
    const none = await ok(connection, 'search_files', { path: '.', pattern: '*.log' })
    expect(none.text).toBe("No matches (.gitignore'd paths skipped; gitignore: false includes them).")
    expect(
      (await ok(connection, 'search_files', { path: '.', pattern: '*.log', gitignore: false })).structured
        .paths,
    ).toEqual(['debug.log'])
    expect(
      (await ok(connection, 'search_files', { path: '.', pattern: 'readme.MD', case_sensitive: false }))
        .structured.paths,
    ).toEqual(['README.md'])
  })

  it('pages through many matches', async () => {
    const tree: Tree = {}
    for (let index = 0; index < 12; index++) tree[`m${String(index).padStart(2, '0')}.txt`] = 'x'
    const { connection } = await project({ many: tree })
    const first = await ok(connection, 'search_files', { path: 'many', pattern: '*.txt', limit: 5 })
    expect(first.structured.total).toBe(12)
    expect(first.text).toContain('[5 of 12 matches; more: cursor')
    const second = await ok(connection, 'search_files', {
      path: 'many',
      pattern: '*.txt',
      limit: 5,
      cursor: first.structured.nextCursor,
    })
    expect(second.structured.paths[0]).toBe('many/m05.txt')
  })
})

describe('search_content', () => {
  it('finds literal text like grep -rn, skipping binary and ignored files', async () => {
    const { connection } = await project()
    const result = await ok(connection, 'search_content', { path: '.', pattern: 'TODO' })
    expect(result.text).toBe('src/lib/helper.ts:2:  // TODO: validate')
    expect(result.structured).toEqual({
      matches: [{ path: 'src/lib/helper.ts', line: 2, text: '  // TODO: validate' }],
      filesSearched: 6,
    })
    const all = await ok(connection, 'search_content', { path: '.', pattern: 'TODO', gitignore: false })
    expect(all.structured.matches.map((match: { path: string }) => match.path)).toEqual([
      'debug.log',
      'dist/bundle.js',
      'src/lib/helper.ts',
    ])
  })

  it('searches by regex, case-insensitively, within include globs, with context', async () => {
    const { connection } = await project()
    const regex = await ok(connection, 'search_content', {
      path: 'src',
      pattern: 'helper\\(\\d+\\)',
      regex: true,
    })
    expect(regex.text).toBe('src/app.ts:4:  return helper(42)')
    const insensitive = await ok(connection, 'search_content', {
      path: '.',
      pattern: 'HELLO',
      case_sensitive: false,
      include: ['*.md'],
    })
    expect(insensitive.text).toBe('README.md:3:Hello.')
    const context = await ok(connection, 'search_content', {
      path: 'src/lib/helper.ts',
      pattern: 'TODO',
      context: 1,
    })
    expect(context.text).toBe(
      [
        'src/lib/helper.ts-1-export function helper(value: number) {',
        'src/lib/helper.ts:2:  // TODO: validate',
        'src/lib/helper.ts-3-  return value * 2',
      ].join('\n'),
    )
    expect(context.structured.matches[0]).toMatchObject({
      before: ['export function helper(value: number) {'],
      after: ['  return value * 2'],
    })
  })

  it('pages with a cursor and says how to continue', async () => {
    const tree: Tree = {}
    for (let index = 0; index < 4; index++) tree[`f${index}.txt`] = 'hit\nmiss\nhit\n'
    const { connection } = await project({ hits: tree })
    const first = await ok(connection, 'search_content', { path: 'hits', pattern: 'hit', max_matches: 3 })
    expect(first.structured.matches).toHaveLength(3)
    expect(first.text).toContain(`[3 matches on this page; more: cursor "${first.structured.nextCursor}"]`)
    const rest = await ok(connection, 'search_content', {
      path: 'hits',
      pattern: 'hit',
      max_matches: 10,
      cursor: first.structured.nextCursor,
    })
    expect(rest.structured.matches).toHaveLength(5)
    expect(rest.structured.nextCursor).toBeUndefined()
  })

  it('caps a page by bytes when context lines are long', async () => {
    const long = 'y'.repeat(400)
    const lines = Array.from({ length: 300 }, (_, index) => (index % 3 === 0 ? `hit ${long}` : long))
    const { connection } = await project({ 'long.txt': lines.join('\n') })
    const result = await ok(connection, 'search_content', { path: 'long.txt', pattern: 'hit', context: 20 })
    expect(result.structured.matches.length).toBeLessThan(100)
    expect(result.structured.nextCursor).toBeDefined()
    expect(Buffer.byteLength(result.text)).toBeLessThan(80 * 1024)
  })

  it('says when nothing matches and refuses a bad regex', async () => {
    const { connection } = await project()
    expect((await ok(connection, 'search_content', { path: '.', pattern: 'zebra' })).text).toBe(
      "No matches in 6 files (.gitignore'd files skipped).",
    )
    expect(
      await fails(connection, 'search_content', { path: '.', pattern: '(', regex: true }, 'invalid_argument'),
    ).toContain('Invalid regular expression')
  })
})

describe('get_file_info and list_allowed_directories', () => {
  it('describes a file and a link inside the roots', async () => {
    const { root, connection } = await project()
    await symlink('README.md', path.join(root, 'readme-link'))
    const file = await ok(connection, 'get_file_info', { path: 'README.md' })
    expect(file.structured).toMatchObject({ path: 'README.md', type: 'file', size: 18, permissions: '644' })
    expect(file.text).toContain('type: file\nsize: 18\n')
    const link = await ok(connection, 'get_file_info', { path: 'readme-link' })
    expect(link.structured).toMatchObject({
      path: 'readme-link',
      type: 'symlink',
      linkTarget: 'README.md',
      linkStatus: 'inside',
    })
  })

  it('lists the allowed directories, first one first', async () => {
    const { root } = await project()
    const other = await tempDirectory()
    const connection = await connect([root, other])
    const result = await ok(connection, 'list_allowed_directories')
    expect(result.structured).toEqual({ directories: [root, other], narrowed: false })
    expect(result.text).toBe(`Allowed directories:\n${root}\n${other}`)
  })

  it('shows paths outside the first directory as absolute paths', async () => {
    const first = await tempDirectory()
    const second = await tempDirectory()
    await writeFile(path.join(second, 'b.txt'), 'b')
    const connection = await connect([first, second])
    const result = await ok(connection, 'search_files', { path: second, pattern: '*.txt' })
    expect(result.structured.paths).toEqual([path.join(second, 'b.txt')])
    const info = await call(connection, 'get_file_info', { path: path.join(second, 'b.txt') })
    expect(info.structured.path).toBe(path.join(second, 'b.txt'))
  })
})
