import { afterEach, describe, expect, it } from 'vitest'
import { recorded } from './fake-github.js'
import { checkRun, comment, issue, link, pull, user } from './fixtures.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const FIXTURE_ORG = 'octokit-fixture-org'

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

  it('get_pull_request_files pages and caps patches', async () => {
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
    const missing = await call('merge_pull_request', { repo: 'octo/demo', pull_number: 6 })
    expect(errorKind(missing)).toBe('invalid_argument')
    expect(textOf(missing)).toMatch(/merge_method/)
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
