import { type FakeGitHub, storeBlob, storeFile } from './fake-github.js'
import { checkRun, comment, commit, issue, job, pull, run, user } from './fixtures.js'
import { json } from './helpers.js'

const REPO = '/repos/octo/demo'
const WEB = 'https://github.com/octo/demo'
const SHA = 'a'.repeat(40)

/** One fake repository that answers every tool, in GitHub's shapes (see fixtures.ts). */
export function world(fake: FakeGitHub): void {
  const page = (items: unknown[]) => json(items, 200, {})
  fake.on('GET', '/user', json({ ...user('octocat'), name: 'The Octocat' }))
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
          stargazers_count: 3,
          language: 'TypeScript',
          updated_at: '2026-01-01T00:00:00Z',
          html_url: WEB,
        },
      ],
    }),
  )
  fake.on(
    'GET',
    REPO,
    json({
      full_name: 'octo/demo',
      description: null,
      private: false,
      fork: false,
      archived: false,
      default_branch: 'main',
      language: null,
      stargazers_count: 3,
      forks_count: 1,
      open_issues_count: 2,
      topics: ['mcp'],
      pushed_at: '2026-01-01T00:00:00Z',
      permissions: { admin: false, push: true, pull: true },
      html_url: WEB,
    }),
  )
  fake.on(
    'GET',
    `${REPO}/contents/README.md`,
    json({
      type: 'file',
      path: 'README.md',
      sha: 'f1',
      size: 6,
      encoding: 'base64',
      content: Buffer.from('# Demo').toString('base64'),
    }),
  )
  fake.on('GET', `${REPO}/branches`, page([{ name: 'main', commit: { sha: SHA }, protected: true }]))
  fake.on('GET', `${REPO}/git/ref/heads/main`, json({ ref: 'refs/heads/main', object: { sha: SHA } }))
  fake.on('POST', `${REPO}/git/refs`, json({ ref: 'refs/heads/topic', object: { sha: SHA } }, 201))
  fake.on('GET', `${REPO}/commits`, page([commit('c1', 'First')]))
  fake.on(
    'GET',
    `${REPO}/commits/c1`,
    json({
      ...commit('c1', 'First'),
      stats: { additions: 1, deletions: 0, total: 1 },
      files: [{ filename: 'a.ts', status: 'added', additions: 1, deletions: 0, patch: '+a' }],
    }),
  )
  fake.on('PUT', `${REPO}/contents/notes.txt`, storeFile('c2', `${WEB}/blob/main/notes.txt`))
  fake.on(
    'GET',
    `${REPO}/git/ref/heads/feature`,
    json({ ref: 'refs/heads/feature', object: { sha: 'head1' } }),
  )
  fake.on('GET', `${REPO}/git/commits/head1`, json({ sha: 'head1', tree: { sha: 'tree1' } }))
  fake.on('POST', `${REPO}/git/blobs`, storeBlob)
  fake.on('POST', `${REPO}/git/trees`, json({ sha: 'tree2' }, 201))
  fake.on('POST', `${REPO}/git/commits`, json({ sha: 'commit2' }, 201))
  fake.on(
    'PATCH',
    `${REPO}/git/refs/heads/feature`,
    json({ ref: 'refs/heads/feature', object: { sha: 'commit2' } }),
  )
  fake.on(
    'POST',
    '/user/repos',
    json(
      {
        full_name: 'octocat/new',
        html_url: 'https://github.com/octocat/new',
        private: true,
        default_branch: 'main',
      },
      201,
    ),
  )
  fake.on(
    'POST',
    `${REPO}/forks`,
    json({ full_name: 'octocat/demo', html_url: 'https://github.com/octocat/demo' }, 202),
  )
  fake.on(
    'GET',
    '/search/code',
    json({
      total_count: 1,
      items: [
        {
          repository: { full_name: 'octo/demo' },
          path: 'a.ts',
          sha: 'b1',
          html_url: `${WEB}/blob/main/a.ts`,
        },
      ],
    }),
  )
  fake.on('GET', `${REPO}/tags`, page([{ name: 'v1.0.0', commit: { sha: SHA } }]))
  fake.on(
    'GET',
    `${REPO}/releases`,
    page([
      {
        tag_name: 'v1.0.0',
        name: null,
        draft: false,
        prerelease: false,
        published_at: '2026-01-01T00:00:00Z',
        body: 'Notes',
        html_url: `${WEB}/releases/v1.0.0`,
      },
    ]),
  )
  fake.on('GET', `${REPO}/issues`, page([issue(3), issue(5, { pull: true })]))
  fake.on('GET', `${REPO}/issues/3`, json(issue(3)))
  fake.on('GET', '/search/issues', json({ total_count: 1, items: [issue(3)] }))
  fake.on('POST', `${REPO}/issues`, json(issue(4), 201))
  fake.on('PATCH', `${REPO}/issues/3`, json({ ...issue(3), state: 'closed' }))
  fake.on('POST', `${REPO}/issues/3/comments`, json(comment(9, 'octocat', 'Thanks'), 201))
  fake.on('GET', `${REPO}/issues/3/comments`, page([comment(9, 'octocat', 'Thanks')]))
  fake.on('GET', `${REPO}/pulls`, page([pull(5)]))
  fake.on('GET', `${REPO}/pulls/5`, (request) =>
    request.accept?.includes('diff')
      ? { body: 'diff --git a/a.ts b/a.ts\n+a\n', headers: { 'content-type': 'text/plain; charset=utf-8' } }
      : json(pull(5, { sha: SHA })),
  )
  fake.on(
    'GET',
    `${REPO}/pulls/5/files`,
    page([{ filename: 'a.ts', status: 'modified', additions: 1, deletions: 1, patch: '-a\n+b' }]),
  )
  fake.on(
    'GET',
    `${REPO}/commits/${SHA}/check-runs`,
    json({ total_count: 1, check_runs: [checkRun('build', 'completed', 'success')] }),
  )
  fake.on(
    'GET',
    `${REPO}/commits/${SHA}/status`,
    json({
      state: 'success',
      statuses: [{ context: 'ci', state: 'success', description: 'ok', target_url: WEB }],
    }),
  )
  fake.on('GET', `${REPO}/pulls/5/comments`, page([{ ...comment(4, 'mona', 'Nit'), path: 'a.ts', line: 3 }]))
  fake.on(
    'GET',
    `${REPO}/pulls/5/reviews`,
    page([
      { id: 8, user: user('mona'), state: 'APPROVED', body: 'LGTM', submitted_at: '2026-01-04T00:00:00Z' },
    ]),
  )
  fake.on('POST', `${REPO}/pulls`, json(pull(6), 201))
  fake.on(
    'POST',
    `${REPO}/pulls/5/reviews`,
    json({ id: 11, state: 'APPROVED', html_url: `${WEB}/pull/5#review-11` }),
  )
  fake.on(
    'PUT',
    `${REPO}/pulls/5/merge`,
    json({ merged: true, sha: 'm1', message: 'Pull Request successfully merged' }),
  )
  fake.on(
    'PUT',
    `${REPO}/pulls/5/update-branch`,
    json({ message: 'Updating pull request branch.', url: WEB }, 202),
  )
  fake.on('GET', `${REPO}/actions/runs`, json({ total_count: 1, workflow_runs: [run(77, 'failure')] }))
  fake.on('GET', `${REPO}/actions/runs/77`, json(run(77, 'failure')))
  fake.on(
    'GET',
    `${REPO}/actions/runs/77/jobs`,
    json({
      total_count: 2,
      jobs: [job(1, 'lint', 'success'), job(2, 'test', 'failure', [['Run tests', 'failure']])],
    }),
  )
  fake.on('GET', `${REPO}/actions/jobs/2/logs`, {
    body: 'one\ntwo\n',
    headers: { 'content-type': 'text/plain' },
  })
  fake.on('GET', '/search/users', json({ total_count: 1, items: [user('mona')] }))
}

