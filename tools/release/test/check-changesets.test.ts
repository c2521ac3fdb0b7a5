import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { checkChangesets, findMissingChangesets, parseChangeset } from '../src/check-changesets.mjs'

const packages = [
  { name: '@keel-mcp/core', relativeDir: 'packages/core' },
  { name: '@keel-mcp/server-fs', relativeDir: 'servers/fs' },
]

describe('parseChangeset', () => {
  it('reads the releases and the summary', () => {
    const text = '---\n\'@keel-mcp/core\': patch\n"@keel-mcp/server-fs": minor\n---\n\nFix the thing.\n'
    expect(parseChangeset(text)).toEqual({
      releases: [
        { name: '@keel-mcp/core', type: 'patch' },
        { name: '@keel-mcp/server-fs', type: 'minor' },
      ],
      summary: 'Fix the thing.',
    })
  })

  it('reads an empty changeset as no releases', () => {
    expect(parseChangeset('---\n---\n')).toEqual({ releases: [], summary: '' })
  })

  it('rejects a file without front matter', () => {
    expect(parseChangeset('just text')).toBeUndefined()
  })
})

describe('findMissingChangesets', () => {
  it('names a package whose source changed without a changeset', () => {
    const result = findMissingChangesets({
      changedFiles: ['packages/core/src/run.ts', 'servers/fs/src/lib/read.ts'],
      packages,
      changesets: [{ file: '.changeset/a.md', text: "---\n'@keel-mcp/server-fs': patch\n---\nfs fix\n" }],
    })
    expect(result.missing).toEqual(['@keel-mcp/core'])
  })

  it('needs nothing for tests, docs and private packages', () => {
    const result = findMissingChangesets({
      changedFiles: [
        'packages/core/src/run.test.ts',
        'packages/core/test/e2e.test.ts',
        'docs/releasing.md',
        'servers/example/src/server.ts',
        'packages/core/README.md',
        'packages/core/src/lib/README.md',
      ],
      packages,
      changesets: [],
    })
    expect([...result.touched.keys()]).toEqual([])
    expect(result.missing).toEqual([])
  })

  it('lets an empty changeset waive the rule', () => {
    const result = findMissingChangesets({
      changedFiles: ['packages/core/src/run.ts'],
      packages,
      changesets: [{ file: '.changeset/refactor.md', text: '---\n---\n\nRefactor only.\n' }],
    })
    expect(result).toMatchObject({ waived: true, missing: [] })
  })
})

describe('checkChangesets on a git repository', () => {
  let dir = ''
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, stdio: 'pipe' })

  async function workspace() {
    dir = await mkdtemp(join(tmpdir(), 'keel-changesets-'))
    await writeFile(join(dir, 'pnpm-workspace.yaml'), 'packages:\n  - packages/*\n')
    await mkdir(join(dir, 'packages/core/src'), { recursive: true })
    await mkdir(join(dir, '.changeset'))
    await writeFile(
      join(dir, 'packages/core/package.json'),
      '{ "name": "@keel-mcp/core", "version": "1.0.0" }\n',
    )
    await writeFile(join(dir, 'packages/core/src/index.ts'), 'export const a = 1\n')
    git('init', '-q', '-b', 'main')
    git('add', '.')
    git('commit', '-q', '-m', 'initial')
  }

  const run = async (env: Record<string, string> = {}) => {
    const lines: string[] = []
    const code = await checkChangesets(dir, env, (line: string) => lines.push(line))
    return { code, output: lines.join('\n') }
  }

  it('passes with a note on main itself (nothing to compare)', async () => {
    await workspace()
    expect(await run()).toEqual({
      code: 0,
      output: expect.stringContaining("no published package's source changed since main"),
    })
  })

  it('fails a branch that changes core source without a changeset, then passes once one is added', async () => {
    await workspace()
    git('checkout', '-q', '-b', 'feature')
    await writeFile(join(dir, 'packages/core/src/index.ts'), 'export const a = 2\n')
    git('commit', '-qam', 'change core')
    const failing = await run({ BASE_REF: 'main' })
    expect(failing.code).toBe(1)
    expect(failing.output).toContain('@keel-mcp/core\n    packages/core/src/index.ts')

    await writeFile(join(dir, '.changeset/fix.md'), "---\n'@keel-mcp/core': patch\n---\n\nFix a.\n")
    expect((await run({ BASE_REF: 'main' })).code).toBe(0)
  })

  it('passes with a printed note when there is no base to compare with', async () => {
    await workspace()
    git('branch', '-m', 'main', 'trunk')
    expect(await run()).toEqual({ code: 0, output: expect.stringContaining('no base to compare with') })
  })

  it('fails loudly when BASE_REF names no commit', async () => {
    await workspace()
    await expect(run({ BASE_REF: 'origin/nope' })).rejects.toThrow(
      'BASE_REF=origin/nope is not a commit here',
    )
  })
})
