import { connectInMemory } from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { closeAll, dataOf, fastServer, textOf } from './helpers.js'

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
  await closeAll()
})

async function connect(argv: string[], options: { era?: 'modern'; onToolListChanged?: () => void } = {}) {
  const connection = await connectInMemory(fastServer, { argv, env: { GITHUB_TOKEN: 't' }, ...options })
  open.push(connection)
  const call = (name: string, args: Record<string, unknown>) =>
    connection.client.callTool({ name, arguments: args })
  const names = async () => (await connection.client.listTools()).tools.map((tool) => String(tool.name))
  return { connection, call, names }
}

describe('find_tools (the dynamic toolset)', () => {
  it('finds tools by words and enables a toolset on this connection', async () => {
    let changes = 0
    const { call, names } = await connect(['--toolsets', 'default,dynamic'], {
      onToolListChanged: () => changes++,
    })
    expect(await names()).not.toContain('list_dependabot_alerts')
    const found = dataOf(await call('find_tools', { query: 'dependabot alert' }))
    expect(found.tools.map((tool: { name: string }) => tool.name)).toEqual([
      'list_dependabot_alerts',
      'get_dependabot_alert',
    ])
    const enabled = await call('find_tools', { query: 'dependabot', enable_toolset: 'dependabot' })
    expect(dataOf(enabled).enabled).toEqual(['list_dependabot_alerts', 'get_dependabot_alert'])
    await expect.poll(() => changes).toBe(1)
    expect(await names()).toEqual(
      expect.arrayContaining(['find_tools', 'get_issue', 'list_dependabot_alerts']),
    )
  })

  it('finds and enables no writing tool under --read-only', async () => {
    const { call, names } = await connect(['--toolsets', 'dynamic', '--read-only'])
    const found = dataOf(await call('find_tools', { query: 'label', enable_toolset: 'labels' }))
    expect(found.tools.every((tool: { name: string }) => !/^(create|update|delete)_/.test(tool.name))).toBe(
      true,
    )
    expect(found.enabled).toEqual(['list_labels', 'get_label'])
    expect(await names()).toEqual(['find_tools', 'list_labels', 'get_label'])
  })

  it('says how to get a toolset when the request cannot change the list (2026-07-28)', async () => {
    const { call } = await connect(['--toolsets', 'dynamic'], { era: 'modern' })
    const result = await call('find_tools', { query: 'gist', enable_toolset: 'gists' })
    expect(dataOf(result).enabled).toEqual([])
    expect(textOf(result)).toContain('start the server with --toolsets gists')
  })

  it('names the toolsets when a toolset is unknown', async () => {
    const { call } = await connect(['--toolsets', 'dynamic'])
    expect(textOf(await call('find_tools', { query: '', enable_toolset: 'wikis' }))).toMatch(
      /Unknown toolset "wikis"; toolsets: .*projects/,
    )
  })
})
