import { afterEach, describe, expect, it } from 'vitest'
import { RECORDED_TOKEN, recorded } from './fake-github.js'
import { closeAll, dataOf, errorKind, json, setup, textOf } from './helpers.js'

afterEach(closeAll)

const me = { login: 'octocat', name: null, type: 'User', html_url: 'https://github.com/octocat' }
const nowSeconds = () => Math.floor(Date.now() / 1000)

describe('rate limits and retries (real plugin-throttling and plugin-retry)', () => {
  it('waits out a primary rate limit, then succeeds', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/user',
      json({ message: 'API rate limit exceeded for user ID 1.' }, 403, {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(nowSeconds() + 1),
      }),
      json(me),
    )
    const result = await call('get_me')
    expect(result.structuredContent?.login).toBe('octocat')
    expect(fake.calls('GET', '/user')).toHaveLength(2)
  })

  it('fails with rate_limited and the reset time when the wait would be too long', async () => {
    const { fake, call } = await setup()
    const reset = nowSeconds() + 3600
    fake.on(
      'GET',
      '/user',
      json({ message: 'API rate limit exceeded' }, 403, {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(reset),
      }),
    )
    const result = await call('get_me')
    expect(errorKind(result)).toBe('rate_limited')
    expect(textOf(result)).toContain(new Date(reset * 1000).toISOString())
    expect(fake.calls('GET', '/user')).toHaveLength(1)
  })

  it('honours Retry-After on a secondary rate limit, then succeeds', async () => {
    const { fake, call } = await setup()
    fake.on(
      'POST',
      '/repos/octo/demo/issues',
      json(
        {
          message:
            'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
        },
        403,
        { 'retry-after': '3' },
      ),
      json({ number: 4, html_url: 'https://github.com/octo/demo/issues/4' }, 201),
    )
    expect(dataOf(await call('create_issue', { repo: 'octo/demo', title: 'x' }))).toEqual({
      number: 4,
      url: 'https://github.com/octo/demo/issues/4',
    })
    expect(fake.calls('POST', '/repos/octo/demo/issues')).toHaveLength(2)
  })

  it('reports a secondary rate limit that persists as rate_limited with Retry-After', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/user',
      json({ message: 'You have exceeded a secondary rate limit.' }, 403, { 'retry-after': '2' }),
    )
    const result = await call('get_me')
    expect(errorKind(result)).toBe('rate_limited')
    expect(textOf(result)).toContain('retry after 2 s')
    expect(fake.calls('GET', '/user')).toHaveLength(2)
  })

  it.each([
    ['cut-off JSON', '{"login": "half'],
    ['an empty body', ''],
  ])('reports a 200 with %s as unavailable, then serves the next call', async (_what, body) => {
    const { fake, call } = await setup()
    fake.once('GET', '/user', { status: 200, body })
    fake.on('GET', '/user', json(me))
    const broken = await call('get_me')
    expect(errorKind(broken)).toBe('unavailable')
    expect(textOf(broken)).toContain('not JSON')
    expect((await call('get_me')).structuredContent?.login).toBe('octocat')
  })

  it('retries 5xx answers, then succeeds', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/user',
      json({ message: 'Bad gateway' }, 502),
      json({ message: 'Unavailable' }, 503),
      json(me),
    )
    expect((await call('get_me')).structuredContent?.login).toBe('octocat')
    expect(fake.calls('GET', '/user')).toHaveLength(3)
  })

  it('gives unavailable after the retries are spent', async () => {
    const { fake, call } = await setup()
    fake.on('GET', '/user', json({ message: 'Server Error' }, 500))
    const result = await call('get_me')
    expect(errorKind(result)).toBe('unavailable')
    expect(textOf(result)).toContain('GitHub is unavailable (HTTP 500) after retries')
    expect(fake.calls('GET', '/user')).toHaveLength(3)
  })
})

