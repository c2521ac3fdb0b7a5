/**
 * Hand-written GitHub REST responses for the calls `@octokit/fixtures` has no recording of, in the
 * recordings' shape (field names and nesting as api.github.com sends them; only the fields the
 * server reads, plus the URLs).
 */
const API = 'https://api.github.com'
const WEB = 'https://github.com'

export const user = (login: string, type = 'User') => ({
  login,
  id: 1000,
  type,
  url: `${API}/users/${login}`,
  html_url: `${WEB}/${login}`,
})

export function issue(
  number: number,
  options: { author?: string; title?: string; body?: string; pull?: boolean; repo?: string } = {},
) {
  const repo = options.repo ?? 'octo/demo'
  return {
    url: `${API}/repos/${repo}/issues/${number}`,
    repository_url: `${API}/repos/${repo}`,
    html_url: `${WEB}/${repo}/issues/${number}`,
    number,
    title: options.title ?? `Issue ${number}`,
    state: 'open',
    user: user(options.author ?? 'octocat'),
    labels: [{ name: 'bug' }],
    assignees: [],
    comments: 1,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-02T00:00:00Z',
    body: options.body ?? 'Body text',
    ...(options.pull ? { pull_request: { url: `${API}/repos/${repo}/pulls/${number}` } } : {}),
  }
}

export function pull(
  number: number,
  options: { author?: string; title?: string; body?: string; sha?: string } = {},
) {
  return {
    url: `${API}/repos/octo/demo/pulls/${number}`,
    html_url: `${WEB}/octo/demo/pull/${number}`,
    number,
    title: options.title ?? `PR ${number}`,
    state: 'open',
    draft: false,
    merged: false,
    mergeable: true,
    mergeable_state: 'clean',
    user: user(options.author ?? 'octocat'),
    body: options.body ?? 'PR body',
    head: { ref: 'feature', sha: options.sha ?? 'a'.repeat(40), repo: { full_name: 'octo/demo' } },
    base: { ref: 'main', sha: 'b'.repeat(40) },
    commits: 2,
    additions: 10,
    deletions: 3,
    changed_files: 2,
    labels: [{ name: 'enhancement' }],
    updated_at: '2026-01-02T00:00:00Z',
  }
}

export function comment(id: number, author: string, body: string) {
  return {
    id,
    user: user(author),
    body,
    created_at: '2026-01-03T00:00:00Z',
    html_url: `${WEB}/octo/demo/issues/1#issuecomment-${id}`,
  }
}

export function commit(sha: string, message: string) {
  return {
    sha,
    html_url: `${WEB}/octo/demo/commit/${sha}`,
    commit: {
      message,
      author: { name: 'Octo Cat', date: '2026-01-01T00:00:00Z' },
      tree: { sha: 't'.repeat(40) },
    },
    author: user('octocat'),
    parents: [{ sha: 'p'.repeat(40) }],
  }
}

export function job(
  id: number,
  name: string,
  conclusion: string | null,
  steps: Array<[string, string]> = [],
) {
  return {
    id,
    name,
    status: 'completed',
    conclusion,
    steps: steps.map(([stepName, stepConclusion], index) => ({
      name: stepName,
      conclusion: stepConclusion,
      number: index + 1,
    })),
  }
}

export function run(id: number, conclusion: string) {
  return {
    id,
    name: 'CI',
    display_title: 'Fix the build',
    status: 'completed',
    conclusion,
    head_branch: 'main',
    head_sha: 'c'.repeat(40),
    event: 'push',
    run_attempt: 1,
    created_at: '2026-01-01T00:00:00Z',
    html_url: `${WEB}/octo/demo/actions/runs/${id}`,
  }
}

export function checkRun(name: string, status: string, conclusion: string | null) {
  return {
    name,
    status,
    conclusion,
    html_url: `${WEB}/octo/demo/runs/1`,
    details_url: `${WEB}/octo/demo/actions/runs/77/job/1`,
  }
}

/** A `Link` header as GitHub writes it (absolute api.github.com URLs; the fake rewrites them). */
export function link(path: string, next: number | undefined, last: number) {
  const parts = []
  if (next !== undefined) parts.push(`<${API}${path}?per_page=100&page=${next}>; rel="next"`)
  parts.push(`<${API}${path}?per_page=100&page=${last}>; rel="last"`)
  return parts.join(', ')
}
