import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { compileGlob, foldCase, linearRegex } from '../src/lib/glob.js'
import { call, connect, ok, useConnections } from './helpers.js'
import { makeTree, useTempDirectories } from './temp-tree.js'

/**
 * Patterns that freeze a backtracking matcher: regexes with nested quantifiers plus a lookaround
 * or backreference, and globs with many stars against a long name. None may block the process:
 * globs match in linear time, and regexes the linear engine cannot run are refused up front.
 */
const tempDirectory = useTempDirectories()
useConnections()

const longName = `${'a'.repeat(200)}.txt`
const evilGlob = '*a*a*a*a*a*a*a*a*a*a*a*a*b'

async function setup() {
  const root = await tempDirectory()
  await makeTree(root, { [longName]: `${'a'.repeat(5000)}\n`, 'plain.txt': 'hello world\n' })
  return root
}

describe('globs (linear time)', () => {
  it.each([
    ['*.ts', 'index.ts', true],
    ['*.ts', 'index.tsx', false],
    ['**/*.test.ts', 'a/b/c.test.ts', true],
    ['**/*.test.ts', 'c.test.ts', true],
    ['src/**', 'src', true],
    ['src/**', 'src/a/b', true],
    ['src/**', 'srcx/a', false],
    ['*.{js,ts}', 'a.js', true],
    ['*.{js,ts}', 'a.md', false],
    ['[a-c]*.md', 'b.md', true],
    ['[!a-c]*.md', 'b.md', false],
    ['?.md', 'x.md', true],
    ['@(foo|bar).js', 'bar.js', true],
    ['+(ab).js', 'ababab.js', true],
    ['.env*', '.env.local', true],
    ['\\*.md', '*.md', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'a/b', true],
  ])('%j matches %j: %s', (glob, candidate, expected) => {
    expect(compileGlob(glob)(candidate)).toBe(expected)
  })

  it('matches case-insensitively on request', () => {
    expect(compileGlob('README.MD', { caseSensitive: false })('readme.md')).toBe(true)
    expect(compileGlob('README.MD')('readme.md')).toBe(false)
  })

  it('refuses negated extglobs (they need a lookahead) with a clear message', () => {
    expect(() => compileGlob('!(foo)*.js')).toThrow(/Negated extglobs/)
  })

  it('takes the glob that freezes a backtracking matcher on a long name', () => {
    expect(compileGlob(evilGlob)(longName)).toBe(false)
  })
})

describe('regexes', () => {
  it.each(['(a+)+(?=b)', '(a+)+\\1$', '(?=a)(a|aa)+$', '(?<=x)a', '(?<n>a)\\k<n>'])(
    'reports %j as not runnable in linear time',
    (source) => {
      expect(linearRegex(source)).toBeUndefined()
    },
  )

  it('folds case into the pattern without touching escapes, classes of escapes or group names', () => {
    expect(foldCase('ab')).toBe('[aA][bB]')
    expect(foldCase('\\S+\\d{2,3}')).toBe('\\S+\\d{2,3}')
    expect(foldCase('[a-c_]')).toBe('[a-cA-C_]')
    expect(foldCase('(?<word>x)')).toBe('(?<word>[xX])')
    expect(new RegExp(foldCase('hello WORLD')).test('HeLLo world')).toBe(true)
  })
})

describe('a directory tool without path', () => {
  it.each([
    ['search_content', { pattern: 'hello' }],
    ['search_files', { pattern: '*.txt' }],
    ['list_directory', {}],
    ['directory_tree', {}],
  ])('%s searches or lists the first allowed directory', async (tool, args) => {
    const root = await setup()
    const other = await tempDirectory()
    const connection = await connect([root, other])
    const result = await ok(connection, tool, args)
    expect(result.text).toContain('plain.txt')
  })
})

describe('patterns through the tools never block the server', () => {
  it.each([
    ['(a+)+(?=b)', true],
    ['(a+)+\\1$', true],
    ['(?=a)(a|aa)+$', false],
  ])(
    'search_content refuses %j (case-sensitive: %s) at once, with a hint',
    async (pattern, caseSensitive) => {
      const root = await setup()
      const connection = await connect([root])
      const result = await call(connection, 'search_content', {
        path: '.',
        pattern,
        regex: true,
        case_sensitive: caseSensitive,
      })
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/^invalid_argument: Lookarounds .* are not supported/)
      await connection.client.ping()
    },
  )

  it('runs a nested-quantifier regex the linear engine can take, and answers ping meanwhile', async () => {
    const root = await setup()
    const connection = await connect([root])
    const search = call(connection, 'search_content', { path: '.', pattern: '(a+)+$', regex: true })
    const pinged = connection.client.ping().then(() => 'ping')
    expect(await Promise.race([pinged, search.then(() => 'search')])).toBeDefined()
    expect((await search).isError).toBe(false)
  })

  it.each([
    ['search_files pattern', { pattern: evilGlob }],
    ['search_files exclude', { pattern: '*.txt', exclude: [evilGlob] }],
  ])('matches the freezing glob in %s', async (_where, args) => {
    const root = await setup()
    const connection = await connect([root])
    const result = await ok(connection, 'search_files', { path: '.', ...args })
    expect(result.isError).toBe(false)
  })

  it('matches the freezing glob in search_content include', async () => {
    const root = await setup()
    const connection = await connect([root])
    const result = await ok(connection, 'search_content', {
      path: '.',
      pattern: 'hello',
      include: [evilGlob],
    })
    expect(result.structured.matches).toEqual([])
  })

  it('ends a long search with a timeout error while answering ping', async () => {
    const root = await tempDirectory()
    // Enough files that the search outlives a short tool timeout on any machine.
    for (let directory = 0; directory < 40; directory++) {
      const folder = path.join(root, `d${directory}`)
      await mkdir(folder)
      await Promise.all(
        Array.from({ length: 100 }, (_, index) =>
          writeFile(path.join(folder, `f${index}.txt`), `${'x'.repeat(2000)}\n`.repeat(20)),
        ),
      )
    }
    const connection = await connect([root, '--tool-timeout', '200'])
    const search = call(connection, 'search_content', { path: '.', pattern: 'x+y', regex: true })
    let pings = 0
    let finished = false
    void search.finally(() => {
      finished = true
    })
    while (!finished && pings < 1000) {
      await connection.client.ping()
      pings++
    }
    const result = await search
    expect(pings).toBeGreaterThan(0)
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^timeout: /)
  }, 60_000)
})
