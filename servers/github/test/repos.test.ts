import { afterEach, describe, expect, it } from 'vitest'
import { recorded, storeBlob } from './fake-github.js'
import { commit } from './fixtures.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const FIXTURE_ORG = 'octokit-fixture-org'

describe('repos', () => {
  it('get_repository reads the recorded repository', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('get-repository'))
    const data = dataOf(await call('get_repository', { repo: `${FIXTURE_ORG}/hello-world` }))
    expect(data.repository).toMatchObject({
      fullName: `${FIXTURE_ORG}/hello-world`,
      defaultBranch: 'master',
      topics: ['fixtures', 'hello', 'hello-world'],
    })
  })

  it('get_file_contents lists a directory from the recording', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('get-content').slice(0, 1))
    const result = await call('get_file_contents', { repo: `${FIXTURE_ORG}/hello-world` })
    expect(fake.unmatched).toEqual([])
    expect(result.structuredContent).toEqual({
      type: 'dir',
      entries: [{ name: 'README.md', type: 'file', size: 13 }],
    })
  })

  it('get_file_contents reads a byte range of a text file and says where to continue', async () => {
    const { fake, call } = await setup()
    const text = 'line one\nline two\nline three\n'
    fake.on(
      'GET',
      '/repos/octo/demo/contents/src/a.ts',
      json({
        type: 'file',
        path: 'src/a.ts',
        size: text.length,
        sha: 'f'.repeat(40),
        encoding: 'base64',
        content: Buffer.from(text).toString('base64'),
      }),
    )
    const first = await call('get_file_contents', {
      repo: 'octo/demo',
      path: 'src/a.ts',
      ref: 'dev',
      max_bytes: 9,
    })
    expect(first.structuredContent).toEqual({
      type: 'file',
      sha: 'f'.repeat(40),
      content: 'line one\n',
      nextOffset: 9,
    })
    expect(textOf(first)).toContain('continue with offset 9')
    expect(fake.requests[0]?.query.get('ref')).toBe('dev')
    const rest = await call('get_file_contents', { repo: 'octo/demo', path: 'src/a.ts', offset: 9 })
    expect(rest.structuredContent?.content).toBe('line two\nline three\n')
    expect(rest.structuredContent?.nextOffset).toBeUndefined()
  })

  it('get_file_contents notes a binary file instead of dumping it', async () => {
    const { fake, call } = await setup()
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])
    fake.on(
      'GET',
      '/repos/octo/demo/contents/logo.png',
      json({
        type: 'file',
        path: 'logo.png',
        size: png.length,
        sha: 'e'.repeat(40),
        encoding: 'base64',
        content: png.toString('base64'),
      }),
    )
    const result = await call('get_file_contents', { repo: 'octo/demo', path: 'logo.png' })
    expect(result.structuredContent).toMatchObject({ type: 'binary', content: '' })
    expect(textOf(result)).toContain('Binary file (12 bytes)')
  })

  it('get_file_contents reads files over 1 MB through the blob API', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/contents/big.txt',
      json({
        type: 'file',
        path: 'big.txt',
        size: 2_000_000,
        sha: 'd'.repeat(40),
        encoding: 'none',
        content: '',
      }),
    )
    fake.on(
      'GET',
      `/repos/octo/demo/git/blobs/${'d'.repeat(40)}`,
      json({ sha: 'd'.repeat(40), encoding: 'base64', content: Buffer.from('big file').toString('base64') }),
    )
    const result = await call('get_file_contents', { repo: 'octo/demo', path: 'big.txt' })
    expect(result.structuredContent?.content).toBe('big file')
  })

  it('search_repositories, search_code, list_branches, list_tags and list_releases map their lists', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/search/repositories',
      json({
        total_count: 1,
        items: [
          {
            full_name: 'octo/demo',
            description: 'Demo',
            private: false,
            stargazers_count: 5,
            language: 'TypeScript',
            updated_at: '2026-01-01T00:00:00Z',
            html_url: 'https://github.com/octo/demo',
          },
        ],
      }),
    )
    fake.on(
      'GET',
      '/search/code',
      json({
        total_count: 1,
        items: [
          {
            path: 'src/a.ts',
            sha: 'a1',
            html_url: 'https://github.com/octo/demo/blob/main/src/a.ts',
            repository: { full_name: 'octo/demo' },
          },
        ],
      }),
    )
    fake.on(
      'GET',
      '/repos/octo/demo/branches',
      json([{ name: 'main', commit: { sha: 'm1' }, protected: true }]),
    )
    fake.on('GET', '/repos/octo/demo/tags', json([{ name: 'v1.0.0', commit: { sha: 't1' } }]))
    fake.on(
      'GET',
      '/repos/octo/demo/releases',
      json([
        {
          tag_name: 'v1.0.0',
          name: 'One',
          draft: false,
          prerelease: false,
          published_at: '2026-01-01T00:00:00Z',
          body: 'Notes',
          html_url: 'https://github.com/octo/demo/releases/v1.0.0',
        },
      ]),
    )
    expect(dataOf(await call('search_repositories', { query: 'demo' })).repositories[0]).toMatchObject({
      fullName: 'octo/demo',
      stars: 5,
    })
    expect(dataOf(await call('search_code', { query: 'foo repo:octo/demo' })).matches[0]).toEqual({
      repository: 'octo/demo',
      path: 'src/a.ts',
      sha: 'a1',
      url: 'https://github.com/octo/demo/blob/main/src/a.ts',
    })
    expect(dataOf(await call('list_branches', { repo: 'octo/demo' })).branches).toEqual([
      { name: 'main', sha: 'm1', protected: true },
    ])
    expect(dataOf(await call('list_tags', { repo: 'octo/demo' })).tags).toEqual([
      { name: 'v1.0.0', sha: 't1' },
    ])
    expect(dataOf(await call('list_releases', { repo: 'octo/demo' })).releases[0]).toMatchObject({
      tag: 'v1.0.0',
      notes: 'Notes',
    })
  })

  it('list_commits filters by path and author; get_commit caps the diff', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/commits', json([commit('c1', 'Fix it\n\nDetails')]))
    fake.on(
      'GET',
      '/repos/octo/demo/commits/c1',
      json({
        ...commit('c1', 'Fix it'),
        stats: { additions: 2, deletions: 1, total: 3 },
        files: [
          { filename: 'a.ts', status: 'modified', additions: 1, deletions: 1, patch: '@@ -1 +1 @@\n-a\n+b' },
          {
            filename: 'b.ts',
            status: 'added',
            additions: 1,
            deletions: 0,
            patch: `@@ -0,0 +1 @@\n+${'x'.repeat(500)}`,
          },
        ],
      }),
    )
    const commits = dataOf(
      await call('list_commits', { repo: 'octo/demo', path: 'src', author: 'octocat' }),
    ).commits
    expect(commits).toEqual([
      {
        sha: 'c1',
        message: 'Fix it\n\nDetails',
        author: 'octocat',
        date: '2026-01-01T00:00:00Z',
        url: 'https://github.com/octo/demo/commit/c1',
      },
    ])
    expect(fake.calls('GET', '/repos/octo/demo/commits')[0]?.query.get('path')).toBe('src')
    const result = await call('get_commit', { repo: 'octo/demo', sha: 'c1', max_diff_bytes: 100 })
    const data = dataOf(result)
    expect(data.files[0].patch).toBe('@@ -1 +1 @@\n-a\n+b')
    expect(data.files[1].patch).toBeUndefined()
    expect(data.diffTruncated).toBe(true)
    expect(textOf(result)).toContain('raise max_diff_bytes')
  })

  it('create_branch branches from the default branch and replays the recorded ref creation', async () => {
    const { fake, call } = await setup()
    fake.on('GET', `/repos/${FIXTURE_ORG}/git-refs`, json({ default_branch: 'main' }))
    fake.on(
      'GET',
      `/repos/${FIXTURE_ORG}/git-refs/git/ref/heads/main`,
      json((recorded('git-refs')[0]?.response as unknown[] | undefined)?.[0]),
    )
    fake.replay(recorded('git-refs').slice(1, 2))
    const result = await call('create_branch', { repo: `${FIXTURE_ORG}/git-refs`, branch: 'test' })
    expect(dataOf(result)).toEqual({ branch: 'test', sha: '0000000000000000000000000000000000000001' })
    expect(fake.calls('POST', `/repos/${FIXTURE_ORG}/git-refs/git/refs`)[0]?.body).toEqual({
      ref: 'refs/heads/test',
      sha: '0000000000000000000000000000000000000001',
    })
  })

  it('create_or_update_file replays the recorded file creation', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('create-file'))
    const result = await call('create_or_update_file', {
      repo: `${FIXTURE_ORG}/create-file`,
      path: 'test.txt',
      content: 'Test content',
      message: 'create test.txt',
    })
    expect(dataOf(result)).toMatchObject({ sha: '3f3f005b29247e51a4f4d6b8ce07b67646cd6074' })
    expect(fake.requests[0]?.body).toEqual({ message: 'create test.txt', content: 'VGVzdCBjb250ZW50' })
  })

  it('create_repository is private by default; fork_repository forks into an org', async () => {
    const { fake, call } = await setup()
    fake.on('POST', '/user/repos', (request) =>
      json(
        {
          full_name: `octocat/${(request.body as { name: string }).name}`,
          html_url: 'https://github.com/octocat/new',
          private: (request.body as { private: boolean }).private,
          default_branch: 'main',
        },
        201,
      ),
    )
    fake.on(
      'POST',
      '/orgs/acme/repos',
      json(
        {
          full_name: 'acme/new',
          html_url: 'https://github.com/acme/new',
          private: true,
          default_branch: 'main',
        },
        201,
      ),
    )
    fake.on(
      'POST',
      '/repos/octo/demo/forks',
      json({ full_name: 'acme/demo', html_url: 'https://github.com/acme/demo' }, 202),
    )
    expect(dataOf(await call('create_repository', { name: 'new' }))).toMatchObject({
      fullName: 'octocat/new',
      private: true,
    })
    expect(
      dataOf(await call('create_repository', { name: 'new', organization: 'acme', private: false })),
    ).toMatchObject({ fullName: 'acme/new' })
    expect(fake.calls('POST', '/orgs/acme/repos')[0]?.body).toMatchObject({ name: 'new', private: false })
    expect(dataOf(await call('fork_repository', { repo: 'octo/demo', organization: 'acme' }))).toEqual({
      fullName: 'acme/demo',
      url: 'https://github.com/acme/demo',
    })
    expect(fake.calls('POST', '/repos/octo/demo/forks')[0]?.body).toEqual({ organization: 'acme' })
  })
})

