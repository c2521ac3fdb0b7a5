import { afterEach, describe, expect, it } from 'vitest'
import { checkRun, commit, job, link, pull, run } from './fixtures.js'
import { closeAll, dataOf, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

// Lists that GitHub or the server caps say so in the text: a partial list never passes for the whole.
describe('capped lists say that more exists', () => {
  it('get_pull_request_status names how many check runs and statuses were left out', async () => {
    const { fake, call } = await setup()
    const sha = 'a'.repeat(40)
    fake.on('GET', '/repos/octo/demo/pulls/5', json(pull(5, { sha })))
    const checksPath = `/repos/octo/demo/commits/${sha}/check-runs`
    fake.on('GET', checksPath, (request) => {
      const page = Number(request.query.get('page') ?? 1)
      return json(
        {
          total_count: 350,
          check_runs: Array.from({ length: 100 }, (_, index) =>
            checkRun(`check ${page}.${index}`, 'completed', 'success'),
          ),
        },
        200,
        { link: link(checksPath, page < 4 ? page + 1 : undefined, 4) },
      )
    })
    fake.on(
      'GET',
      `/repos/octo/demo/commits/${sha}/status`,
      json({
        state: 'success',
        total_count: 120,
        statuses: Array.from({ length: 100 }, (_, index) => ({
          context: `ci/${index}`,
          state: 'success',
          description: 'ok',
          target_url: null,
        })),
      }),
    )
    const result = await call('get_pull_request_status', { repo: 'octo/demo', pull_number: 5 })
    expect(dataOf(result).checks).toHaveLength(300)
    expect(textOf(result)).toContain('More available: 300 of 350 check runs shown.')
    expect(textOf(result)).toContain('More available: 100 of 120 statuses shown.')
  })

  it('get_workflow_run names how many jobs were left out', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/repos/octo/demo/actions/runs/77', json(run(77, 'failure')))
    const jobsPath = '/repos/octo/demo/actions/runs/77/jobs'
    fake.on('GET', jobsPath, (request) => {
      const page = Number(request.query.get('page') ?? 1)
      return json(
        {
          total_count: 250,
          jobs: Array.from({ length: page < 3 ? 100 : 50 }, (_, index) =>
            job(page * 1000 + index, `job ${index}`, 'success'),
          ),
        },
        200,
        { link: link(jobsPath, page < 3 ? page + 1 : undefined, 3) },
      )
    })
    const result = await call('get_workflow_run', { repo: 'octo/demo', run_id: 77 })
    expect(dataOf(result).jobs).toHaveLength(200)
    expect(textOf(result)).toContain('More available: 200 of 250 jobs shown')
  })

  it('get_file_contents says when GitHub listed as many directory entries as it ever does', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/contents/big',
      json(Array.from({ length: 1000 }, (_, index) => ({ name: `f${index}`, type: 'file', size: 1 }))),
    )
    fake.on('GET', '/repos/octo/demo/contents/small', json([{ name: 'a', type: 'file', size: 1 }]))
    const big = await call('get_file_contents', { repo: 'octo/demo', path: 'big' })
    expect(textOf(big)).toContain('GitHub lists at most 1000 entries of a directory')
    const small = await call('get_file_contents', { repo: 'octo/demo', path: 'small' })
    expect(textOf(small)).not.toContain('More may exist')
  })

  it('get_commit says when GitHub listed as many files as a commit answer holds', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/commits/c1',
      json({
        ...commit('c1', 'Huge'),
        files: Array.from({ length: 300 }, (_, index) => ({
          filename: `f${index}`,
          status: 'added',
          additions: 1,
          deletions: 0,
        })),
      }),
    )
    const result = await call('get_commit', { repo: 'octo/demo', sha: 'c1' })
    expect(dataOf(result).files).toHaveLength(300)
    expect(textOf(result)).toContain('More may exist: GitHub lists at most 300 files of a commit.')
  })
})
