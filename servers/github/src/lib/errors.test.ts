import { describe, expect, it } from 'vitest'
import { TokenHostError } from './client.js'
import { classifyGitHubError } from './errors.js'

const http = (status: number, data: unknown = {}, headers: Record<string, string> = {}) =>
  Object.assign(new Error('x'), { name: 'HttpError', status, response: { headers, data } })

describe('classifyGitHubError', () => {
  it.each([
    [401, {}, {}, 'unauthenticated'],
    [
      403,
      { message: 'API rate limit exceeded' },
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1900000000' },
      'rate_limited',
    ],
    [403, { message: 'You have exceeded a secondary rate limit' }, {}, 'rate_limited'],
    [429, { message: 'Too many' }, {}, 'rate_limited'],
    [
      403,
      { message: 'Must have admin rights' },
      { 'x-accepted-oauth-scopes': 'admin:org' },
      'permission_denied',
    ],
    [404, {}, {}, 'not_found'],
    [409, { message: 'Git Repository is empty.' }, {}, 'conflict'],
    [
      422,
      {
        message: 'Validation Failed',
        errors: [{ resource: 'Issue', field: 'title', code: 'missing_field' }],
      },
      {},
      'invalid_argument',
    ],
    [410, { message: 'Issues are disabled' }, {}, 'invalid_argument'],
    [500, {}, {}, 'unavailable'],
    [503, {}, {}, 'unavailable'],
  ])('%i %j → %s', (status, data, headers, kind) => {
    expect(classifyGitHubError(http(status, data, headers))?.kind).toBe(kind)
  })

  it('names the reset time, the missing scope and the field errors', () => {
    expect(
      classifyGitHubError(http(403, {}, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1900000000' }))
        ?.message,
    ).toContain('2030-03-17T17:46:40.000Z')
    expect(
      classifyGitHubError(
        http(403, { message: 'no' }, { 'x-accepted-oauth-scopes': 'repo', 'x-oauth-scopes': '' }),
      )?.hint,
    ).toContain('repo (the token has: none)')
    expect(
      classifyGitHubError(
        http(422, {
          message: 'Validation Failed',
          errors: [{ resource: 'Issue', field: 'title', code: 'missing_field' }],
        }),
      )?.message,
    ).toBe('Validation Failed: Issue.title missing_field')
  })

  it("cleans and caps GitHub's message", () => {
    const message = classifyGitHubError(http(409, { message: `a\u202Eb${'x'.repeat(1000)}` }))?.message ?? ''
    expect(message).not.toContain('\u202E')
    expect(message.length).toBeLessThan(350)
  })

  it('maps the host guard and ignores unrelated errors', () => {
    expect(classifyGitHubError(new TokenHostError('refused'))?.kind).toBe('permission_denied')
    expect(classifyGitHubError(new Error('boom'))).toBeUndefined()
  })
})
