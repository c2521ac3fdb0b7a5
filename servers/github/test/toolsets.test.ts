import { afterEach, describe, expect, it } from 'vitest'
import type { FakeGitHub } from './fake-github.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'
import { world } from './world.js'
import { moreWorld, SECRET } from './world-more.js'

afterEach(closeAll)

const repo = 'octo/demo'
const REPO = '/repos/octo/demo'

/** The variables of the n-th GraphQL request the fake received. */
function variablesOf(fake: FakeGitHub, index: number): Record<string, unknown> | undefined {
  const body = fake.calls('POST', '/graphql').at(index)?.body as
    | { variables?: Record<string, unknown> }
    | undefined
  return body?.variables
}

async function ready(argv: string[] = [], first?: (fake: FakeGitHub) => void) {
  const context = await setup({ argv })
  first?.(context.fake)
  moreWorld(context.fake)
  world(context.fake)
  return context
}

describe('context, repos and issues beyond the reference', () => {
  it('reads teams, team members, releases, tags, collaborators and commit search', async () => {
    const { call, fake } = await ready()
    expect(dataOf(await call('get_teams', {})).teams).toEqual([
      { org: 'octo', slug: 'core', name: 'Core', description: 'Core team' },
    ])
    expect(dataOf(await call('get_team_members', { org: 'octo', team_slug: 'core' })).members[0].login).toBe(
      'mona',
    )
    expect(dataOf(await call('get_latest_release', { repo })).release).toMatchObject({
      tag: 'v2.0.0',
      assets: [{ name: 'app.zip', size: 10 }],
    })
    expect(dataOf(await call('get_release_by_tag', { repo, tag: 'v1.0.0' })).release.tag).toBe('v1.0.0')
    expect(dataOf(await call('get_tag', { repo, tag: 'v1.0.0' })).tag).toMatchObject({
      annotated: true,
      sha: 'a'.repeat(40),
      message: 'First release',
      verified: true,
    })
    expect(dataOf(await call('list_collaborators', { repo })).collaborators[0]).toMatchObject({
      login: 'mona',
      role: 'write',
    })
    const commits = dataOf(await call('search_commits', { query: 'crash repo:octo/demo' }))
    expect(commits.commits[0]).toMatchObject({ repository: 'octo/demo', message: 'Fix crash' })
    expect(fake.calls('GET', '/search/commits')[0]?.query.get('q')).toBe('crash repo:octo/demo')
  })

  it('deletes a file at its current blob sha when none is given', async () => {
    const { call, fake } = await ready()
    const result = dataOf(await call('delete_file', { repo, path: 'old.txt', message: 'Remove old' }))
    expect(result).toEqual({ commit: 'del1', path: 'old.txt' })
    expect(fake.calls('DELETE', `${REPO}/contents/old.txt`)[0]?.body).toMatchObject({
      sha: 'old1',
      message: 'Remove old',
    })
  })

  it('manages sub-issues, issue types and labels on issues', async () => {
    const { call, fake } = await ready()
    expect(dataOf(await call('list_sub_issues', { repo, issue_number: 3 })).subIssues[0]).toMatchObject({
      id: 808,
      number: 8,
    })
    await call('add_sub_issue', { repo, issue_number: 3, sub_issue_id: 808 })
    expect(fake.calls('POST', `${REPO}/issues/3/sub_issues`)[0]?.body).toEqual({
      sub_issue_id: 808,
      replace_parent: false,
    })
    await call('remove_sub_issue', { repo, issue_number: 3, sub_issue_id: 808 })
    expect(fake.calls('DELETE', `${REPO}/issues/3/sub_issue`)[0]?.body).toEqual({ sub_issue_id: 808 })
    await call('reprioritize_sub_issue', { repo, issue_number: 3, sub_issue_id: 808, after_id: 809 })
    expect(fake.calls('PATCH', `${REPO}/issues/3/sub_issues/priority`)[0]?.body).toEqual({
      sub_issue_id: 808,
      after_id: 809,
    })
    expect(dataOf(await call('list_issue_types', { org: 'octo' })).types[0].name).toBe('Bug')
    expect(dataOf(await call('add_issue_labels', { repo, issue_number: 3, labels: ['p1'] })).labels).toEqual([
      'bug',
      'p1',
    ])
    expect(dataOf(await call('remove_issue_label', { repo, issue_number: 3, label: 'p1' })).labels).toEqual([
      'bug',
    ])
  })
})

