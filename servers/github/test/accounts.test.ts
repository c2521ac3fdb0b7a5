import { connectInMemory } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN } from './fake-github.js'
import { issue } from './fixtures.js'
import { closeAll, dataOf, errorKind, fastServer, json, setup } from './helpers.js'
import { graphqlAnswer } from './world-more.js'

afterEach(closeAll)

const WORK = 'work-token-0000000000000000000000000000'
const accounts = {
  argv: ['--account', 'work=GITHUB_TOKEN_WORK', '--account-for', 'Acme=work'],
  env: { GITHUB_TOKEN_WORK: WORK },
}

describe('several accounts (--account, --account-for)', () => {
  it('sends each request with the token of the account its owner is routed to, and no other', async () => {
    const { fake, call } = await setup(accounts)
    fake.on('GET', '/repos/acme/app/issues/1', json(issue(1, { repo: 'acme/app' })))
    fake.on('GET', '/repos/octo/demo/issues/1', json(issue(1)))
    fake.on('GET', '/search/issues', json({ total_count: 0, items: [] }))
    fake.on('POST', '/graphql', graphqlAnswer)
    await call('get_issue', { repo: 'acme/app', issue_number: 1 })
    await call('get_issue', { repo: 'octo/demo', issue_number: 1 })
    await call('search_issues', { query: 'repo:acme/app crash' })
    await call('search_issues', { query: 'crash' })
    await call('list_projects', { owner: 'ACME' })
    const seen = fake.requests.map((request) => [request.method, request.path, request.authorization])
    expect(seen).toEqual([
      ['GET', '/repos/acme/app/issues/1', `token ${WORK}`],
      ['GET', '/repos/octo/demo/issues/1', `token ${RECORDED_TOKEN}`],
      ['GET', '/search/issues', `token ${WORK}`],
      ['GET', '/search/issues', `token ${RECORDED_TOKEN}`],
      ['POST', '/graphql', `token ${WORK}`],
    ])
  })

  it('refuses a search that names owners of two accounts', async () => {
    const { fake, call } = await setup(accounts)
    const result = await call('search_issues', { query: 'repo:acme/app repo:octo/demo crash' })
    expect(errorKind(result)).toBe('invalid_argument')
    expect(fake.requests).toEqual([])
  })

  it('keeps one client per account: the routed account answers even when the default is refused', async () => {
    const { fake, call } = await setup(accounts)
    fake.on('GET', '/repos/acme/app', (request) =>
      request.authorization === `token ${WORK}`
        ? json({
            full_name: 'acme/app',
            private: true,
            default_branch: 'main',
            html_url: 'https://github.com/acme/app',
          })
        : json({ message: 'Bad credentials' }, 401),
    )
    expect(dataOf(await call('get_repository', { repo: 'acme/app' })).repository.fullName).toBe('acme/app')
  })

  it.each([
    [['--account', 'work=MISSING_VAR', '--account-for', 'acme=work'], /MISSING_VAR is not set/],
    [['--account-for', 'acme=nobody'], /names no account/],
    [['--account', 'Work!=X'], /is not NAME=ENV_VAR/],
    [['--account', 'default=X'], /"default" is the name/],
  ])('refuses a bad account configuration at start-up (%s)', async (argv, message) => {
    await expect(connectInMemory(fastServer, { argv, env: { GITHUB_TOKEN: 't' } })).rejects.toThrow(message)
  })

  it('refuses accounts with --token-from-request', async () => {
    await expect(
      connectInMemory(fastServer, {
        argv: [
          '--transport',
          'http',
          '--token-from-request',
          '--account',
          'work=W',
          '--account-for',
          'acme=work',
        ],
        env: { W: 'x' },
      }),
    ).rejects.toThrow(/cannot be combined with --token-from-request/)
  })
})

describe('several accounts and pagination', () => {
  it('sends the next page of a list (a Link URL, no route parameters) with the same account', async () => {
    const { fake, call } = await setup(accounts)
    const job = (id: number) => ({
      id,
      name: `job ${id}`,
      status: 'completed',
      conclusion: 'success',
      steps: [],
    })
    fake.on(
      'GET',
      '/repos/acme/app/actions/runs/7',
      json({
        id: 7,
        name: 'CI',
        display_title: 'CI',
        status: 'completed',
        conclusion: 'success',
        head_branch: 'main',
        head_sha: 'a',
        event: 'push',
        created_at: '2026-01-01T00:00:00Z',
        html_url: 'https://github.com/acme/app/actions/runs/7',
      }),
    )
    fake.on('GET', '/repos/acme/app/actions/runs/7/jobs', (request) =>
      request.query.get('page') === '2'
        ? json({ total_count: 2, jobs: [job(2)] })
        : json({ total_count: 2, jobs: [job(1)] }, 200, {
            link: '<https://api.github.com/repos/acme/app/actions/runs/7/jobs?per_page=100&page=2>; rel="next"',
          }),
    )
    expect(dataOf(await call('get_workflow_run', { repo: 'acme/app', run_id: 7 })).jobs).toHaveLength(2)
    const pages = fake.calls('GET', '/repos/acme/app/actions/runs/7/jobs')
    expect(pages.map((request) => request.authorization)).toEqual([`token ${WORK}`, `token ${WORK}`])
  })
})
