import type { FakeGitHub, FakeRequest } from './fake-github.js'
import { checkRun, comment, commit, issue, pull, user } from './fixtures.js'
import { json } from './helpers.js'

/**
 * The endpoints of the toolsets beyond the reference server's, answering in GitHub's shapes
 * (field names and nesting as api.github.com sends them), REST and GraphQL.
 */

const REPO = '/repos/octo/demo'
const WEB = 'https://github.com/octo/demo'
const API = 'https://api.github.com'
const SHA = 'a'.repeat(40)
export const SECRET = 'ghp_leakedLeakedLeakedLeakedLeaked0123'

const label = (name: string) => ({
  id: 1,
  name,
  color: 'd73a4a',
  description: `${name} label`,
  default: false,
})
const release = (tag: string) => ({
  tag_name: tag,
  name: `Release ${tag}`,
  draft: false,
  prerelease: false,
  published_at: '2026-01-01T00:00:00Z',
  body: 'Notes',
  html_url: `${WEB}/releases/${tag}`,
  assets: [{ name: 'app.zip', size: 10, browser_download_url: `${WEB}/releases/download/${tag}/app.zip` }],
})
const thread = (id: string) => ({
  id,
  unread: true,
  reason: 'mention',
  updated_at: '2026-01-02T00:00:00Z',
  subject: { title: 'Crash on start', type: 'Issue', url: `${API}/repos/octo/demo/issues/3` },
  repository: { full_name: 'octo/demo' },
})
const advisory = (ghsa: string) => ({
  ghsa_id: ghsa,
  cve_id: 'CVE-2026-0001',
  summary: 'Prototype pollution',
  description: 'Long description',
  severity: 'high',
  state: 'published',
  published_at: '2026-01-01T00:00:00Z',
  html_url: `https://github.com/advisories/${ghsa}`,
  vulnerabilities: [
    {
      package: { ecosystem: 'npm', name: 'lodash' },
      vulnerable_version_range: '< 4.17.21',
      first_patched_version: '4.17.21',
    },
  ],
  cvss: { score: 7.5 },
  cwes: [{ cwe_id: 'CWE-1321' }],
})
const codeAlert = {
  number: 1,
  state: 'open',
  rule: { id: 'js/xss', severity: 'error', security_severity_level: 'high', description: 'XSS' },
  tool: { name: 'CodeQL' },
  most_recent_instance: {
    ref: 'refs/heads/main',
    location: { path: 'a.ts', start_line: 3 },
    message: { text: 'Unsafe HTML' },
  },
  created_at: '2026-01-01T00:00:00Z',
  html_url: `${WEB}/security/code-scanning/1`,
}
const dependabotAlert = {
  number: 2,
  state: 'open',
  dependency: { package: { ecosystem: 'npm', name: 'lodash' }, manifest_path: 'package.json' },
  security_advisory: {
    ghsa_id: 'GHSA-jf85-cpcp-j695',
    cve_id: 'CVE-2019-10744',
    summary: 'Prototype pollution',
    severity: 'critical',
    description: 'Details',
  },
  security_vulnerability: {
    vulnerable_version_range: '< 4.17.12',
    first_patched_version: { identifier: '4.17.12' },
  },
  created_at: '2026-01-01T00:00:00Z',
  html_url: `${WEB}/security/dependabot/2`,
}
const secretAlert = {
  number: 3,
  state: 'open',
  secret_type: 'github_personal_access_token',
  secret_type_display_name: 'GitHub Personal Access Token',
  secret: SECRET,
  resolution: null,
  validity: 'active',
  publicly_leaked: false,
  push_protection_bypassed: false,
  created_at: '2026-01-01T00:00:00Z',
  html_url: `${WEB}/security/secret-scanning/3`,
}