describe('push_files', () => {
  function gitData(fake: Awaited<ReturnType<typeof setup>>['fake']) {
    fake.on(
      'GET',
      '/repos/octo/demo/git/ref/heads/feature',
      json({ ref: 'refs/heads/feature', object: { sha: 'head1', type: 'commit' } }),
    )
    fake.on('GET', '/repos/octo/demo/git/commits/head1', json({ sha: 'head1', tree: { sha: 'tree1' } }))
    fake.on('POST', '/repos/octo/demo/git/blobs', storeBlob)
    fake.on('POST', '/repos/octo/demo/git/trees', json({ sha: 'tree2' }, 201))
    fake.on('POST', '/repos/octo/demo/git/commits', json({ sha: 'commit2' }, 201))
  }

  it('makes one commit through blobs, a tree and a fast-forward ref update', async () => {
    const { fake, call } = await setup()
    gitData(fake)
    fake.on(
      'PATCH',
      '/repos/octo/demo/git/refs/heads/feature',
      json({ ref: 'refs/heads/feature', object: { sha: 'commit2' } }),
    )
    const result = await call('push_files', {
      repo: 'octo/demo',
      branch: 'feature',
      message: 'Two files',
      files: [
        { path: 'a.txt', content: 'A' },
        { path: 'dir/b.txt', content: 'B' },
      ],
    })
    expect(dataOf(result)).toEqual({ commit: 'commit2', branch: 'feature', files: 2 })
    expect(fake.calls('POST', '/repos/octo/demo/git/trees')[0]?.body).toEqual({
      base_tree: 'tree1',
      tree: [
        // Git's names for the blobs "A" and "B", as GitHub answers them.
        { path: 'a.txt', mode: '100644', type: 'blob', sha: '8c7e5a667f1b771847fe88c01c3de34413a1b220' },
        { path: 'dir/b.txt', mode: '100644', type: 'blob', sha: '7371f47a6f8bd23a8fa1a8b2a9479cdd76380e54' },
      ],
    })
    expect(fake.calls('POST', '/repos/octo/demo/git/commits')[0]?.body).toEqual({
      message: 'Two files',
      tree: 'tree2',
      parents: ['head1'],
    })
    expect(fake.calls('PATCH', '/repos/octo/demo/git/refs/heads/feature')[0]?.body).toEqual({
      sha: 'commit2',
      force: false,
    })
  })

  it('gives conflict when the branch moved, and never forces', async () => {
    const { fake, call } = await setup()
    gitData(fake)
    fake.on(
      'PATCH',
      '/repos/octo/demo/git/refs/heads/feature',
      json(
        {
          message: 'Update is not a fast forward',
          documentation_url: 'https://docs.github.com/rest/git/refs#update-a-reference',
        },
        422,
      ),
    )
    const result = await call('push_files', {
      repo: 'octo/demo',
      branch: 'feature',
      message: 'm',
      files: [{ path: 'a.txt', content: 'A' }],
    })
    expect(errorKind(result)).toBe('conflict')
    expect(textOf(result)).toContain('Branch feature moved since head1')
    const updates = fake.calls('PATCH', '/repos/octo/demo/git/refs/heads/feature')
    expect(updates).toHaveLength(1)
    expect(updates[0]?.body).toMatchObject({ force: false })
  })

  it('refuses unclean and duplicate paths before any request', async () => {
    const { fake, call } = await setup()
    const traversal = await call('push_files', {
      repo: 'octo/demo',
      branch: 'f',
      message: 'm',
      files: [{ path: '../x', content: '' }],
    })
    expect(errorKind(traversal)).toBe('invalid_argument')
    const twice = await call('push_files', {
      repo: 'octo/demo',
      branch: 'f',
      message: 'm',
      files: [
        { path: 'a', content: '' },
        { path: '/a', content: '' },
      ],
    })
    expect(textOf(twice)).toContain('given twice')
    expect(fake.requests).toHaveLength(0)
  })
})