describe('writes are sent once (the retry plugin retries reads only)', () => {
  it('opens the issue once when GitHub answers 502, and tells the model to look before repeating it', async () => {
    const { fake, call } = await setup()
    fake.on(
      'POST',
      '/repos/octo/demo/issues',
      json({ message: 'Bad gateway' }, 502),
      json({ number: 5, html_url: 'https://github.com/octo/demo/issues/5' }, 201),
    )
    const result = await call('create_issue', { repo: 'octo/demo', title: 'x' })
    expect(errorKind(result)).toBe('unavailable')
    expect(textOf(result)).toContain('GitHub did not confirm the write (HTTP 502); it may have been applied')
    expect(textOf(result)).toContain('before calling again')
    expect(fake.calls('POST', '/repos/octo/demo/issues')).toHaveLength(1)
    // Calling again is the model's decision.
    expect(dataOf(await call('create_issue', { repo: 'octo/demo', title: 'x' }))).toMatchObject({ number: 5 })
    expect(fake.calls('POST', '/repos/octo/demo/issues')).toHaveLength(2)
  })
})

describe('error mapping', () => {
  it('401 → unauthenticated, without echoing the token', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/user',
      json({ message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' }, 401),
    )
    const result = await call('get_me')
    expect(errorKind(result)).toBe('unauthenticated')
    expect(JSON.stringify(result)).not.toContain(RECORDED_TOKEN)
    expect(JSON.stringify(result)).not.toContain(RECORDED_TOKEN.slice(-8))
    expect(fake.calls('GET', '/user')).toHaveLength(1)
  })

  it('403 without a rate limit → permission_denied naming the scope GitHub asks for', async () => {
    const { fake, call } = await setup()
    fake.on(
      'POST',
      '/user/repos',
      json({ message: 'Resource not accessible by personal access token' }, 403, {
        'x-accepted-oauth-scopes': 'repo',
        'x-oauth-scopes': 'public_repo, read:org',
      }),
    )
    const result = await call('create_repository', { name: 'x' })
    expect(errorKind(result)).toBe('permission_denied')
    expect(textOf(result)).toContain('needs the token scope(s): repo (the token has: public_repo, read:org)')
  })

  it('403 with fine-grained permissions names them', async () => {
    const { fake, call } = await setup()
    fake.on(
      'GET',
      '/repos/octo/demo/actions/runs',
      json({ message: 'Resource not accessible by personal access token' }, 403, {
        'x-accepted-github-permissions': 'actions=read',
      }),
    )
    const result = await call('list_workflow_runs', { repo: 'octo/demo' })
    expect(errorKind(result)).toBe('permission_denied')
    expect(textOf(result)).toContain('actions=read')
  })

  it('404 → not_found with the private-repository hint', async () => {
    const { call } = await setup()
    const result = await call('get_issue', { repo: 'octo/secret', issue_number: 1 })
    expect(errorKind(result)).toBe('not_found')
    expect(textOf(result)).toContain('private repository')
  })

  it("409 → conflict with GitHub's message", async () => {
    const { fake, call } = await setup()
    fake.on(
      'PUT',
      '/repos/octo/demo/pulls/2/merge',
      json({ message: 'Head branch was modified. Review and try the merge again.' }, 409),
    )
    const result = await call('merge_pull_request', {
      repo: 'octo/demo',
      pull_number: 2,
      merge_method: 'merge',
    })
    expect(errorKind(result)).toBe('conflict')
    expect(textOf(result)).toContain('Head branch was modified')
  })

  it('422 → invalid_argument with the recorded field errors', async () => {
    const { fake, call } = await setup()
    const [validation] = recorded('errors')
    fake.on('POST', '/repos/octo/demo/issues', json(validation?.response, validation?.status ?? 422))
    const result = await call('create_issue', { repo: 'octo/demo', title: 'x' })
    expect(errorKind(result)).toBe('invalid_argument')
    expect(textOf(result)).toContain('Validation Failed: Label.color invalid')
  })

  it('an unreachable API → unavailable, and the process keeps serving', async () => {
    const { fake, call } = await setup()
    await fake.close()
    const result = await call('get_me')
    expect(errorKind(result)).toBe('unavailable')
    expect(textOf(result)).not.toMatch(/at .*\.(ts|js):\d+/)
  })
})