describe('pull requests beyond the reference', () => {
  it('searches PRs only, lists check runs and commits', async () => {
    const { call, fake } = await ready()
    const found = dataOf(await call('search_pull_requests', { query: 'repo:octo/demo crash' }))
    expect(found.pullRequests[0]).toMatchObject({ repository: 'octo/demo', number: 5 })
    expect(fake.calls('GET', '/search/issues')[0]?.query.get('q')).toBe('repo:octo/demo crash is:pr')
    const checks = dataOf(await call('get_pull_request_check_runs', { repo, pull_number: 5 }))
    expect(checks.checkRuns[0]).toMatchObject({
      name: 'build',
      conclusion: 'failure',
      summary: 'Type error in a.ts',
    })
    expect(dataOf(await call('list_pull_request_commits', { repo, pull_number: 5 })).commits[0].message).toBe(
      'First',
    )
  })

  it('updates title and turns a PR into a draft through GraphQL', async () => {
    const { call, fake } = await ready()
    const result = dataOf(
      await call('update_pull_request', { repo, pull_number: 5, title: 'Better', draft: true }),
    )
    expect(result).toMatchObject({ number: 5, draft: true })
    expect(fake.calls('PATCH', `${REPO}/pulls/5`)[0]?.body).toEqual({ title: 'Better' })
    const mutation = fake.calls('POST', '/graphql')[0]?.body as { query: string; variables: { id: string } }
    expect(mutation.query).toContain('convertPullRequestToDraft')
    expect(mutation.variables.id).toBe('PR_5')
    expect(errorKind(await call('update_pull_request', { repo, pull_number: 5 }))).toBe('invalid_argument')
  })

  it('reads review threads, runs a pending review and replies to a comment', async () => {
    const { call, fake } = await ready()
    const threads = dataOf(
      await call('get_pull_request_review_threads', { repo, pull_number: 5, unresolved_only: true }),
    )
    expect(threads.threads).toEqual([
      {
        id: 'PRRT_1',
        resolved: false,
        outdated: false,
        path: 'a.ts',
        line: 3,
        comments: [{ id: 4, author: 'mona', body: 'Nit' }],
      },
    ])
    expect(dataOf(await call('create_pending_review', { repo, pull_number: 5 }))).toMatchObject({
      state: 'PENDING',
    })
    expect(fake.calls('POST', `${REPO}/pulls/5/reviews`)[0]?.body ?? {}).not.toHaveProperty('event')
    const added = await call('add_pending_review_comment', {
      repo,
      pull_number: 5,
      review_id: 21,
      path: 'a.ts',
      line: 3,
      body: 'Why?',
    })
    expect(dataOf(added).threadId).toBe('PRRT_9')
    expect(variablesOf(fake, -1)).toMatchObject({ review: 'PRR_21', path: 'a.ts', line: 3, side: 'RIGHT' })
    const submitted = dataOf(
      await call('submit_pending_review', { repo, pull_number: 5, review_id: 21, event: 'COMMENT' }),
    )
    expect(submitted.state).toBe('COMMENTED')
    expect(
      dataOf(await call('delete_pending_review', { repo, pull_number: 5, review_id: 21 })).reviewId,
    ).toBe(21)
    const reply = dataOf(
      await call('reply_to_review_comment', { repo, pull_number: 5, comment_id: 4, body: 'Done' }),
    )
    expect(reply.id).toBe(12)
  })
})

