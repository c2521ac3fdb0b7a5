import { afterEach, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN, recorded } from './fake-github.js'
import { checkRun, comment, commit, issue, job, link, pull, run, user } from './fixtures.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const FIXTURE_ORG = 'octokit-fixture-org'

describe('context and users', () => {
  it('get_me returns the authenticated login', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/user', json({ ...user('octocat'), name: 'The Octocat' }))
    const result = await call('get_me')
    expect(result.structuredContent).toEqual({
      login: 'octocat',
      name: 'The Octocat',
      type: 'User',
      url: 'https://github.com/octocat',
    })
    expect(fake.requests[0]?.authorization).toBe(`token ${RECORDED_TOKEN}`)
  })

  it('search_users passes the query and page', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/search/users', json({ total_count: 1, items: [user('mona')] }))
    const data = dataOf(await call('search_users', { query: 'location:Oslo', page: 2, per_page: 5 }))
    expect(data).toEqual({
      total: 1,
      users: [{ login: 'mona', type: 'User', url: 'https://github.com/mona' }],
      hasMore: false,
    })
    const request = fake.calls('GET', '/search/users')[0]
    expect([request?.query.get('q'), request?.query.get('page'), request?.query.get('per_page')]).toEqual([
      'location:Oslo',
      '2',
      '5',
    ])
  })
})

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
    let blobs = 0
    fake.on(
      'GET',
      '/repos/octo/demo/git/ref/heads/feature',
      json({ ref: 'refs/heads/feature', object: { sha: 'head1', type: 'commit' } }),
    )
    fake.on('GET', '/repos/octo/demo/git/commits/head1', json({ sha: 'head1', tree: { sha: 'tree1' } }))
    fake.on('POST', '/repos/octo/demo/git/blobs', () => json({ sha: `blob${++blobs}` }, 201))
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
        { path: 'a.txt', mode: '100644', type: 'blob', sha: 'blob1' },
        { path: 'dir/b.txt', mode: '100644', type: 'blob', sha: 'blob2' },
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

describe('issues', () => {
  it('list_issues reads the recorded first page and says more are available', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('paginate-issues').slice(0, 1))
    const result = await call('list_issues', { repo: `${FIXTURE_ORG}/paginate-issues`, per_page: 3 })
    const data = dataOf(result)
    expect(data.issues.map((entry: { number: number }) => entry.number)).toEqual([13, 12, 11])
    expect(data.hasMore).toBe(true)
    expect(textOf(result)).toContain('More available: call again with page 2.')
  })

  it('list_issues on the last page says nothing more, and passes filters', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/issues',
      json([issue(1), issue(2, { pull: true })], 200, {
        link: link('/repos/octo/demo/issues', undefined, 2),
      }),
    )
    const result = await call('list_issues', {
      repo: 'octo/demo',
      state: 'closed',
      labels: ['bug', 'ui'],
      page: 2,
    })
    const data = dataOf(result)
    expect(data.hasMore).toBe(false)
    expect(data.issues[1]).toMatchObject({ number: 2, pullRequest: true })
    const query = fake.requests[0]?.query
    expect([query?.get('state'), query?.get('labels'), query?.get('page')]).toEqual(['closed', 'bug,ui', '2'])
    expect(textOf(result)).not.toContain('More available')
  })

  it('search_issues reads the recorded search', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('search-issues'))
    const data = dataOf(await call('search_issues', { query: `sesame repo:${FIXTURE_ORG}/search-issues` }))
    expect(data.total).toBe(2)
    expect(data.issues[0]).toMatchObject({
      repository: `${FIXTURE_ORG}/search-issues`,
      number: 2,
      author: 'octokit-fixture-user-b',
    })
  })

  it('get_issue includes the body; list_issue_comments the comments', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/issues/7', json(issue(7, { body: 'Steps to reproduce' })))
    fake.on('GET', '/repos/octo/demo/issues/7/comments', json([comment(1, 'mona', 'Same here')]))
    expect(dataOf(await call('get_issue', { repo: 'octo/demo', issue_number: 7 })).issue).toMatchObject({
      number: 7,
      body: 'Steps to reproduce',
      labels: ['bug'],
    })
    expect(
      dataOf(await call('list_issue_comments', { repo: 'octo/demo', issue_number: 7 })).comments,
    ).toEqual([{ id: 1, author: 'mona', createdAt: '2026-01-03T00:00:00Z', body: 'Same here' }])
  })

  it('create_issue replays the recorded creation', async () => {
    const { fake, call } = await setup()
    fake.replay(recorded('add-labels-to-issue').slice(0, 1))
    const data = dataOf(
      await call('create_issue', {
        repo: `${FIXTURE_ORG}/add-labels-to-issue`,
        title: 'Issue without a label',
      }),
    )
    expect(data).toEqual({ number: 1, url: `https://github.com/${FIXTURE_ORG}/add-labels-to-issue/issues/1` })
  })

  it('update_issue sends only the given fields; add_issue_comment posts', async () => {
    const { fake, call } = await setup()
    fake.on('PATCH', '/repos/octo/demo/issues/3', json({ ...issue(3), state: 'closed' }))
    fake.on('POST', '/repos/octo/demo/issues/3/comments', json(comment(9, 'octocat', 'Thanks'), 201))
    expect(
      dataOf(
        await call('update_issue', {
          repo: 'octo/demo',
          issue_number: 3,
          state: 'closed',
          state_reason: 'completed',
        }),
      ),
    ).toMatchObject({ number: 3, state: 'closed' })
    expect(fake.calls('PATCH', '/repos/octo/demo/issues/3')[0]?.body).toEqual({
      state: 'closed',
      state_reason: 'completed',
    })
    expect(
      dataOf(await call('add_issue_comment', { repo: 'octo/demo', issue_number: 3, body: 'Thanks' })),
    ).toMatchObject({ id: 9 })
  })
})

