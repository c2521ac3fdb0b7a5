import { checkToolContract, toolListSnapshot } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { readTools, server, writeTools } from '../src/server.js'
import { uploadFile } from '../src/tools/files.js'
import { searchMessages } from '../src/tools/messages.js'
import { withWorkspaces } from '../src/workspaces.js'
import { connect, fake, USER_TOKEN, useCleanup } from './helpers.js'

useCleanup()

describe('slack contract', () => {
  it('follows the tool naming and annotation rules', () => {
    expect(
      checkToolContract(
        withWorkspaces([...readTools, searchMessages, ...writeTools, uploadFile], ['default', 'other']),
        { serverName: 'slack', auditArguments: server.auditArguments },
      ),
    ).toEqual([])
  })

  it('lists only reads by default: search needs a user token, writes need --allow-writes', async () => {
    const slack = await fake()
    const names = (await (await connect(slack)).client.listTools()).tools.map((tool) => tool.name)
    expect(names).toEqual([
      'list_channels',
      'get_channel_info',
      'find_channel',
      'get_channel_history',
      'get_thread_replies',
      'get_message',
      'list_users',
      'get_user_profile',
      'find_user',
      'list_user_groups',
      'list_unreads',
      'list_files',
      'get_file',
      'get_canvas',
    ])
    const withSearch = (await (await connect(slack, [], { SLACK_USER_TOKEN: USER_TOKEN })).client.listTools())
      .tools
    expect(withSearch.map((tool) => tool.name)).toContain('search_messages')
    const withWrites = (await (await connect(slack, ['--allow-writes'])).client.listTools()).tools
    expect(withWrites.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['post_message', 'delete_message']),
    )
    const readOnly = (await (await connect(slack, ['--allow-writes', '--read-only'])).client.listTools())
      .tools
    expect(readOnly.map((tool) => tool.name)).not.toContain('post_message')
  })

  it('keeps the whole catalogue, every toolset on, within 155 tokens a tool (bytes of the tools/list result ÷ 4)', async () => {
    const slack = await fake()
    const { tools } = await (
      await connect(slack, ['--allow-writes', '--upload-dir', '.'], { SLACK_USER_TOKEN: USER_TOKEN })
    ).client.listTools()
    expect(tools).toHaveLength(27)
    expect(Buffer.byteLength(JSON.stringify({ tools })) / 4 / tools.length).toBeLessThanOrEqual(155)
  })

  it('stays within 155 tokens a tool with two workspaces, where every tool takes workspace', async () => {
    const slack = await fake()
    const { tools } = await (
      await connect(
        slack,
        ['--allow-writes', '--upload-dir', '.', '--workspace', 'second=KEEL_TEST_SECOND_TOKEN'],
        { SLACK_USER_TOKEN: USER_TOKEN, KEEL_TEST_SECOND_TOKEN: 'xoxb-second-workspace-token' },
      )
    ).client.listTools()
    expect(tools.every((tool) => 'workspace' in (tool.inputSchema.properties ?? {}))).toBe(true)
    expect(Buffer.byteLength(JSON.stringify({ tools })) / 4 / tools.length).toBeLessThanOrEqual(155)
  })

  it('keeps its tool list stable', async () => {
    const slack = await fake()
    const { tools } = await (
      await connect(slack, ['--allow-writes', '--upload-dir', '.'], { SLACK_USER_TOKEN: USER_TOKEN })
    ).client.listTools()
    expect(toolListSnapshot(tools)).toMatchSnapshot()
  })

  it('answers initialize and tools/list without calling Slack, however large the workspace', async () => {
    const slack = await fake({ users: 50_000, channels: 10_000 })
    const connection = await connect(slack)
    await connection.client.listTools()
    expect(slack.calls).toEqual([])
  })
})