describe('actions', () => {
  it('lists, triggers, re-runs and cancels workflows; artifacts as a download URL', async () => {
    const { call, fake } = await ready()
    expect(dataOf(await call('list_workflows', { repo })).workflows[0]).toMatchObject({
      id: 161,
      path: '.github/workflows/ci.yml',
    })
    await call('run_workflow', { repo, workflow: 'ci.yml', ref: 'main', inputs: { debug: 'true' } })
    expect(fake.calls('POST', `${REPO}/actions/workflows/ci.yml/dispatches`)[0]?.body).toEqual({
      ref: 'main',
      inputs: { debug: 'true' },
    })
    await call('rerun_workflow_run', { repo, run_id: 77, failed_only: true })
    expect(fake.calls('POST', `${REPO}/actions/runs/77/rerun-failed-jobs`)).toHaveLength(1)
    expect(fake.calls('POST', `${REPO}/actions/runs/77/rerun`)).toHaveLength(0)
    expect(dataOf(await call('cancel_workflow_run', { repo, run_id: 77 })).runId).toBe(77)
    expect(dataOf(await call('list_workflow_run_artifacts', { repo, run_id: 77 })).artifacts[0].name).toBe(
      'coverage',
    )
    // The redirect is read, not followed: the signed storage host never sees a request.
    expect(dataOf(await call('download_workflow_run_artifact', { repo, artifact_id: 5 })).url).toBe(
      'https://pipelines.actions.githubusercontent.com/signed/coverage.zip',
    )
  })
})

describe('labels, notifications, git, stars, orgs, gists', () => {
  it('manages repository labels', async () => {
    const { call, fake } = await ready()
    expect(dataOf(await call('list_labels', { repo })).labels).toEqual([
      { name: 'bug', color: 'd73a4a', description: 'bug label' },
    ])
    expect(dataOf(await call('get_label', { repo, name: 'bug' })).label.name).toBe('bug')
    await call('create_label', { repo, name: 'p1', color: '#FF0000' })
    expect(fake.calls('POST', `${REPO}/labels`)[0]?.body).toEqual({ name: 'p1', color: 'FF0000' })
    expect(dataOf(await call('update_label', { repo, name: 'bug', new_name: 'defect' })).label.name).toBe(
      'defect',
    )
    expect(dataOf(await call('delete_label', { repo, name: 'bug' })).deleted).toBe('bug')
  })

  it('lists, reads, marks and subscribes notifications', async () => {
    const { call, fake } = await ready()
    const listed = dataOf(await call('list_notifications', {}))
    expect(listed.notifications[0]).toMatchObject({
      id: '1',
      repository: 'octo/demo',
      number: 3,
      title: 'Crash on start',
    })
    expect(dataOf(await call('get_notification', { thread_id: '1' })).notification.reason).toBe('mention')
    await call('mark_notifications_read', { thread_id: '1' })
    expect(fake.calls('PATCH', '/notifications/threads/1')).toHaveLength(1)
    await call('mark_notifications_read', { repo })
    expect(fake.calls('PUT', `${REPO}/notifications`)).toHaveLength(1)
    await call('manage_notification_subscription', { thread_id: '1', action: 'ignore' })
    expect(fake.calls('PUT', '/notifications/threads/1/subscription')[0]?.body).toEqual({ ignored: true })
    await call('manage_repository_subscription', { repo, action: 'watch' })
    expect(fake.calls('PUT', `${REPO}/subscription`)[0]?.body).toEqual({ subscribed: true, ignored: false })
  })

  it('withholds notification titles under lockdown (their authors are unknown)', async () => {
    const { call } = await ready(['--lockdown'])
    expect(dataOf(await call('list_notifications', {})).notifications[0].title).toMatch(/withheld/)
  })

  it('reads a tree, stars, orgs and gists', async () => {
    const { call, fake } = await ready()
    const tree = dataOf(await call('get_repository_tree', { repo, ref: 'main' }))
    expect(tree.entries).toEqual([
      { path: 'src', type: 'tree' },
      { path: 'src/a.ts', type: 'blob', size: 12 },
    ])
    expect(fake.calls('GET', `${REPO}/git/trees/main`)[0]?.query.get('recursive')).toBe('true')
    expect(dataOf(await call('list_starred_repositories', {})).repositories[0].fullName).toBe('octo/demo')
    expect(dataOf(await call('star_repository', { repo })).starred).toBe(true)
    expect(dataOf(await call('unstar_repository', { repo })).starred).toBe(false)
    expect(fake.calls('DELETE', '/user/starred/octo/demo')).toHaveLength(1)
    await call('search_orgs', { query: 'octo' })
    expect(fake.calls('GET', '/search/users').at(-1)?.query.get('q')).toBe('octo type:org')
    expect(dataOf(await call('get_organization', { org: 'octo' })).org).toMatchObject({
      login: 'octo',
      publicRepos: 12,
    })
    expect(dataOf(await call('list_gists', {})).gists[0].files).toEqual(['hello.py'])
    expect(dataOf(await call('get_gist', { gist_id: 'aa5a315d61ae9438b18d' })).gist.files[0].content).toBe(
      'print("hi")\n',
    )
    await call('create_gist', { files: { 'hello.py': 'print("hi")\n' } })
    expect(fake.calls('POST', '/gists')[0]?.body).toEqual({
      files: { 'hello.py': { content: 'print("hi")\n' } },
      public: false,
    })
    await call('update_gist', { gist_id: 'aa5a315d61ae9438b18d', files: { 'old.py': '' } })
    expect(fake.calls('PATCH', '/gists/aa5a315d61ae9438b18d')[0]?.body).toEqual({ files: { 'old.py': null } })
  })
})