describe('pull requests', () => {
  it('list_pull_requests and get_pull_request', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/pulls', json([pull(5)]))
    fake.on('GET', '/repos/octo/demo/pulls/5', json(pull(5, { body: 'Adds a thing' })))
    expect(
      dataOf(await call('list_pull_requests', { repo: 'octo/demo', base: 'main' })).pullRequests[0],
    ).toMatchObject({ number: 5, head: 'feature', base: 'main' })
    expect(fake.requests[0]?.query.get('base')).toBe('main')
    expect(
      dataOf(await call('get_pull_request', { repo: 'octo/demo', pull_number: 5 })).pullRequest,
    ).toMatchObject({ body: 'Adds a thing', mergeable: true, head: { sha: 'a'.repeat(40) } })
  })

  it('get_pull_request_files pages and caps patches; get_pull_request_diff asks for the diff media type and caps', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/pulls/5/files',
      json(
        [{ filename: 'a.ts', status: 'modified', additions: 1, deletions: 1, patch: 'p'.repeat(9000) }],
        200,
        { link: link('/repos/octo/demo/pulls/5/files', 2, 3) },
      ),
    )
    const files = dataOf(await call('get_pull_request_files', { repo: 'octo/demo', pull_number: 5 }))
    expect(files.hasMore).toBe(true)
    expect(files.files[0].patch).toContain('[truncated: 1000 more characters]')
    const diff = 'diff --git a/a.ts b/a.ts\n'.repeat(10)
    fake.on('GET', '/repos/octo/demo/pulls/5', (request) =>
      request.accept?.includes('diff')
        ? { body: diff, headers: { 'content-type': 'text/plain; charset=utf-8' } }
        : json(pull(5)),
    )
    const first = await call('get_pull_request_diff', { repo: 'octo/demo', pull_number: 5, max_chars: 50 })
    expect(first.structuredContent).toEqual({ diff: diff.slice(0, 50), length: diff.length, nextOffset: 50 })
    const rest = await call('get_pull_request_diff', {
      repo: 'octo/demo',
      pull_number: 5,
      offset: 50,
      max_chars: 1000,
    })
    expect(rest.structuredContent?.diff).toBe(diff.slice(50))
  })

  it('get_pull_request_comments and get_pull_request_reviews', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/pulls/5/comments',
      json([{ ...comment(4, 'mona', 'Nit'), path: 'a.ts', line: 3, in_reply_to_id: 2 }]),
    )
    fake.on(
      'GET',
      '/repos/octo/demo/pulls/5/reviews',
      json([
        { id: 8, user: user('mona'), state: 'APPROVED', body: 'LGTM', submitted_at: '2026-01-04T00:00:00Z' },
      ]),
    )
    expect(
      dataOf(await call('get_pull_request_comments', { repo: 'octo/demo', pull_number: 5 })).comments,
    ).toEqual([{ id: 4, author: 'mona', path: 'a.ts', line: 3, inReplyTo: 2, body: 'Nit' }])
    expect(
      dataOf(await call('get_pull_request_reviews', { repo: 'octo/demo', pull_number: 5 })).reviews,
    ).toEqual([
      { id: 8, author: 'mona', state: 'APPROVED', submittedAt: '2026-01-04T00:00:00Z', body: 'LGTM' },
    ])
  })

  it('create_pull_request, create_pull_request_review with line comments, update_pull_request_branch', async () => {
    const { fake, call } = await setup()
    fake.on('POST', '/repos/octo/demo/pulls', json(pull(6), 201))
    fake.on(
      'POST',
      '/repos/octo/demo/pulls/6/reviews',
      json({ id: 11, state: 'CHANGES_REQUESTED', html_url: 'https://github.com/octo/demo/pull/6#review-11' }),
    )
    fake.on(
      'PUT',
      '/repos/octo/demo/pulls/6/update-branch',
      json({ message: 'Updating pull request branch.', url: 'https://github.com/octo/demo/pull/6' }, 202),
    )
    expect(
      dataOf(
        await call('create_pull_request', {
          repo: 'octo/demo',
          title: 'T',
          head: 'feature',
          base: 'main',
          draft: true,
        }),
      ),
    ).toEqual({ number: 6, url: 'https://github.com/octo/demo/pull/6' })
    expect(fake.calls('POST', '/repos/octo/demo/pulls')[0]?.body).toEqual({
      title: 'T',
      head: 'feature',
      base: 'main',
      draft: true,
    })
    const comments = [{ path: 'a.ts', line: 4, start_line: 2, body: 'Rename' }]
    expect(
      dataOf(
        await call('create_pull_request_review', {
          repo: 'octo/demo',
          pull_number: 6,
          event: 'REQUEST_CHANGES',
          comments,
        }),
      ),
    ).toMatchObject({ id: 11 })
    expect(fake.calls('POST', '/repos/octo/demo/pulls/6/reviews')[0]?.body).toEqual({
      event: 'REQUEST_CHANGES',
      comments,
    })
    const empty = await call('create_pull_request_review', {
      repo: 'octo/demo',
      pull_number: 6,
      event: 'REQUEST_CHANGES',
    })
    expect(errorKind(empty)).toBe('invalid_argument')
    expect(
      dataOf(
        await call('update_pull_request_branch', {
          repo: 'octo/demo',
          pull_number: 6,
          expected_head_sha: 'abc',
        }),
      ),
    ).toEqual({ message: 'Updating pull request branch.' })
  })

  it('merge_pull_request sends the method it was given', async () => {
    const { fake, call } = await setup()
    fake.on(
      'PUT',
      '/repos/octo/demo/pulls/6/merge',
      json({ merged: true, sha: 'm1', message: 'Pull Request successfully merged' }),
    )
    expect(
      dataOf(
        await call('merge_pull_request', {
          repo: 'octo/demo',
          pull_number: 6,
          merge_method: 'squash',
          sha: 'a'.repeat(40),
        }),
      ),
    ).toEqual({ merged: true, sha: 'm1', message: 'Pull Request successfully merged' })
    expect(fake.requests[0]?.body).toEqual({ merge_method: 'squash', sha: 'a'.repeat(40) })
    await expect(call('merge_pull_request', { repo: 'octo/demo', pull_number: 6 })).rejects.toThrow(
      /merge_method/,
    )
  })

  it('get_pull_request_status follows check-run pages and reads the recorded combined status', async () => {
    const { fake, call } = await setup()
    const sha = '0000000000000000000000000000000000000001'
    const repo = `${FIXTURE_ORG}/create-status`
    fake.on('GET', `/repos/${repo}/pulls/1`, json(pull(1, { sha })))
    const checksPath = `/repos/${repo}/commits/${sha}/check-runs`
    fake.on('GET', checksPath, (request) =>
      request.query.get('page') === '2'
        ? json({ total_count: 2, check_runs: [checkRun('lint', 'completed', 'failure')] }, 200, {
            link: link(checksPath, undefined, 2),
          })
        : json({ total_count: 2, check_runs: [checkRun('test', 'completed', 'success')] }, 200, {
            link: link(checksPath, 2, 2),
          }),
    )
    fake.replay(recorded('create-status').slice(3, 4))
    const data = dataOf(await call('get_pull_request_status', { repo, pull_number: 1 }))
    expect(data.checks.map((check: { name: string }) => check.name)).toEqual(['test', 'lint'])
    expect(data.statuses.map((status: { context: string }) => status.context)).toEqual([
      'example/1',
      'example/2',
    ])
    expect(data.state).toBe('failure')
    expect(fake.calls('GET', checksPath).map((request) => request.query.get('page'))).toEqual([null, '2'])
  })
})