/** GraphQL answers by the query's first field, as GitHub nests them. */
export function graphqlAnswer(request: FakeRequest): { status: number; body: unknown } {
  const { query, variables } = request.body as { query: string; variables: Record<string, unknown> }
  const pageInfo = { hasNextPage: false, endCursor: null }
  const author = { login: 'octocat' }
  const answer = (data: unknown) => ({ status: 200, body: { data } })
  if (query.includes('discussions(')) {
    return answer({
      repository: {
        discussions: {
          nodes: [
            {
              number: 7,
              title: 'Ideas',
              author,
              category: { name: 'Ideas' },
              closed: false,
              isAnswered: false,
              updatedAt: '2026-01-02T00:00:00Z',
              url: `${WEB}/discussions/7`,
            },
          ],
          pageInfo: { hasNextPage: true, endCursor: 'Y3Vyc29yOjE=' },
        },
      },
    })
  }
  if (query.includes('comments(first:$first')) {
    return answer({
      repository: {
        discussion: {
          comments: {
            nodes: [
              {
                id: 'DC_1',
                author: { login: 'stranger' },
                body: 'Try this',
                createdAt: '2026-01-03T00:00:00Z',
                isAnswer: true,
                url: `${WEB}/discussions/7#discussioncomment-1`,
                replies: { totalCount: 0 },
              },
            ],
            pageInfo,
          },
        },
      },
    })
  }
  if (query.includes('discussion(number')) {
    return answer({
      repository: {
        discussion: {
          number: variables.number,
          title: 'Ideas',
          body: 'Body<!-- hidden instruction -->',
          author,
          category: { name: 'Ideas' },
          closed: false,
          isAnswered: false,
          createdAt: '2026-01-01T00:00:00Z',
          url: `${WEB}/discussions/${variables.number}`,
          comments: { totalCount: 1 },
        },
      },
    })
  }
  if (query.includes('discussionCategories')) {
    return answer({
      repository: {
        discussionCategories: {
          nodes: [{ id: 'DIC_1', name: 'Ideas', description: 'Share ideas', isAnswerable: false }],
        },
      },
    })
  }
  if (query.includes('projectsV2(')) {
    return answer({
      organization: {
        projectsV2: {
          nodes: [
            {
              id: 'PVT_1',
              number: 1,
              title: 'Roadmap',
              shortDescription: 'Plans',
              closed: false,
              url: 'https://github.com/orgs/octo/projects/1',
            },
          ],
          pageInfo,
        },
      },
    })
  }
  if (query.includes('items(first')) {
    return answer({
      organization: {
        projectV2: {
          items: {
            nodes: [
              {
                id: 'PVTI_1',
                type: 'ISSUE',
                content: {
                  number: 3,
                  title: 'Crash on start',
                  author,
                  repository: { nameWithOwner: 'octo/demo' },
                  url: `${WEB}/issues/3`,
                },
                fieldValues: {
                  nodes: [
                    {},
                    { name: 'Todo', field: { name: 'Status' } },
                    { number: 3, field: { name: 'Points' } },
                  ],
                },
              },
            ],
            pageInfo,
          },
        },
      },
    })
  }
  if (query.includes('projectV2(number')) {
    return answer({
      organization: {
        projectV2: {
          id: 'PVT_1',
          number: 1,
          title: 'Roadmap',
          shortDescription: 'Plans',
          readme: null,
          closed: false,
          url: 'https://github.com/orgs/octo/projects/1',
          items: { totalCount: 1 },
          fields: {
            nodes: [
              { id: 'PVTF_1', name: 'Title', dataType: 'TITLE' },
              {
                id: 'PVTSSF_1',
                name: 'Status',
                dataType: 'SINGLE_SELECT',
                options: [{ id: 'opt1', name: 'Todo' }],
              },
            ],
          },
        },
      },
    })
  }
  if (query.includes('addProjectV2ItemById'))
    return answer({ addProjectV2ItemById: { item: { id: 'PVTI_2' } } })
  if (query.includes('updateProjectV2ItemFieldValue'))
    return answer({ updateProjectV2ItemFieldValue: { projectV2Item: { id: variables.item } } })
  if (query.includes('clearProjectV2ItemFieldValue'))
    return answer({ clearProjectV2ItemFieldValue: { projectV2Item: { id: variables.item } } })
  if (query.includes('deleteProjectV2Item'))
    return answer({ deleteProjectV2Item: { deletedItemId: variables.item } })
  if (query.includes('reviewThreads')) {
    return answer({
      repository: {
        pullRequest: {
          reviewThreads: {
            nodes: [
              {
                id: 'PRRT_1',
                isResolved: false,
                isOutdated: false,
                path: 'a.ts',
                line: 3,
                comments: {
                  totalCount: 1,
                  nodes: [
                    {
                      databaseId: 4,
                      author: { login: 'mona' },
                      body: 'Nit',
                      createdAt: '2026-01-04T00:00:00Z',
                    },
                  ],
                },
              },
              {
                id: 'PRRT_2',
                isResolved: true,
                isOutdated: true,
                path: 'b.ts',
                line: null,
                comments: { totalCount: 0, nodes: [] },
              },
            ],
            pageInfo,
          },
        },
      },
    })
  }
  if (query.includes('addPullRequestReviewThread'))
    return answer({ addPullRequestReviewThread: { thread: { id: 'PRRT_9' } } })
  if (query.includes('convertPullRequestToDraft'))
    return answer({ convertPullRequestToDraft: { pullRequest: { isDraft: true } } })
  if (query.includes('markPullRequestReadyForReview'))
    return answer({ markPullRequestReadyForReview: { pullRequest: { isDraft: false } } })
  return {
    status: 200,
    body: { data: null, errors: [{ type: 'NOT_FOUND', message: 'fake: no answer for this query' }] },
  }
}

