import { createLogger, prepare, serveHttp } from '@keel-mcp/core'
import { connectHttp, connectInMemory } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { FakeGitHub, type FakeRequest } from './fake-github.js'
import { user } from './fixtures.js'
import { errorKind, fastServer, json, textOf } from './helpers.js'

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

// As GitHub answers a fine-grained token that lacks a permission: 403, the permission sets that
// would have served the request, and no X-OAuth-Scopes.
const lacking = (permissions: string) =>
  json(
    {
      message: 'Resource not accessible by personal access token',
      documentation_url: 'https://docs.github.com/rest/issues/issues#create-an-issue',
      status: '403',
    },
    403,
    { 'x-accepted-github-permissions': permissions },
  )

const FINE_GRAINED =
  'github_pat_11AAAAAAA0aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
const CLASSIC = 'ghp_classic000000000000000000000000000000'

describe('a fine-grained token', () => {
  async function start() {
    const fake = await FakeGitHub.start()
    open.push(fake)
    let changes = 0
    const connection = await connectInMemory(fastServer, {
      argv: ['--api-url', fake.url, '--toolsets', 'all'],
      env: { GITHUB_TOKEN: FINE_GRAINED },
      onToolListChanged: () => changes++,
    })
    open.push(connection)
    const names = async () => (await connection.client.listTools()).tools.map((tool) => String(tool.name))
    return { fake, connection, names, changes: () => changes }
  }

  it('never lists the notifications tools, and a call to one says why', async () => {
    const { fake, connection, names } = await start()
    const listed = await names()
    expect(listed.filter((name) => /notification|subscription/.test(name))).toEqual([])
    expect(listed).toContain('create_issue')
    const result = await connection.client.callTool({ name: 'list_notifications', arguments: {} })
    expect(errorKind(result)).toBe('permission_denied')
    expect(textOf(result)).toContain('does not serve to fine-grained tokens')
    expect(fake.requests).toEqual([])
  })

  it('learns from the first 403 which permission it lacks, hides what needs it, and names it on a later call', async () => {
    const { fake, connection, names, changes } = await start()
    fake.on('POST', '/repos/octo/demo/issues', lacking('issues=write'))
    const first = await connection.client.callTool({
      name: 'create_issue',
      arguments: { repo: 'octo/demo', title: 'Broken' },
    })
    expect(errorKind(first)).toBe('permission_denied')
    expect(textOf(first)).toContain('issues=write')
    await expect.poll(changes).toBe(1)

    const after = await names()
    for (const name of ['create_issue', 'update_issue', 'add_sub_issue', 'remove_sub_issue'])
      expect(after).not.toContain(name)
    // Reads of issues, writes that a pull_requests permission also serves, other areas: kept.
    for (const name of [
      'get_issue',
      'list_issues',
      'add_issue_comment',
      'create_label',
      'create_pull_request',
    ])
      expect(after).toContain(name)

    const again = await connection.client.callTool({
      name: 'create_issue',
      arguments: { repo: 'octo/demo', title: 'Broken' },
    })
    expect(errorKind(again)).toBe('permission_denied')
    expect(textOf(again)).toContain('"Issues: write"')
    expect(fake.calls('POST', '/repos/octo/demo/issues')).toHaveLength(1)
  })

  it('hides a tool served by either of two permissions only once both are known to be missing', async () => {
    const { fake, connection, names } = await start()
    fake.on('POST', '/repos/octo/demo/labels', lacking('issues=write; pull_requests=write'))
    fake.on('POST', '/repos/octo/demo/issues/1/comments', lacking('issues=write; pull_requests=write'))
    const result = await connection.client.callTool({
      name: 'create_label',
      arguments: { repo: 'octo/demo', name: 'bug', color: 'ff0000' },
    })
    expect(errorKind(result)).toBe('permission_denied')
    const after = await names()
    for (const name of ['create_label', 'add_issue_comment', 'create_issue', 'merge_pull_request'])
      expect(after).not.toContain(name)
    expect(after).toContain('get_pull_request')
  })

  it('learns nothing from a 403 without the header (policy), a rate limit, or one naming several permissions together', async () => {
    const { fake, connection, names, changes } = await start()
    const before = await names()
    fake.on('POST', '/repos/octo/demo/issues', lacking('issues=write,contents=read'))
    const several = await connection.client.callTool({
      name: 'create_issue',
      arguments: { repo: 'octo/demo', title: 'x' },
    })
    expect(errorKind(several)).toBe('permission_denied')
    fake.on('GET', '/repos/octo/demo/issues/1', json({ message: 'Must have admin rights' }, 403))
    const policy = await connection.client.callTool({
      name: 'get_issue',
      arguments: { repo: 'octo/demo', issue_number: 1 },
    })
    expect(errorKind(policy)).toBe('permission_denied')
    // A secondary rate limit on a route the token may use, with the permissions the route needs.
    fake.on(
      'GET',
      '/repos/octo/demo/issues',
      json({ message: 'You have exceeded a secondary rate limit.' }, 403, {
        'retry-after': '1',
        'x-accepted-github-permissions': 'issues=read',
      }),
    )
    const limited = await connection.client.callTool({
      name: 'list_issues',
      arguments: { repo: 'octo/demo' },
    })
    expect(errorKind(limited)).toBe('rate_limited')
    expect(await names()).toEqual(before)
    expect(changes()).toBe(0)
  })
})

