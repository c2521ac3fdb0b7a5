import { connectInMemory } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { FakeGitHub } from './fake-github.js'
import { user } from './fixtures.js'
import { fastServer, json } from './helpers.js'

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

async function start(scopes: string | undefined, argv: string[] = []) {
  const fake = await FakeGitHub.start()
  open.push(fake)
  fake.on(
    'GET',
    '/user',
    json(user('octocat'), 200, scopes === undefined ? {} : { 'x-oauth-scopes': scopes }),
  )
  let changes = 0
  const connection = await connectInMemory(fastServer, {
    argv: ['--api-url', fake.url, '--toolsets', 'all', ...argv],
    env: { GITHUB_TOKEN: 'ghp_classic000000000000000000000000000000' },
    onToolListChanged: () => changes++,
  })
  open.push(connection)
  const names = async () => (await connection.client.listTools()).tools.map((tool) => String(tool.name))
  return { connection, names, changes: () => changes }
}

describe('tools a classic token cannot use are hidden', () => {
  it('hides them once an answer shows the scopes, and says the list changed', async () => {
    const { connection, names, changes } = await start('repo, read:org')
    const before = await names()
    expect(before).toContain('create_gist')
    await connection.client.callTool({ name: 'get_me', arguments: {} })
    await expect.poll(changes).toBe(1)
    const after = await names()
    for (const name of ['create_gist', 'update_gist', 'list_projects', 'add_project_item'])
      expect(after).not.toContain(name)
    for (const name of ['get_gist', 'create_issue', 'list_notifications', 'list_dependabot_alerts'])
      expect(after).toContain(name)
    await expect(
      connection.client.callTool({ name: 'create_gist', arguments: { files: { 'a.txt': 'a' } } }),
    ).resolves.toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('permission_denied: create_gist needs a token scope') }],
    })
  })

  it('hides nothing for a token that shows no scopes (fine-grained, GitHub App)', async () => {
    const { connection, names, changes } = await start(undefined)
    const before = await names()
    await connection.client.callTool({ name: 'get_me', arguments: {} })
    expect(await names()).toEqual(before)
    expect(changes()).toBe(0)
  })
})