/** Routes of every tool of the newer toolsets, in GitHub's shapes. */
export function moreWorld(fake: FakeGitHub): void {
  const page = (items: unknown[]) => json(items, 200, {})
  fake.on('POST', '/graphql', graphqlAnswer)
  fake.on(
    'GET',
    '/user/teams',
    page([{ slug: 'core', name: 'Core', description: 'Core team', organization: { login: 'octo' } }]),
  )
  fake.on('GET', '/orgs/octo/teams/core/members', page([user('mona')]))
  fake.on('GET', `${REPO}/contents/old.txt`, json({ type: 'file', path: 'old.txt', sha: 'old1', size: 3 }))
  fake.on('DELETE', `${REPO}/contents/old.txt`, json({ content: null, commit: { sha: 'del1' } }))
  fake.on('GET', `${REPO}/releases/latest`, json(release('v2.0.0')))
  fake.on('GET', `${REPO}/releases/tags/v1.0.0`, json(release('v1.0.0')))
  fake.on(
    'GET',
    `${REPO}/git/ref/tags/v1.0.0`,
    json({ ref: 'refs/tags/v1.0.0', object: { sha: 'tag1', type: 'tag' } }),
  )
  fake.on(
    'GET',
    `${REPO}/git/tags/tag1`,
    json({
      sha: 'tag1',
      tag: 'v1.0.0',
      message: 'First release',
      tagger: { name: 'Octo Cat', email: 'o@example.com', date: '2026-01-01T00:00:00Z' },
      object: { sha: SHA, type: 'commit' },
      verification: { verified: true },
    }),
  )
  fake.on('GET', `${REPO}/collaborators`, page([{ ...user('mona'), role_name: 'write' }]))
  fake.on(
    'GET',
    '/search/commits',
    json({
      total_count: 1,
      items: [{ ...commit('c1', 'Fix crash'), repository: { full_name: 'octo/demo' } }],
    }),
  )
  fake.on('GET', `${REPO}/issues/3/sub_issues`, page([{ ...issue(8), id: 808 }]))
  fake.on('POST', `${REPO}/issues/3/sub_issues`, json({ ...issue(3), id: 303 }, 201))
  fake.on('DELETE', `${REPO}/issues/3/sub_issue`, json({ ...issue(3), id: 303 }))
  fake.on('PATCH', `${REPO}/issues/3/sub_issues/priority`, json({ ...issue(3), id: 303 }))
  fake.on('GET', '/orgs/octo/issue-types', json([{ id: 1, name: 'Bug', description: 'Something broke' }]))
  fake.on('POST', `${REPO}/issues/3/labels`, json([label('bug'), label('p1')]))
  fake.on('DELETE', `${REPO}/issues/3/labels/p1`, json([label('bug')]))
  fake.on('GET', '/search/issues', json({ total_count: 1, items: [issue(5, { pull: true })] }))
  fake.on(
    'GET',
    `${REPO}/commits/${SHA}/check-runs`,
    json({
      total_count: 1,
      check_runs: [
        {
          ...checkRun('build', 'completed', 'failure'),
          id: 31,
          app: { slug: 'github-actions' },
          output: { title: '1 error', summary: 'Type error in a.ts' },
          started_at: '2026-01-01T00:00:00Z',
          completed_at: '2026-01-01T00:01:00Z',
        },
      ],
    }),
  )
  fake.on('GET', `${REPO}/pulls/5/commits`, page([commit('c1', 'First')]))
  fake.on('PATCH', `${REPO}/pulls/5`, (request) =>
    json({ ...pull(5), ...(request.body as object), node_id: 'PR_5', draft: false }),
  )
  fake.on(
    'POST',
    `${REPO}/pulls/5/comments/4/replies`,
    json({ ...comment(12, 'octocat', 'Done'), id: 12 }, 201),
  )
  fake.on(
    'POST',
    `${REPO}/pulls/5/reviews`,
    json({ id: 21, node_id: 'PRR_21', state: 'PENDING', html_url: `${WEB}/pull/5#pullrequestreview-21` }),
  )
  fake.on('GET', `${REPO}/pulls/5/reviews/21`, json({ id: 21, node_id: 'PRR_21', state: 'PENDING' }))
  fake.on(
    'POST',
    `${REPO}/pulls/5/reviews/21/events`,
    json({ id: 21, state: 'COMMENTED', html_url: `${WEB}/pull/5#pullrequestreview-21` }),
  )
  fake.on('DELETE', `${REPO}/pulls/5/reviews/21`, json({ id: 21, state: 'PENDING' }))
  fake.on(
    'GET',
    `${REPO}/actions/workflows`,
    json({
      total_count: 1,
      workflows: [{ id: 161, name: 'CI', path: '.github/workflows/ci.yml', state: 'active' }],
    }),
  )
  fake.on('POST', `${REPO}/actions/workflows/ci.yml/dispatches`, { status: 204 })
  fake.on('POST', `${REPO}/actions/runs/77/rerun`, json({}, 201))
  fake.on('POST', `${REPO}/actions/runs/77/rerun-failed-jobs`, json({}, 201))
  fake.on('POST', `${REPO}/actions/runs/77/cancel`, json({}, 202))
  fake.on(
    'GET',
    `${REPO}/actions/runs/77/artifacts`,
    json({
      total_count: 1,
      artifacts: [
        { id: 5, name: 'coverage', size_in_bytes: 1024, expired: false, expires_at: '2026-02-01T00:00:00Z' },
      ],
    }),
  )
  fake.on('GET', `${REPO}/actions/artifacts/5/zip`, {
    status: 302,
    headers: { location: 'https://pipelines.actions.githubusercontent.com/signed/coverage.zip' },
  })
  fake.on('GET', `${REPO}/labels`, page([label('bug')]))
  fake.on('GET', `${REPO}/labels/bug`, json(label('bug')))
  fake.on('POST', `${REPO}/labels`, (request) =>
    json(label(String((request.body as { name: string }).name)), 201),
  )
  fake.on('PATCH', `${REPO}/labels/bug`, json(label('defect')))
  fake.on('DELETE', `${REPO}/labels/bug`, { status: 204 })
  fake.on('GET', '/notifications', page([thread('1')]))
  fake.on('GET', `${REPO}/notifications`, page([thread('1')]))
  fake.on('GET', '/notifications/threads/1', json(thread('1')))
  fake.on('PATCH', '/notifications/threads/1', { status: 205 })
  fake.on('DELETE', '/notifications/threads/1', { status: 204 })
  fake.on(
    'PUT',
    '/notifications',
    json({ message: 'Unread notifications couldn\u2019t be marked in a single request.' }, 202),
  )
  fake.on('PUT', `${REPO}/notifications`, json({}, 202))
  fake.on('PUT', '/notifications/threads/1/subscription', json({ subscribed: true, ignored: true }))
  fake.on('DELETE', '/notifications/threads/1/subscription', { status: 204 })
  fake.on('PUT', `${REPO}/subscription`, json({ subscribed: true, ignored: false }))
  fake.on('DELETE', `${REPO}/subscription`, { status: 204 })
  fake.on(
    'GET',
    `${REPO}/git/trees/main`,
    json({
      sha: 'tree1',
      truncated: false,
      tree: [
        { path: 'src', type: 'tree', mode: '040000', sha: 's1' },
        { path: 'src/a.ts', type: 'blob', mode: '100644', sha: 'b1', size: 12 },
      ],
    }),
  )
  fake.on(
    'GET',
    '/user/starred',
    page([{ full_name: 'octo/demo', description: 'Demo', stargazers_count: 3, html_url: WEB }]),
  )
  fake.on('PUT', '/user/starred/octo/demo', { status: 204 })
  fake.on('DELETE', '/user/starred/octo/demo', { status: 204 })
  fake.on('GET', '/search/users', (request) =>
    json({
      total_count: 1,
      items: [request.query.get('q')?.includes('type:org') ? user('octo', 'Organization') : user('mona')],
    }),
  )
  fake.on(
    'GET',
    '/orgs/octo',
    json({
      login: 'octo',
      name: 'Octo Org',
      description: 'We build',
      public_repos: 12,
      html_url: 'https://github.com/octo',
    }),
  )
  const gist = {
    id: 'aa5a315d61ae9438b18d',
    description: 'Snippets',
    public: false,
    owner: user('octocat'),
    updated_at: '2026-01-01T00:00:00Z',
    html_url: 'https://gist.github.com/aa5a315d61ae9438b18d',
    files: {
      'hello.py': {
        filename: 'hello.py',
        language: 'Python',
        size: 12,
        truncated: false,
        content: 'print("hi")\n',
      },
    },
  }
  fake.on('GET', '/gists', page([gist]))
  fake.on('GET', `/gists/${gist.id}`, json(gist))
  // GitHub answers a gist write with each stored file's size.
  const saved = (request: FakeRequest, status: number) => {
    const sent = (request.body as { files?: Record<string, { content: string } | null> }).files ?? {}
    const files = Object.fromEntries(
      Object.entries(sent).flatMap(([name, file]) =>
        file
          ? [
              [
                name,
                {
                  filename: name,
                  size: Buffer.byteLength(file.content),
                  truncated: false,
                  content: file.content,
                },
              ],
            ]
          : [],
      ),
    )
    return json({ ...gist, files: { ...gist.files, ...files } }, status)
  }
  fake.on('POST', '/gists', (request) => saved(request, 201))
  fake.on('PATCH', `/gists/${gist.id}`, (request) => saved(request, 200))
  fake.on('GET', '/advisories', page([advisory('GHSA-jf85-cpcp-j695')]))
  fake.on('GET', '/advisories/GHSA-jf85-cpcp-j695', json(advisory('GHSA-jf85-cpcp-j695')))
  fake.on('GET', `${REPO}/security-advisories`, page([advisory('GHSA-2222-3333-4444')]))
  fake.on('GET', '/orgs/octo/security-advisories', page([advisory('GHSA-2222-3333-4444')]))
  fake.on('GET', `${REPO}/code-scanning/alerts`, page([codeAlert]))
  fake.on('GET', `${REPO}/code-scanning/alerts/1`, json(codeAlert))
  fake.on('GET', `${REPO}/dependabot/alerts`, page([dependabotAlert]))
  fake.on('GET', `${REPO}/dependabot/alerts/2`, json(dependabotAlert))
  fake.on('GET', `${REPO}/secret-scanning/alerts`, page([secretAlert]))
  fake.on('GET', `${REPO}/secret-scanning/alerts/3`, json(secretAlert))
  fake.on('GET', `${REPO}/issues/3`, json({ ...issue(3), node_id: 'I_3' }))
}