describe('with --token-from-request, what is hidden follows each caller’s own token', () => {
  it('two callers over HTTP: a classic token without gist, a fine-grained one without issues=write', async () => {
    const fake = await FakeGitHub.start()
    open.push(fake)
    const runtime = await prepare(fastServer, {
      argv: [
        '--transport',
        'http',
        '--port',
        '0',
        '--token-from-request',
        '--api-url',
        fake.url,
        '--toolsets',
        'all',
      ],
      env: {},
      logger: createLogger({ level: 'silent' }, {}),
    })
    const endpoint = await serveHttp(runtime)
    open.push(endpoint)
    const by = (request: FakeRequest) => (request.authorization === `token ${CLASSIC}` ? 'classic' : 'fine')
    fake.on('GET', '/user', (request) =>
      by(request) === 'classic'
        ? json(user('alice'), 200, { 'x-oauth-scopes': 'repo, read:org' })
        : json(user('bob')),
    )
    fake.on('POST', '/repos/octo/demo/issues', (request) =>
      by(request) === 'classic' ? json({ message: 'unexpected' }, 500) : lacking('issues=write'),
    )
    let aliceChanges = 0
    const alice = await connectHttp(endpoint.url, { token: CLASSIC, onToolListChanged: () => aliceChanges++ })
    const bob = await connectHttp(endpoint.url, { token: FINE_GRAINED, generation: 'v1' })
    open.push(alice, bob)
    const names = async (caller: typeof alice) =>
      (await caller.client.listTools()).tools.map((tool) => String(tool.name))

    await alice.client.callTool({ name: 'get_me', arguments: {} })
    await expect.poll(() => aliceChanges).toBe(1)
    const denied = await bob.client.callTool({
      name: 'create_issue',
      arguments: { repo: 'octo/demo', title: 'x' },
    })
    expect(errorKind(denied)).toBe('permission_denied')

    const aliceTools = await names(alice)
    const bobTools = await names(bob)
    expect(aliceTools).not.toContain('create_gist')
    expect(aliceTools).toContain('create_issue')
    expect(aliceTools).toContain('list_notifications')
    expect(bobTools).toContain('create_gist')
    expect(bobTools).not.toContain('create_issue')
    expect(bobTools).not.toContain('list_notifications')

    const aliceGist = await alice.client.callTool({
      name: 'create_gist',
      arguments: { files: { 'a.txt': 'a' } },
    })
    expect(errorKind(aliceGist)).toBe('permission_denied')
    expect(textOf(aliceGist)).toContain('its scopes: repo, read:org')
    const bobIssue = await bob.client.callTool({
      name: 'create_issue',
      arguments: { repo: 'octo/demo', title: 'x' },
    })
    expect(textOf(bobIssue)).toContain('"Issues: write"')
    // Refused by the server: GitHub saw one create_issue (bob's first), and no gist at all.
    expect(fake.calls('POST', '/repos/octo/demo/issues')).toHaveLength(1)
    expect(fake.calls('POST', '/gists')).toHaveLength(0)
  })
})
