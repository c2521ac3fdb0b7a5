import { symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeTree, type Tree, useTempDirectories } from '../../test/temp-tree.js'
import { PathGuard } from './path-guard.js'
import { type ContentMatch, searchContent } from './search-content.js'

const tempDirectory = useTempDirectories()

async function setup(tree: Tree) {
  const base = await tempDirectory()
  const root = path.join(base, 'root')
  await makeTree(root, tree)
  const { guard } = await PathGuard.create([root])
  return { base, root, guard, rootPath: await guard.resolveSafe('.') }
}

const code: Tree = {
  'app.ts': [
    'import { helper } from "./lib"',
    '',
    'export function main() {',
    '  return helper(42)',
    '}',
    '',
  ].join('\n'),
  lib: {
    'helper.ts': [
      'export function helper(value: number) {',
      '  // TODO: validate',
      '  return value * 2',
      '}',
    ].join('\n'),
    'notes.md': 'Helper docs.\nTODO: write more\n',
  },
}

function locations(matches: ContentMatch[]): string[] {
  return matches.map((match) => `${match.path}:${match.line}:${match.column}`)
}

describe('searchContent', () => {
  it('finds a literal string, in path order, with line and column', async () => {
    const { rootPath } = await setup(code)
    const result = await searchContent(rootPath, 'helper')
    expect(locations(result.matches)).toEqual(['app.ts:1:10', 'app.ts:4:10', 'lib/helper.ts:1:17'])
    expect(result.matches[1]).toMatchObject({ text: '  return helper(42)', before: [], after: [] })
    expect(result).toMatchObject({ nextCursor: undefined, filesSearched: 3 })
  })

  it('treats regex characters in a literal query literally', async () => {
    const { rootPath } = await setup({ 'a.txt': 'price: $5 (approx.)\nprice: 5\n' })
    const result = await searchContent(rootPath, '$5 (approx.)')
    expect(locations(result.matches)).toEqual(['a.txt:1:8'])
  })

  it('matches case-insensitively on request', async () => {
    const { rootPath } = await setup(code)
    const result = await searchContent(rootPath, 'HELPER DOCS', { caseSensitive: false })
    expect(locations(result.matches)).toEqual(['lib/notes.md:1:1'])
  })

  it('searches with a regular expression', async () => {
    const { rootPath } = await setup(code)
    const result = await searchContent(rootPath, '^\\s*return \\w+\\(', { regex: true })
    expect(locations(result.matches)).toEqual(['app.ts:4:1'])
    const todos = await searchContent(rootPath, 'todo:', { regex: true, caseSensitive: false })
    expect(locations(todos.matches)).toEqual(['lib/helper.ts:2:6', 'lib/notes.md:2:1'])
  })

  it('rejects an invalid regular expression and an empty query', async () => {
    const { rootPath } = await setup(code)
    await expect(searchContent(rootPath, '(unclosed', { regex: true })).rejects.toMatchObject({
      code: 'invalid_argument',
      message: expect.stringContaining('Invalid regular expression'),
    })
    await expect(searchContent(rootPath, '')).rejects.toMatchObject({ code: 'invalid_argument' })
  })

  it('returns context lines before and after, clipped at the file edges', async () => {
    const { rootPath } = await setup(code)
    const result = await searchContent(rootPath, 'export function main', {
      contextBefore: 5,
      contextAfter: 1,
    })
    expect(result.matches).toEqual([
      {
        path: 'app.ts',
        line: 3,
        column: 1,
        text: 'export function main() {',
        before: ['import { helper } from "./lib"', ''],
        after: ['  return helper(42)'],
      },
    ])
    const last = await searchContent(rootPath, 'value * 2', { contextAfter: 3 })
    expect(last.matches[0]!.after).toEqual(['}'])
  })

  it('strips CR from CRLF lines', async () => {
    const { rootPath } = await setup({ 'win.txt': 'first\r\nneedle here\r\nlast\r\n' })
    const result = await searchContent(rootPath, 'needle', { contextBefore: 1, contextAfter: 1 })
    expect(result.matches[0]).toMatchObject({ text: 'needle here', before: ['first'], after: ['last'] })
  })

  it('skips binary files and files over the size limit, and counts them', async () => {
    const { rootPath } = await setup({
      'image.png': Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0]), Buffer.from('needle')]),
      'big.txt': `${'x'.repeat(2000)}\nneedle\n`,
      'small.txt': 'needle\n',
    })
    const result = await searchContent(rootPath, 'needle', { maxFileBytes: 1000 })
    expect(locations(result.matches)).toEqual(['small.txt:1:1'])
    expect(result.skipped).toEqual({ binary: 1, tooLarge: 1 })
  })

  it('respects .gitignore, include and exclude globs', async () => {
    const { rootPath } = await setup({
      '.gitignore': 'dist/\n',
      dist: { 'bundle.js': 'needle' },
      src: { 'a.ts': 'needle', 'a.test.ts': 'needle', 'b.js': 'needle' },
    })
    expect(locations((await searchContent(rootPath, 'needle')).matches)).toEqual([
      'src/a.test.ts:1:1',
      'src/a.ts:1:1',
      'src/b.js:1:1',
    ])
    const scoped = await searchContent(rootPath, 'needle', { include: ['*.ts'], exclude: ['*.test.ts'] })
    expect(locations(scoped.matches)).toEqual(['src/a.ts:1:1'])
    const everything = await searchContent(rootPath, 'needle', { respectGitignore: false })
    expect(everything.matches).toHaveLength(4)
  })

  it('never follows a symlink to a file outside the roots', async () => {
    const { base, root, rootPath } = await setup({ 'inside.txt': 'needle inside' })
    await writeFile(path.join(base, 'secret.txt'), 'needle secret')
    await symlink(path.join(base, 'secret.txt'), path.join(root, 'leak.txt'))
    const result = await searchContent(rootPath, 'needle')
    expect(locations(result.matches)).toEqual(['inside.txt:1:1'])
  })

  it('searches a single file given as the root', async () => {
    const { guard } = await setup(code)
    const result = await searchContent(await guard.resolveSafe('lib/notes.md'), 'TODO')
    expect(locations(result.matches)).toEqual(['notes.md:2:1'])
  })

  it('pages through every match with the cursor, within and across files', async () => {
    const tree: Tree = {}
    for (let file = 0; file < 5; file++) {
      tree[`f${file}.txt`] = Array.from({ length: 7 }, (_, line) => `match ${file}.${line}`).join('\n')
    }
    const { rootPath } = await setup(tree)
    const all = await searchContent(rootPath, 'match', { maxMatches: 1000 })
    expect(all.matches).toHaveLength(35)
    const paged: ContentMatch[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await searchContent(rootPath, 'match', { maxMatches: 4, cursor })
      expect(page.matches.length).toBeLessThanOrEqual(4)
      paged.push(...page.matches)
      cursor = page.nextCursor
      pages++
    } while (cursor)
    expect(paged).toEqual(all.matches)
    expect(pages).toBe(9)
  })

  it('ends a page early at the byte budget and continues from the next match', async () => {
    const long = 'x'.repeat(200)
    const tree: Tree = {}
    for (let file = 0; file < 3; file++) {
      tree[`f${file}.txt`] = Array.from({ length: 4 }, (_, line) => `hit ${file}.${line} ${long}`).join('\n')
    }
    const { rootPath } = await setup(tree)
    const all = await searchContent(rootPath, 'hit', { maxMatches: 100 })
    expect(all.matches).toHaveLength(12)
    const paged: ContentMatch[] = []
    let cursor: string | undefined
    do {
      const page = await searchContent(rootPath, 'hit', { maxMatches: 100, maxBytes: 1000, cursor })
      expect(page.matches.length).toBeGreaterThan(0)
      expect(page.matches.length).toBeLessThanOrEqual(4)
      paged.push(...page.matches)
      cursor = page.nextCursor
    } while (cursor)
    expect(paged).toEqual(all.matches)
  })

  it('returns one match even when it alone exceeds the byte budget', async () => {
    const { rootPath } = await setup({ 'a.txt': `hit ${'y'.repeat(400)}\nhit again` })
    const page = await searchContent(rootPath, 'hit', { maxBytes: 10 })
    expect(locations(page.matches)).toEqual(['a.txt:1:1'])
    expect(page.nextCursor).toBeDefined()
  })

  it('ends the last page exactly at a file boundary without an empty extra page', async () => {
    const { rootPath } = await setup({ 'a.txt': 'hit\nhit', 'b.txt': 'hit\nhit' })
    const first = await searchContent(rootPath, 'hit', { maxMatches: 2 })
    expect(first.nextCursor).toBeDefined()
    const second = await searchContent(rootPath, 'hit', { maxMatches: 2, cursor: first.nextCursor })
    expect(locations(second.matches)).toEqual(['b.txt:1:1', 'b.txt:2:1'])
    expect(second.nextCursor).toBeUndefined()
  })

  it('rejects a cursor from a different query', async () => {
    const { rootPath } = await setup({ 'a.txt': 'hit\nhit\nhit' })
    const first = await searchContent(rootPath, 'hit', { maxMatches: 1 })
    await expect(searchContent(rootPath, 'miss', { cursor: first.nextCursor })).rejects.toMatchObject({
      code: 'invalid_argument',
    })
  })

  it('inspects only the first 10,000 characters of a line in regex mode, and counts such lines', async () => {
    const { rootPath } = await setup({ 'long.txt': `${'a'.repeat(20_000)}needle\nneedle\n` })
    const result = await searchContent(rootPath, 'needle', { regex: true })
    expect(locations(result.matches)).toEqual(['long.txt:2:1'])
    expect(result.longLinesTruncated).toBe(1)
    // A literal search reads whole lines (indexOf is linear) and clips the shown text around the match.
    const literal = await searchContent(rootPath, 'needle')
    expect(locations(literal.matches)).toEqual(['long.txt:1:20001', 'long.txt:2:1'])
    expect(literal.matches[0]!.text.length).toBeLessThanOrEqual(502)
    expect(literal.matches[0]!.text).toContain('needle')
  })

  it('survives a catastrophic regular expression', async () => {
    const { rootPath } = await setup({ 'evil.txt': `${'a'.repeat(5000)}!\n` })
    const started = performance.now()
    const result = await searchContent(rootPath, '(a+)+$', { regex: true })
    expect(result.matches).toEqual([])
    expect(performance.now() - started).toBeLessThan(5000)
  })

  it('honours an abort signal', async () => {
    const { rootPath } = await setup(code)
    await expect(searchContent(rootPath, 'helper', { signal: AbortSignal.abort() })).rejects.toThrow(/abort/i)
  })

  it('searches many files and keeps path order', async () => {
    const tree: Tree = {}
    for (let index = 0; index < 300; index++)
      tree[`file${String(index).padStart(3, '0')}.txt`] = `line\nhit ${index}\n`
    const { rootPath } = await setup(tree)
    const result = await searchContent(rootPath, 'hit', { maxMatches: 1000 })
    expect(result.matches.map((match) => match.text)).toEqual(
      Array.from({ length: 300 }, (_, index) => `hit ${index}`),
    )
    expect(result.filesSearched).toBe(300)
  })
})