const repo = 'octo/demo'
const project = { owner: 'octo', project_number: 1 }

/** One call of every tool of the newer toolsets, answered by `moreWorld`. */
export const moreCalls: Array<[string, Record<string, unknown>]> = [
  ['get_teams', {}],
  ['get_team_members', { org: 'octo', team_slug: 'core' }],
  ['delete_file', { repo, path: 'old.txt', message: 'Remove old' }],
  ['get_latest_release', { repo }],
  ['get_release_by_tag', { repo, tag: 'v1.0.0' }],
  ['get_tag', { repo, tag: 'v1.0.0' }],
  ['list_collaborators', { repo }],
  ['search_commits', { query: 'crash repo:octo/demo' }],
  ['list_sub_issues', { repo, issue_number: 3 }],
  ['add_sub_issue', { repo, issue_number: 3, sub_issue_id: 808 }],
  ['remove_sub_issue', { repo, issue_number: 3, sub_issue_id: 808 }],
  ['reprioritize_sub_issue', { repo, issue_number: 3, sub_issue_id: 808, after_id: 809 }],
  ['list_issue_types', { org: 'octo' }],
  ['add_issue_labels', { repo, issue_number: 3, labels: ['p1'] }],
  ['remove_issue_label', { repo, issue_number: 3, label: 'p1' }],
  ['search_pull_requests', { query: 'repo:octo/demo is:open' }],
  ['get_pull_request_check_runs', { repo, pull_number: 5 }],
  ['list_pull_request_commits', { repo, pull_number: 5 }],
  ['update_pull_request', { repo, pull_number: 5, title: 'Better title', draft: true }],
  ['get_pull_request_review_threads', { repo, pull_number: 5 }],
  ['reply_to_review_comment', { repo, pull_number: 5, comment_id: 4, body: 'Done' }],
  ['create_pending_review', { repo, pull_number: 5 }],
  [
    'add_pending_review_comment',
    { repo, pull_number: 5, review_id: 21, path: 'a.ts', line: 3, body: 'Why?' },
  ],
  ['submit_pending_review', { repo, pull_number: 5, review_id: 21, event: 'COMMENT' }],
  ['delete_pending_review', { repo, pull_number: 5, review_id: 21 }],
  ['list_workflows', { repo }],
  ['run_workflow', { repo, workflow: 'ci.yml', ref: 'main', inputs: { debug: 'true' } }],
  ['rerun_workflow_run', { repo, run_id: 77, failed_only: true }],
  ['cancel_workflow_run', { repo, run_id: 77 }],
  ['list_workflow_run_artifacts', { repo, run_id: 77 }],
  ['download_workflow_run_artifact', { repo, artifact_id: 5 }],
  ['list_labels', { repo }],
  ['get_label', { repo, name: 'bug' }],
  ['create_label', { repo, name: 'p1', color: '#FF0000' }],
  ['update_label', { repo, name: 'bug', new_name: 'defect' }],
  ['delete_label', { repo, name: 'bug' }],
  ['list_notifications', {}],
  ['get_notification', { thread_id: '1' }],
  ['mark_notifications_read', { thread_id: '1' }],
  ['manage_notification_subscription', { thread_id: '1', action: 'ignore' }],
  ['manage_repository_subscription', { repo, action: 'watch' }],
  ['get_repository_tree', { repo, ref: 'main' }],
  ['list_starred_repositories', {}],
  ['star_repository', { repo }],
  ['unstar_repository', { repo }],
  ['search_orgs', { query: 'octo' }],
  ['get_organization', { org: 'octo' }],
  ['list_gists', {}],
  ['get_gist', { gist_id: 'aa5a315d61ae9438b18d' }],
  ['create_gist', { files: { 'hello.py': 'print("hi")\n' } }],
  ['update_gist', { gist_id: 'aa5a315d61ae9438b18d', description: 'Renamed' }],
  ['list_global_security_advisories', { ecosystem: 'npm' }],
  ['get_global_security_advisory', { ghsa_id: 'GHSA-jf85-cpcp-j695' }],
  ['list_repository_security_advisories', { repo }],
  ['list_org_repository_security_advisories', { org: 'octo' }],
  ['list_code_scanning_alerts', { repo }],
  ['get_code_scanning_alert', { repo, alert_number: 1 }],
  ['list_dependabot_alerts', { repo }],
  ['get_dependabot_alert', { repo, alert_number: 2 }],
  ['list_secret_scanning_alerts', { repo }],
  ['get_secret_scanning_alert', { repo, alert_number: 3 }],
  ['list_discussions', { repo }],
  ['get_discussion', { repo, discussion_number: 7 }],
  ['get_discussion_comments', { repo, discussion_number: 7 }],
  ['list_discussion_categories', { repo }],
  ['list_projects', { owner: 'octo' }],
  ['get_project', project],
  ['list_project_items', project],
  ['add_project_item', { project_id: 'PVT_1', repo, number: 3 }],
  [
    'update_project_item',
    { project_id: 'PVT_1', item_id: 'PVTI_1', field_id: 'PVTSSF_1', option_id: 'opt1' },
  ],
  ['delete_project_item', { project_id: 'PVT_1', item_id: 'PVTI_1' }],
  ['find_tools', { query: 'dependabot', enable_toolset: 'dependabot' }],
]
