import { afterEach, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN } from './fake-github.js'
import { job, link, run, user } from './fixtures.js'
import { closeAll, dataOf, errorKind, json, setup } from './helpers.js'

afterEach(closeAll)

const _FIXTURE_ORG = 'octokit-fixture-org'

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

  it('answers a 2026-07-28 client the same way', async () => {
    const { fake, call } = await setup({ era: 'modern' })
    fake.on('GET', '/user', json({ ...user('octocat'), name: null }))
    expect((await call('get_me')).structuredContent?.login).toBe('octocat')
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
    const result = await call('get_repository', { repo: 'just-a-name' })
    expect(errorKind(result)).toBe('invalid_argument')
    expect(result.content[0].text).toMatch(/repo: must be owner\/name/)
    expect(fake.requests).toHaveLength(0)
  })
})