describe('actions', () => {
  it('list_workflow_runs by workflow file; get_workflow_run with jobs across pages', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/actions/workflows/ci.yml/runs',
      json({ total_count: 1, workflow_runs: [run(77, 'failure')] }),
    )
    fake.on('GET', '/repos/octo/demo/actions/runs/77', json(run(77, 'failure')))
    const jobsPath = '/repos/octo/demo/actions/runs/77/jobs'
    fake.on('GET', jobsPath, (request) =>
      request.query.get('page') === '2'
        ? json({ total_count: 2, jobs: [job(2, 'test', 'failure', [['Run tests', 'failure']])] }, 200, {
            link: link(jobsPath, undefined, 2),
          })
        : json({ total_count: 2, jobs: [job(1, 'lint', 'success', [['Lint', 'success']])] }, 200, {
            link: link(jobsPath, 2, 2),
          }),
    )
    const runs = dataOf(
      await call('list_workflow_runs', { repo: 'octo/demo', workflow: 'ci.yml', status: 'failure' }),
    )
    expect(runs.runs[0]).toMatchObject({ id: 77, conclusion: 'failure', title: 'Fix the build' })
    expect(fake.requests[0]?.query.get('status')).toBe('failure')
    const detail = dataOf(await call('get_workflow_run', { repo: 'octo/demo', run_id: 77 }))
    expect(detail.jobs).toEqual([
      { id: 1, name: 'lint', status: 'completed', conclusion: 'success', failedSteps: [] },
      { id: 2, name: 'test', status: 'completed', conclusion: 'failure', failedSteps: ['Run tests'] },
    ])
  })

  it('get_job_logs gives the tails of the failed jobs only, following the log redirect', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/actions/runs/77/jobs',
      json({ total_count: 2, jobs: [job(1, 'lint', 'success'), job(2, 'test', 'failure')] }),
    )
    const log = Array.from({ length: 300 }, (_, index) => `line ${index + 1}`).join('\n')
    fake.on('GET', '/repos/octo/demo/actions/jobs/2/logs', () => ({
      status: 302,
      headers: { location: `${fake.url}/storage/logs/2.txt` },
    }))
    fake.on('GET', '/storage/logs/2.txt', { body: log, headers: { 'content-type': 'text/plain' } })
    const data = dataOf(await call('get_job_logs', { repo: 'octo/demo', run_id: 77, tail_lines: 3 }))
    expect(data.logs).toEqual([
      { job: 'test', jobId: 2, conclusion: 'failure', lines: 300, tail: 'line 298\nline 299\nline 300' },
    ])
    expect(fake.calls('GET', '/repos/octo/demo/actions/jobs/1/logs')).toHaveLength(0)
  })

  it('get_job_logs caps a tail of very long lines', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/actions/jobs/6', json(job(6, 'bundle', 'failure')))
    fake.on('GET', '/repos/octo/demo/actions/jobs/6/logs', {
      body: `${'x'.repeat(50_000)}\nError: boom\n`,
      headers: { 'content-type': 'text/plain' },
    })
    const tail = dataOf(await call('get_job_logs', { repo: 'octo/demo', job_id: 6, tail_lines: 2 })).logs[0]
      .tail as string
    expect(tail.length).toBeLessThan(30_100)
    expect(tail).toMatch(/^\[…20\d\d\d earlier characters cut\]/)
    expect(tail.endsWith('Error: boom')).toBe(true)
  })

  it('get_job_logs takes one job_id, and refuses both or neither', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/actions/jobs/5', json(job(5, 'build', 'success')))
    fake.on('GET', '/repos/octo/demo/actions/jobs/5/logs', {
      body: 'ok\n',
      headers: { 'content-type': 'text/plain' },
    })
    expect(dataOf(await call('get_job_logs', { repo: 'octo/demo', job_id: 5 })).logs[0]).toMatchObject({
      job: 'build',
      tail: 'ok',
    })
    expect(errorKind(await call('get_job_logs', { repo: 'octo/demo' }))).toBe('invalid_argument')
    expect(errorKind(await call('get_job_logs', { repo: 'octo/demo', job_id: 5, run_id: 1 }))).toBe(
      'invalid_argument',
    )
  })
})

describe('arguments', () => {
  it('refuses a repo that is not owner/name, naming the field', async () => {
    const { fake, call } = await setup()
    await expect(call('get_repository', { repo: 'just-a-name' })).rejects.toThrow(/repo: must be owner\/name/)
    expect(fake.requests).toHaveLength(0)
  })
})