const repo = 'octo/demo'
export const calls: Array<[string, Record<string, unknown>]> = [
  ['get_me', {}],
  ['search_repositories', { query: 'demo' }],
  ['get_repository', { repo }],
  ['get_file_contents', { repo, path: 'README.md' }],
  ['list_branches', { repo }],
  ['create_branch', { repo, branch: 'topic', from_branch: 'main' }],
  ['list_commits', { repo }],
  ['get_commit', { repo, sha: 'c1' }],
  ['create_or_update_file', { repo, path: 'notes.txt', content: 'hi', message: 'Add notes' }],
  ['push_files', { repo, branch: 'feature', message: 'One file', files: [{ path: 'a.txt', content: 'A' }] }],
  ['create_repository', { name: 'new' }],
  ['fork_repository', { repo }],
  ['search_code', { query: 'foo repo:octo/demo' }],
  ['list_tags', { repo }],
  ['list_releases', { repo }],
  ['list_issues', { repo }],
  ['get_issue', { repo, issue_number: 3 }],
  ['search_issues', { query: 'repo:octo/demo crash' }],
  ['create_issue', { repo, title: 'New' }],
  ['update_issue', { repo, issue_number: 3, state: 'closed' }],
  ['add_issue_comment', { repo, issue_number: 3, body: 'Thanks' }],
  ['list_issue_comments', { repo, issue_number: 3 }],
  ['list_pull_requests', { repo }],
  ['get_pull_request', { repo, pull_number: 5 }],
  ['get_pull_request_files', { repo, pull_number: 5 }],
  ['get_pull_request_diff', { repo, pull_number: 5 }],
  ['get_pull_request_status', { repo, pull_number: 5 }],
  ['get_pull_request_comments', { repo, pull_number: 5 }],
  ['get_pull_request_reviews', { repo, pull_number: 5 }],
  ['create_pull_request', { repo, title: 'T', head: 'feature', base: 'main' }],
  ['create_pull_request_review', { repo, pull_number: 5, event: 'APPROVE', body: 'LGTM' }],
  ['merge_pull_request', { repo, pull_number: 5, merge_method: 'squash' }],
  ['update_pull_request_branch', { repo, pull_number: 5 }],
  ['list_workflow_runs', { repo }],
  ['get_workflow_run', { repo, run_id: 77 }],
  ['get_job_logs', { repo, run_id: 77 }],
  ['search_users', { query: 'mona' }],
]