describe('security', () => {
  it('lists advisories with a cursor and alerts of every kind', async () => {
    const next = '<https://api.github.com/advisories?after=Y3Vy&per_page=30>; rel="next"'
    const { call } = await ready([], (fake) => fake.once('GET', '/advisories', json([], 200, { link: next })))
    const first = await call('list_global_security_advisories', { ecosystem: 'npm' })
    expect(dataOf(first).nextCursor).toBe('Y3Vy')
    expect(textOf(first)).toContain('after = nextCursor')
    expect(
      dataOf(await call('get_global_security_advisory', { ghsa_id: 'GHSA-jf85-cpcp-j695' })).advisory,
    ).toMatchObject({
      cvss: 7.5,
      cwes: ['CWE-1321'],
      packages: [{ ecosystem: 'npm', name: 'lodash', patched: '4.17.21' }],
    })
    expect(dataOf(await call('list_repository_security_advisories', { repo })).advisories[0].ghsa).toBe(
      'GHSA-2222-3333-4444',
    )
    expect(
      dataOf(await call('list_org_repository_security_advisories', { org: 'octo' })).advisories,
    ).toHaveLength(1)
    expect(dataOf(await call('list_code_scanning_alerts', { repo })).alerts[0]).toMatchObject({
      rule: 'js/xss',
      path: 'a.ts',
    })
    expect(dataOf(await call('get_code_scanning_alert', { repo, alert_number: 1 })).alert.message).toBe(
      'Unsafe HTML',
    )
    expect(dataOf(await call('list_dependabot_alerts', { repo })).alerts[0]).toMatchObject({
      package: 'lodash',
      patched: '4.17.12',
    })
    expect(dataOf(await call('get_dependabot_alert', { repo, alert_number: 2 })).alert.description).toBe(
      'Details',
    )
  })

  it('never returns the leaked secret of a secret scanning alert', async () => {
    const { call } = await ready()
    const list = await call('list_secret_scanning_alerts', { repo })
    const one = await call('get_secret_scanning_alert', { repo, alert_number: 3 })
    expect(dataOf(one).alert).toMatchObject({ type: 'github_personal_access_token', validity: 'active' })
    for (const result of [list, one]) expect(JSON.stringify(result)).not.toContain(SECRET)
  })
})

