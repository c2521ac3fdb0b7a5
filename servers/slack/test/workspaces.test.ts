import { connectInMemory } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { SECOND_BOT_TOKEN } from './fake-slack.js'
import { BOT_TOKEN, call, connect, fake, testServer, useCleanup } from './helpers.js'

useCleanup()
const SECOND = 'KEEL_TEST_SLACK_SECOND_TOKEN'
// The server reads a workspace's token from the environment core gives it (a bin's own).
const SECOND_ENV = { [SECOND]: SECOND_BOT_TOKEN }

describe('several workspaces', () => {
  it('sends each call with the token of the workspace it names, the first by default', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--workspace', `second=${SECOND}`], SECOND_ENV)
    expect(connection.client.getInstructions()).toContain('Workspaces: default, second')
    const { tools } = await connection.client.listTools()
    expect(tools.every((tool) => 'workspace' in (tool.inputSchema.properties ?? {}))).toBe(true)
    const tokensOf = (from: number) => slack.calls.slice(from).map((entry) => [entry.method, entry.token])
    expect((await call(connection, 'find_user', { name: 'user5', workspace: 'second' })).data.user.id).toBe(
      'U00000005',
    )
    expect(tokensOf(0)).toEqual([['users.list', SECOND_BOT_TOKEN]])
    // Each workspace has its own directory: the default one pages users.list itself, with its token.
    await call(connection, 'find_user', { name: 'user5' })
    expect(tokensOf(1)).toEqual([['users.list', BOT_TOKEN]])
    const secret = await call(connection, 'get_channel_history', { channel: 'G0SECRET', workspace: 'second' })
    // The channel policy is the server's, in every workspace.
    expect(secret.text).toMatch(/^permission_denied: .*private/)
  })

  it('refuses an unknown workspace with the names it knows', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--workspace', `second=${SECOND}`], SECOND_ENV)
    const refused = await call(connection, 'list_channels', { workspace: 'third' })
    expect(refused.isError).toBe(true)
    expect(refused.text).toMatch(/^invalid_argument: .*workspace: must be one of: default, second/)
  })

  it('refuses to start when a workspace names an unset env var', async () => {
    const slack = await fake()
    await expect(
      connectInMemory(testServer, {
        argv: ['--workspace', 'other=KEEL_TEST_SLACK_UNSET_TOKEN'],
        env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.url },
      }),
    ).rejects.toThrow(/KEEL_TEST_SLACK_UNSET_TOKEN is not set/)
  })

  it('keeps one workspace without the argument (nothing to pay for in the catalogue)', async () => {
    const slack = await fake()
    const { tools } = await (await connect(slack)).client.listTools()
    expect(tools.some((tool) => 'workspace' in (tool.inputSchema.properties ?? {}))).toBe(false)
  })
})
