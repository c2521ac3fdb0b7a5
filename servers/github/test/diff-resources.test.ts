import { afterEach, describe, expect, it } from 'vitest'
import type { FakeGitHub } from './fake-github.js'
import { pull } from './fixtures.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const repo = 'octo/demo'
const REPO = '/repos/octo/demo'
const hunk = (n: number, size: number) =>
  `@@ -${n},1 +${n},1 @@\n-"${'a'.repeat(size)}"\n+"${'b'.repeat(size)}"\n`
const file = (path: string, hunks: number, size = 200) =>
  `diff --git a/${path} b/${path}\nindex 111..222 100644\n--- a/${path}\n+++ b/${path}\n` +
  Array.from({ length: hunks }, (_, index) => hunk(index + 1, size)).join('')

/** A PR whose diff is `diff`, at head `sha`. */
function servePull(fake: FakeGitHub, diff: string, sha = 'a'.repeat(40)) {
  fake.on('GET', `${REPO}/pulls/5`, (request) =>
    request.accept?.includes('diff')
      ? { body: diff, headers: { 'content-type': 'text/x-diff; charset=utf-8' } }
      : json(pull(5, { sha })),
  )
}

/** The diff text of a result: between the untrusted line and the notices. */
const diffOf = (result: Record<string, any>) => {
  const lines = textOf(result).split('\n').slice(1)
  const blank = lines.lastIndexOf('')
  return `${(blank === -1 ? lines : lines.slice(0, blank)).join('\n')}\n`
}

describe('get_pull_request_diff', () => {
  it('returns raw diff text, pages by file and hunk, and the pages add up to the whole diff', async () => {
    const { fake, call } = await setup()
    const diff = file('a.ts', 4) + file('b.ts', 6) + file('c.ts', 2)
    servePull(fake, diff)
    const pages: string[] = []
    let cursor: string | undefined
    for (let round = 0; round < 20; round++) {
      const result = await call('get_pull_request_diff', {
        repo,
        pull_number: 5,
        max_bytes: 1200,
        ...(cursor ? { cursor } : {}),
      })
      // Not JSON-escaped: quotes and newlines arrive as they are.
      expect(textOf(result)).toContain('\n-"aaaa')
      pages.push(diffOf(result))
      cursor = dataOf(result).nextCursor
      if (!cursor) break
      expect(textOf(result)).toContain(`call again with cursor ${cursor}`)
    }
    expect(pages.length).toBeGreaterThan(2)
    // Each page is a valid diff (a resumed file repeats its header): strip repeats and compare.
    const seen = new Set<string>()
    const joined = pages
      .join('')
      .split(/(?=^diff --git )/m)
      .map((chunk) => {
        const header = chunk.slice(0, chunk.indexOf('@@'))
        if (!seen.has(header)) {
          seen.add(header)
          return chunk
        }
        return chunk.slice(header.length)
      })
      .join('')
    expect(joined).toBe(diff)
  })

  it('links a file larger than the page instead of inlining it, and the link reads that diff', async () => {
    const { fake, call, connection } = await setup()
    const big = file('data/huge.json', 200, 400)
    servePull(fake, file('a.ts', 1) + big + file('z.ts', 1))
    const result = await call('get_pull_request_diff', { repo, pull_number: 5, max_bytes: 5000 })
    expect(dataOf(result)).toMatchObject({
      shown: ['a.ts', 'z.ts'],
      linked: [{ path: 'data/huge.json' }],
      remaining: 0,
    })
    expect(textOf(result)).not.toContain('+++ b/data/huge.json')
    expect(textOf(result)).toContain('Not inlined (over 64 KiB): data/huge.json')
    const link = (result.content as Array<Record<string, string>>).find(
      (block) => block.type === 'resource_link',
    )
    expect(link?.uri).toBe('repo://octo/demo/pull/5/diff/data/huge.json')
    const read = await connection.client.readResource({ uri: link?.uri ?? '' })
    expect(read.contents[0].text).toBe(big)
    // Asked for by name, the same file is paged by hunk.
    const named = await call('get_pull_request_diff', {
      repo,
      pull_number: 5,
      file: 'data/huge.json',
      max_bytes: 5000,
    })
    expect(dataOf(named).partial).toMatchObject({ path: 'data/huge.json', fromHunk: 0, hunks: 200 })
  })

  it('refuses a cursor from another head and a file the PR does not change', async () => {
    const { fake, call } = await setup()
    servePull(fake, file('a.ts', 5), 'b'.repeat(40))
    const stale = await call('get_pull_request_diff', {
      repo,
      pull_number: 5,
      cursor: `${'a'.repeat(12)}.0.2`,
    })
    expect(errorKind(stale)).toBe('conflict')
    expect(errorKind(await call('get_pull_request_diff', { repo, pull_number: 5, file: 'nope.ts' }))).toBe(
      'not_found',
    )
    expect(errorKind(await call('get_pull_request_diff', { repo, pull_number: 5, cursor: 'garbage' }))).toBe(
      'invalid_argument',
    )
  })
})