describe('GraphQL toolsets', () => {
  it('reads discussions with cursors, sanitised bodies and categories', async () => {
    const { call, fake } = await ready()
    const listed = await call('list_discussions', { repo })
    expect(dataOf(listed)).toMatchObject({
      discussions: [{ number: 7, category: 'Ideas' }],
      nextCursor: 'Y3Vyc29yOjE=',
    })
    expect(dataOf(await call('get_discussion', { repo, discussion_number: 7 })).discussion.body).toBe('Body')
    expect(
      dataOf(await call('get_discussion_comments', { repo, discussion_number: 7 })).comments[0],
    ).toMatchObject({
      author: 'stranger',
      answer: true,
    })
    expect(dataOf(await call('list_discussion_categories', { repo })).categories[0].id).toBe('DIC_1')
    // GraphQL goes through the same client: the same token reached the API.
    expect(new Set(fake.calls('POST', '/graphql').map((request) => request.authorization))).toEqual(
      new Set(['token 0000000000000000000000000000000000000001']),
    )
  })

  it('withholds discussion comments by users without push access under lockdown', async () => {
    const { call, fake } = await ready(['--lockdown'])
    fake.on(
      'GET',
      `${REPO}/collaborators/stranger/permission`,
      json({ permission: 'read', role_name: 'read', user: null }),
    )
    expect(
      dataOf(await call('get_discussion_comments', { repo, discussion_number: 7 })).comments[0].body,
    ).toMatch(/withheld/)
  })

  it('maps GraphQL errors to tool errors', async () => {
    const { call, fake } = await ready()
    fake.reset()
    fake.on(
      'POST',
      '/graphql',
      json({
        data: null,
        errors: [
          { type: 'NOT_FOUND', message: "Could not resolve to a Repository with the name 'octo/nope'." },
        ],
      }),
    )
    const result = await call('list_discussions', { repo: 'octo/nope' })
    expect(errorKind(result)).toBe('not_found')
    expect(textOf(result)).toContain('Could not resolve')
  })

  it('reads projects and their items, and adds, sets and removes items', async () => {
    const { call, fake } = await ready()
    expect(dataOf(await call('list_projects', { owner: 'octo' })).projects[0]).toMatchObject({
      id: 'PVT_1',
      title: 'Roadmap',
    })
    const project = dataOf(await call('get_project', { owner: 'octo', project_number: 1 })).project
    expect(project.fields[1]).toMatchObject({ id: 'PVTSSF_1', options: [{ id: 'opt1', name: 'Todo' }] })
    const items = dataOf(await call('list_project_items', { owner: 'octo', project_number: 1 })).items
    expect(items[0]).toMatchObject({ id: 'PVTI_1', number: 3, fields: { Status: 'Todo', Points: 3 } })
    fake.reset()
    moreWorld(fake)
    expect(dataOf(await call('add_project_item', { project_id: 'PVT_1', repo, number: 3 })).itemId).toBe(
      'PVTI_2',
    )
    expect(variablesOf(fake, 0)).toEqual({
      project: 'PVT_1',
      content: 'I_3',
    })
    await call('update_project_item', {
      project_id: 'PVT_1',
      item_id: 'PVTI_1',
      field_id: 'PVTSSF_1',
      option_id: 'opt1',
    })
    expect(variablesOf(fake, 1)?.value).toEqual({
      singleSelectOptionId: 'opt1',
    })
    expect(
      dataOf(
        await call('update_project_item', { project_id: 'PVT_1', item_id: 'PVTI_1', field_id: 'PVTSSF_1' }),
      ).cleared,
    ).toBe(true)
    expect(
      dataOf(await call('delete_project_item', { project_id: 'PVT_1', item_id: 'PVTI_1' })).deletedItemId,
    ).toBe('PVTI_1')
  })
})
