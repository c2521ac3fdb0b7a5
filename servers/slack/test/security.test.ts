import { connectInMemory } from '@keel-mcp/core/testing'
import { describe, expect, it } from 'vitest'
import { escapeBroadcasts } from '../src/lib/slack.js'
import { createServer } from '../src/server.js'
import { BOT_TOKEN, USER_TOKEN } from './fake-slack.js'
import { call, connect, fake, useCleanup } from './helpers.js'

useCleanup()

const BACKOFF_MS = 1500
/** The shipped server with a short back-off: a test must not sit out 30 s. */
const backoffServer = createServer({
  minRetryMs: 10,
  retries: 2,
  rateLimit: { backoffMs: BACKOFF_MS, maxBackoffMs: BACKOFF_MS },
})

describe('rate limits through the real Slack client', () => {
  it('answers a 429 with Retry-After: 3600 as rate_limited at once, then asks Slack again after the capped back-off', async () => {
    const slack = await fake()
    const connection = await connectInMemory(backoffServer, {
      env: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_API_URL: slack.url, MCP_TOOL_TIMEOUT_MS: '8000' },
    })
    slack.fail({ method: 'users.list', status: 429, retryAfter: 3600 })
    const limited = await call(connection, 'list_users', { limit: 5 })
    // Before: the client slept for the hour and the call ended as `timeout`.
    expect(limited.isError).toBe(true)
    expect(limited.text).toMatch(/^rate_limited: Slack: ratelimited/)
    expect(limited.text).toMatch(/Slack asks to wait 3600 s \(until \d{4}-/)
    expect(limited.text).toMatch(/this server tries Slack again after \d{4}-/)
    const asked = () => slack.calls.filter((entry) => entry.method === 'users.list').length
    expect(asked()).toBe(1)
    // Other methods are not held behind the limited one (the client's queue is never paused).
    expect((await call(connection, 'get_channel_info', { channel: 'C0GENERAL' })).isError).toBe(false)
    // Within the back-off, the limited method is answered without asking Slack.
    const again = await call(connection, 'list_users', { limit: 5 })
    if (again.isError) {
      expect(again.text).toMatch(/^rate_limited: /)
      expect(asked()).toBe(1)
    }
    // Once the back-off has passed, the next call reaches the (healthy again) API and succeeds.
    let recovered = again.isError ? undefined : again
    for (let attempt = 0; attempt < 40 && !recovered; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS / 5))
      const next = await call(connection, 'list_users', { limit: 5 })
      if (!next.isError) recovered = next
      else expect(next.text).toMatch(/^rate_limited: /)
    }
    expect(recovered?.data.users.length).toBeGreaterThan(0)
    expect(asked()).toBe(2)
    await connection.close()
  })
})

describe('broadcasts are the operator’s decision', () => {
  it.each([
    '<!channel>',
    '<!here>',
    '<!everyone>',
    '<!group>',
    '<!GROUP>',
    '<!here|here>',
    '<!subteam^S0123|@oncall>',
    '<!channel',
    '<!date^1392734382^{date}|Feb 18>',
  ])('escapes %s when the server posts', async (mention) => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    const posted = await call(connection, 'post_message', { channel: '#random', text: `${mention} now` })
    expect(posted.isError).toBe(false)
    const sent = String(slack.calls.find((entry) => entry.method === 'chat.postMessage')?.args.text)
    expect(sent).not.toContain('<!')
    expect(sent).toContain('&lt;!')
  })

  it('escapes every special command, keeping links and user mentions', () => {
    expect(escapeBroadcasts('<!group> see <https://example.com|docs>, cc <@U0123>')).toBe(
      '&lt;!group&gt; see <https://example.com|docs>, cc <@U0123>',
    )
  })

  it('has no allow_broadcast argument: a model cannot ask for a broadcast', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    const { tools } = await connection.client.listTools()
    for (const tool of tools)
      expect(Object.keys(tool.inputSchema.properties ?? {})).not.toContain('allow_broadcast')
    const refused = await connection.client
      .callTool({
        name: 'post_message',
        arguments: { channel: '#random', text: '<!here> deploy', allow_broadcast: true },
      })
      .catch((error: unknown) => ({ isError: true, error }))
    expect(refused.isError).toBe(true)
    expect(slack.calls.some((entry) => entry.method === 'chat.postMessage')).toBe(false)
  })

  it('lets broadcasts through with --allow-broadcast (or SLACK_ALLOW_BROADCAST)', async () => {
    const slack = await fake()
    const flagged = await connect(slack, ['--allow-writes', '--allow-broadcast'])
    await call(flagged, 'post_message', { channel: '#random', text: '<!here> deploy done' })
    const viaEnv = await connect(slack, ['--allow-writes'], { SLACK_ALLOW_BROADCAST: 'true' })
    await call(viaEnv, 'reply_to_thread', {
      channel: '#random',
      thread_ts: '1700000050.000100',
      text: '<!group> too',
    })
    const texts = slack.calls
      .filter((entry) => entry.method === 'chat.postMessage')
      .map((entry) => entry.args.text)
    expect(texts).toEqual(['<!here> deploy done', '<!group> too'])
  })
})

describe('search results are judged by their channel', () => {
  it('drops a hit that does not name its channel (fail closed)', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--channels', '#general'], { SLACK_USER_TOKEN: USER_TOKEN })
    const hit = (channel: Record<string, unknown> | undefined, text: string) => ({
      ts: '1700000001.000100',
      user: 'U00000002',
      text,
      ...(channel ? { channel } : {}),
    })
    slack.fail({
      method: 'search.messages',
      status: 200,
      body: JSON.stringify({
        ok: true,
        messages: {
          total: 4,
          matches: [
            hit(undefined, 'no channel at all'),
            hit({ name: 'secret-plans' }, 'a channel without its id'),
            hit({ id: '', name: 'general' }, 'an empty id'),
            hit({ id: 'C0GENERAL', name: 'general' }, 'allowed'),
          ],
          paging: { count: 20, total: 4, page: 1, pages: 1 },
        },
      }),
    })
    const result = await call(connection, 'search_messages', { query: 'anything' })
    expect(result.isError).toBe(false)
    expect(result.data.messages.map((message: { text: string }) => message.text)).toEqual(['allowed'])
  })
})

describe('a 429 without Retry-After', () => {
  it('is waited out like a Retry-After of 1 s, then rate_limited (not internal), other methods served', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    slack.fail({ method: 'users.list', status: 429 })
    slack.fail({ method: 'users.list', status: 429 })
    const result = await call(connection, 'list_users', { limit: 5 })
    expect(result.text).toMatch(/^rate_limited: /)
    expect(slack.calls.filter((entry) => entry.method === 'users.list')).toHaveLength(2)
    expect((await call(connection, 'get_channel_info', { channel: 'C0GENERAL' })).isError).toBe(false)
  })
})
