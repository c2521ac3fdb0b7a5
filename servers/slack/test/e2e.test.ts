import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type Connection,
  connectHttp,
  connectStdio,
  readAuditLines,
  runProcess,
  spawnHttp,
  spawnRaw,
} from '@keel-mcp/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { BOT_TOKEN, type FakeSlack, startFakeSlack, USER_TOKEN } from './fake-slack.js'

/** The built bin (`pnpm run build` first): core, SDK and zod inlined; @slack/web-api external, loaded on first use. */
const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

async function slack(): Promise<FakeSlack> {
  const fake = await startFakeSlack()
  open.push(fake)
  return fake
}

const env = (fake: FakeSlack) => ({
  SLACK_BOT_TOKEN: BOT_TOKEN,
  SLACK_USER_TOKEN: USER_TOKEN,
  SLACK_API_URL: fake.url,
})

describe.each(['v2', 'v1'] as const)('the built bin over stdio with the %s client', (generation) => {
  it('lists tools and reads a channel through the real Slack client', async () => {
    const fake = await slack()
    let stderr = ''
    const connection: Connection = await connectStdio({
      command: process.execPath,
      args: [BIN, '--log-level', 'debug'],
      env: env(fake),
      generation,
      onStderr: (chunk) => {
        stderr += chunk
      },
    })
    open.push(connection)
    const names = (await connection.client.listTools()).tools.map((tool) => tool.name)
    expect(names).toContain('search_messages')
    expect(names).not.toContain('post_message')
    const history = await connection.client.callTool({
      name: 'get_channel_history',
      arguments: { channel: '#general', limit: 3 },
    })
    expect(history.isError).toBeFalsy()
    expect(JSON.stringify(history.content)).toContain('a thread starter')
    // Tokens never, message texts not even at debug level from the Slack client's own logger.
    expect(stderr).not.toContain(BOT_TOKEN)
    expect(stderr).not.toContain(USER_TOKEN)
  })
})

describe.each(['v2', 'v1'] as const)('the built bin over HTTP with the %s client', (generation) => {
  it('serves the tools over Streamable HTTP', async () => {
    const fake = await slack()
    const server = await spawnHttp(process.execPath, [BIN, '--allow-writes', '--write-channels', '#random'], {
      env: env(fake),
    })
    open.push(server)
    const connection = await connectHttp(server.url, { generation })
    open.push(connection)
    const posted = await connection.client.callTool({
      name: 'post_message',
      arguments: { channel: '#random', text: 'hi' },
    })
    expect(posted.isError).toBeFalsy()
    expect(server.stderr()).not.toContain(BOT_TOKEN)
  })
})

describe('the audit log', () => {
  it('records where each call read or wrote over HTTP, never the message text or a token', async () => {
    const fake = await slack()
    const dir = await mkdtemp(join(tmpdir(), 'keel-slack-audit-'))
    open.push({ close: () => rm(dir, { recursive: true, force: true }) })
    const file = join(dir, 'audit.jsonl')
    const server = await spawnHttp(
      process.execPath,
      [BIN, '--allow-writes', '--write-channels', '#random', '--audit-log', file],
      { env: env(fake) },
    )
    open.push(server)
    const connection = await connectHttp(server.url)
    open.push(connection)
    const calls = [
      ['get_channel_history', { channel: '#general', limit: 3 }],
      ['post_message', { channel: '#random', text: 'the offsite moves to Lisbon' }],
    ] as const
    for (const [name, args] of calls)
      expect((await connection.client.callTool({ name, arguments: args })).isError).toBeFalsy()
    const lines = await readAuditLines(file, 2)
    const text = await readFile(file, 'utf8')
    expect(lines.map((line) => [line.tool, line.outcome, line.transport, line.arguments])).toEqual([
      ['get_channel_history', 'ok', 'http', { channel: '#general' }],
      ['post_message', 'ok', 'http', { channel: '#random' }],
    ])
    expect(text).not.toContain('Lisbon')
    expect(text).not.toContain(BOT_TOKEN)
  })
})

describe('the process', () => {
  it('keeps stdout to JSON-RPC and exits when stdin closes', async () => {
    const fake = await slack()
    const raw = spawnRaw(process.execPath, [BIN], { env: env(fake) })
    await raw.initialize()
    await raw.request('tools/call', { name: 'list_channels', arguments: {} })
    const ended = await raw.end()
    expect(ended.code).toBe(0)
    for (const line of raw.lines) expect(JSON.parse(line).jsonrpc).toBe('2.0')
  })

  it('refuses a plain-http API URL that is not loopback, in one line', async () => {
    const result = await runProcess(process.execPath, [BIN], {
      env: { SLACK_API_URL: 'http://slack.example.com/api/' },
    })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('must be https://')
  })

  it.each([
    ['--toolsets', 'canvas', /^mcp-server-slack: Invalid --toolsets: unknown toolset "canvas"; known: all, /],
    [
      '--tools',
      'list_channel',
      /^mcp-server-slack: Invalid --tools: unknown tool "list_channel"; known: list_channels, /,
    ],
    ['--exclude-tools', 'react', /^mcp-server-slack: Invalid --exclude-tools: unknown tool "react"; known: /],
  ])('refuses %s %s at start with exit 2, naming what exists', async (flag, value, message) => {
    const result = await runProcess(process.execPath, [BIN, flag, value], {
      env: { SLACK_BOT_TOKEN: 'xoxb-0000000000-unknown-names' },
    })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(message)
  })
})