describe('repository resources', () => {
  it('reads a file at a branch, lists templates and completes branches and paths', async () => {
    const { fake, connection } = await setup()
    fake.on('GET', `${REPO}/contents/src/a b.ts`, (request) =>
      request.query.get('ref') === 'refs/heads/main'
        ? json({
            type: 'file',
            path: 'src/a b.ts',
            sha: 's1',
            size: 7,
            encoding: 'base64',
            content: Buffer.from('let a\u200B=1').toString('base64'),
          })
        : json({ message: 'Not Found' }, 404),
    )
    fake.on(
      'GET',
      `${REPO}/branches`,
      json([
        { name: 'main', commit: { sha: 'x' } },
        { name: 'dev', commit: { sha: 'y' } },
      ]),
    )
    fake.on(
      'GET',
      `${REPO}/contents/src`,
      json([
        { name: 'a b.ts', path: 'src/a b.ts', type: 'file', size: 7 },
        { name: 'lib', path: 'src/lib', type: 'dir', size: 0 },
      ]),
    )
    const { resourceTemplates } = await connection.client.listResourceTemplates()
    expect(resourceTemplates.map((template: { uriTemplate: string }) => template.uriTemplate)).toContain(
      'repo://{owner}/{repo}/refs/heads/{branch}/contents/{+path}',
    )
    const read = await connection.client.readResource({
      uri: 'repo://octo/demo/refs/heads/main/contents/src/a%20b.ts',
    })
    // Hidden characters are removed as in get_file_contents.
    expect(read.contents[0]).toMatchObject({ mimeType: 'text/plain', text: 'let a=1' })
    const ref = { type: 'ref/resource', uri: 'repo://{owner}/{repo}/refs/heads/{branch}/contents/{+path}' }
    const branches = await connection.client.complete({
      ref,
      argument: { name: 'branch', value: 'd' },
      context: { arguments: { owner: 'octo', repo: 'demo' } },
    })
    expect(branches.completion.values).toEqual(['dev'])
    const paths = await connection.client.complete({
      ref,
      argument: { name: 'path', value: 'src/l' },
      context: { arguments: { owner: 'octo', repo: 'demo', branch: 'main' } },
    })
    expect(paths.completion.values).toEqual(['src/lib/'])
    await expect(
      connection.client.readResource({ uri: 'repo://octo/demo/contents/a%2F..%2Fsecret' }),
    ).rejects.toThrow(/segments/)
  })
})

describe('prompts', () => {
  it('offers triage, review and failing-run prompts that name the tools to use', async () => {
    const { connection } = await setup()
    const { prompts } = await connection.client.listPrompts()
    expect(prompts.map((prompt: { name: string }) => prompt.name)).toEqual([
      'triage_issue',
      'review_pull_request',
      'explain_failed_run',
    ])
    const review = await connection.client.getPrompt({
      name: 'review_pull_request',
      arguments: { repo, pull_number: '5' },
    })
    expect(review.messages[0].content.text).toContain('get_pull_request_diff')
    expect(review.messages[0].content.text).toContain('PR #5 in octo/demo')
    await expect(
      connection.client.getPrompt({ name: 'triage_issue', arguments: { repo: 'nope', issue_number: '1' } }),
    ).rejects.toThrow(/owner\/name/)
  })
})

describe('confirmation of destructive writes', () => {
  const deleteArgs = { repo, path: 'old.txt', message: 'Remove', sha: 'old1' }
  const routes = (fake: FakeGitHub) =>
    fake.on('DELETE', `${REPO}/contents/old.txt`, json({ content: null, commit: { sha: 'del1' } }))

  it('asks a client that offers elicitation, and does nothing when the user declines', async () => {
    const questions: string[] = []
    const { fake, call } = await setup({
      onElicit: (params) => {
        questions.push(String(params.message))
        return { action: 'decline' }
      },
    })
    routes(fake)
    const result = await call('delete_file', deleteArgs)
    expect(errorKind(result)).toBe('cancelled')
    expect(questions).toEqual(['Delete old.txt from octo/demo?'])
    expect(fake.calls('DELETE', `${REPO}/contents/old.txt`)).toHaveLength(0)
  })

  it('asks before merging a PR', async () => {
    const questions: string[] = []
    const { fake, call } = await setup({
      onElicit: (params) => {
        questions.push(String(params.message))
        return { action: 'accept', content: { confirm: false } }
      },
    })
    const result = await call('merge_pull_request', { repo, pull_number: 5, merge_method: 'squash' })
    expect(errorKind(result)).toBe('cancelled')
    expect(questions).toEqual(['Merge PR #5 of octo/demo (squash)?'])
    expect(fake.calls('PUT', `${REPO}/pulls/5/merge`)).toHaveLength(0)
  })

  it('deletes once the user confirms, on a 2026-07-28 lone request too (input_required)', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const { fake, call } = await setup({
        era,
        onElicit: () => ({ action: 'accept', content: { confirm: true } }),
      })
      routes(fake)
      expect(dataOf(await call('delete_file', deleteArgs)).commit).toBe('del1')
      expect(fake.calls('DELETE', `${REPO}/contents/old.txt`)).toHaveLength(1)
    }
  })
})
