import { describe, expect, it } from 'vitest'
import { escapeBroadcasts, parsePermalink } from '../src/lib/slack.js'
import { BOT_TOKEN, USER_TOKEN } from './fake-slack.js'
import { call, connect, fake, useCleanup } from './helpers.js'

useCleanup()

describe('reading', () => {
  it('lists public channels with a cursor, and private ones and DMs only when allowed', async () => {
    const slack = await fake({ channels: 12 })
    const connection = await connect(slack)
    const first = await call(connection, 'list_channels', { limit: 5 })
    expect(first.data.channels.map((channel: { name: string }) => channel.name)).toContain('general')
    expect(first.text).not.toContain('secret-plans')
    expect(first.data.next_cursor).toBeTruthy()
    const second = await call(connection, 'list_channels', { limit: 5, cursor: first.data.next_cursor })
    expect(second.data.channels[0].name).not.toBe(first.data.channels[0].name)
    const wide = await connect(slack, ['--include-private', '--include-dms'])
    const all = await call(wide, 'list_channels', { limit: 200 })
    expect(all.text).toContain('secret-plans')
    expect(all.text).toContain('D0DIRECT')
  })

  it('reads history newest first with names resolved, readable times and a cursor, marked untrusted', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const page = await call(connection, 'get_channel_history', { channel: '#general', limit: 10 })
    expect(page.text.split('\n')[0]).toContain('untrusted data')
    expect(page.data.messages).toHaveLength(10)
    expect(page.data.messages[0]).toMatchObject({ text: 'a thread starter', replies: 2, user_name: 'disp1' })
    expect(page.data.messages[0].time).toMatch(/^2023-11-14T/)
    const next = await call(connection, 'get_channel_history', {
      channel: 'C0GENERAL',
      limit: 10,
      cursor: page.data.next_cursor,
    })
    expect(next.data.messages[0].ts).not.toBe(page.data.messages[0].ts)
  })

  it('reads a time window by ts or ISO date', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const window = await call(connection, 'get_channel_history', {
      channel: 'C0GENERAL',
      oldest: '1700000090.000000',
      latest: '1700000095.999999',
    })
    expect(window.data.messages.map((message: { ts: string }) => message.ts)).toEqual([
      '1700000095.000100',
      '1700000094.000100',
      '1700000093.000100',
      '1700000092.000100',
      '1700000091.000100',
      '1700000090.000100',
    ])
    const iso = await call(connection, 'get_channel_history', { channel: 'C0GENERAL', oldest: '2030-01-01' })
    expect(iso.data.messages).toEqual([])
  })

  it('reads a thread and a message by permalink', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const thread = await call(connection, 'get_thread_replies', {
      channel: 'C0GENERAL',
      thread_ts: '1700000099.000100',
    })
    expect(thread.data.messages.map((message: { text: string }) => message.text)).toEqual([
      'a thread starter',
      'first reply',
      'second reply',
    ])
    const byLink = await call(connection, 'get_message', {
      permalink: 'https://fake.slack.com/archives/C0GENERAL/p1700000098000100',
    })
    expect(byLink.data.message.text).toBe('message 24 in general')
    const reply = await call(connection, 'get_message', {
      permalink:
        'https://fake.slack.com/archives/C0GENERAL/p1700000100000200?thread_ts=1700000099.000100&cid=C0GENERAL',
    })
    expect(reply.data.message.text).toBe('first reply')
    const bad = await call(connection, 'get_message', { permalink: 'https://example.com/nope' })
    expect(bad.text).toMatch(/^invalid_argument: Not a Slack message link/)
  })

  it('finds users and channels by name in a workspace of 50,000 users and 10,000 channels', async () => {
    const slack = await fake({ users: 50_000, channels: 10_000 })
    const connection = await connect(slack)
    const user = await call(connection, 'find_user', { name: '@user49999' })
    expect(user.data.user).toMatchObject({ id: 'U00049999', name: 'user49999' })
    const byDisplay = await call(connection, 'find_user', { name: 'disp12' })
    expect(byDisplay.data.user.id).toBe('U00000012')
    const channel = await call(connection, 'find_channel', { name: '#channel-9998' })
    expect(channel.data.channel.id).toBe('C00009998')
    const missing = await call(connection, 'find_channel', { name: '#nope' })
    expect(missing.text).toMatch(/^not_found: /)
    // The second lookup used what the first one learnt: no new user pages.
    const pagesBefore = slack.calls.filter((entry) => entry.method === 'users.list').length
    await call(connection, 'find_user', { name: 'user3' })
    expect(slack.calls.filter((entry) => entry.method === 'users.list').length).toBe(pagesBefore)
  })

  it('lists users with a cursor and shows a profile', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    const first = await call(connection, 'list_users', { limit: 10 })
    expect(first.data.users).toHaveLength(10)
    expect(first.data.next_cursor).toBeTruthy()
    const profile = await call(connection, 'get_user_profile', { user: 'U00000002' })
    expect(profile.data.user).toMatchObject({
      id: 'U00000002',
      title: 'Engineer',
      time_zone: 'Europe/Berlin',
    })
  })

  it('searches with the user token only, and hides results from channels it may not read', async () => {
    const slack = await fake()
    const connection = await connect(slack, [], { SLACK_USER_TOKEN: USER_TOKEN })
    const found = await call(connection, 'search_messages', { query: 'secret plan' })
    expect(found.data.messages).toEqual([])
    const general = await call(connection, 'search_messages', { query: 'in general', count: 5 })
    expect(general.data.messages).toHaveLength(5)
    expect(general.data.more).toBe(true)
    expect(
      slack.calls
        .filter((entry) => entry.method === 'search.messages')
        .every((entry) => entry.token === USER_TOKEN),
    ).toBe(true)
  })
})

describe('the channel policy', () => {
  it('refuses private channels and DMs without their flags, and honours allow and exclude lists', async () => {
    const slack = await fake()
    const plain = await connect(slack)
    expect((await call(plain, 'get_channel_history', { channel: 'G0SECRET' })).text).toMatch(
      /^permission_denied: .*private/,
    )
    expect((await call(plain, 'get_channel_history', { channel: 'D0DIRECT' })).text).toMatch(
      /^permission_denied: direct messages are off/,
    )
    const allowList = await connect(slack, ['--channels', '#random'])
    expect((await call(allowList, 'get_channel_history', { channel: 'C0GENERAL' })).text).toMatch(
      /allow list/,
    )
    expect((await call(allowList, 'get_channel_history', { channel: '#random' })).isError).toBe(false)
    const excluded = await connect(slack, ['--include-private', '--exclude-channels', 'G0SECRET'])
    expect((await call(excluded, 'get_channel_history', { channel: 'G0SECRET' })).text).toMatch(/excluded/)
  })
})

describe('writing', () => {
  it('posts, replies and reacts only with --allow-writes, and only where --write-channels allow', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes', '--write-channels', '#random'])
    const posted = await call(connection, 'post_message', { channel: '#random', text: 'hello <!channel>' })
    expect(posted.isError).toBe(false)
    const sent = slack.calls.find((entry) => entry.method === 'chat.postMessage')
    expect(sent?.args).toMatchObject({
      text: 'hello &lt;!channel&gt;',
      unfurl_links: 'false',
      unfurl_media: 'false',
    })
    const refused = await call(connection, 'post_message', { channel: '#general', text: 'hi' })
    expect(refused.text).toMatch(/^permission_denied: #general is not in the server's --write-channels/)
    const reply = await call(connection, 'reply_to_thread', {
      channel: 'C0RANDOM',
      thread_ts: posted.data.ts,
      text: 'in thread',
    })
    expect(reply.isError).toBe(false)
    expect(
      (await call(connection, 'add_reaction', { channel: 'C0RANDOM', ts: posted.data.ts, name: ':eyes:' }))
        .isError,
    ).toBe(false)
  })

  it('escapes broadcasts unless the operator allows them', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes', '--allow-broadcast'])
    await call(connection, 'post_message', { channel: '#random', text: '<!here> deploy done' })
    expect(slack.calls.find((entry) => entry.method === 'chat.postMessage')?.args.text).toBe(
      '<!here> deploy done',
    )
    expect(escapeBroadcasts('<!everyone> and <!subteam^S123|@team>')).toBe(
      '&lt;!everyone&gt; and &lt;!subteam^S123|@team&gt;',
    )
  })

  it("edits and deletes only the bot's own messages", async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    const own = await call(connection, 'update_message', {
      channel: 'C0RANDOM',
      ts: '1700000050.000100',
      text: 'edited',
    })
    expect(own.isError).toBe(false)
    const other = await call(connection, 'delete_message', { channel: 'C0RANDOM', ts: '1700000040.000100' })
    expect(other.text).toMatch(/^permission_denied: Only messages this bot posted/)
    expect(slack.calls.some((entry) => entry.method === 'chat.delete')).toBe(false)
    expect(
      (await call(connection, 'delete_message', { channel: 'C0RANDOM', ts: '1700000050.000100' })).isError,
    ).toBe(false)
  })
})

describe('concurrency', () => {
  // Through the real @slack/web-api client (its request queue and retry policy): calls made together
  // reach Slack together, so a slow Web API costs one round trip, not one per call queued behind it.
  it('sends 8 concurrent history calls to the Web API at once, not one after another', async () => {
    const slack = await fake({ latencyMs: 100 })
    const connection = await connect(slack)
    await call(connection, 'get_channel_history', { channel: 'C0GENERAL', limit: 3 })
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        call(connection, 'get_channel_history', { channel: 'C0GENERAL', limit: 3 }),
      ),
    )
    expect(results.map((result) => result.isError)).toEqual(Array(8).fill(false))
    expect(slack.peakInFlight).toBe(8)
  })
})

describe('errors and rate limits', () => {
  it('waits out a 429 with Retry-After, then succeeds', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    slack.fail({ method: 'users.list', status: 429, retryAfter: 1 })
    const started = Date.now()
    const result = await call(connection, 'list_users', { limit: 5 })
    expect(result.isError).toBe(false)
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
    expect(slack.calls.filter((entry) => entry.method === 'users.list')).toHaveLength(2)
  })

  it('retries a 5xx, and reports unavailable when Slack keeps failing', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    slack.fail({ method: 'users.list', status: 503 })
    expect((await call(connection, 'list_users', {})).isError).toBe(false)
    for (let index = 0; index < 5; index++) slack.fail({ method: 'users.info', status: 500 })
    slack.fail({ method: 'users.profile.get', status: 500 })
    const failed = await call(connection, 'get_user_profile', { user: 'U00000001' })
    expect(failed.text).toMatch(/^unavailable: /)
  })

  it('posts once when Slack answers a write with a 5xx, and tells the model to look before repeating it', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    slack.fail({ method: 'chat.postMessage', status: 502 })
    const result = await call(connection, 'post_message', { channel: '#random', text: 'deploy done' })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^unavailable: Slack: http_error/)
    expect(result.text).toContain('may have been applied')
    expect(result.text).toContain('get_channel_history')
    expect(slack.calls.filter((entry) => entry.method === 'chat.postMessage')).toHaveLength(1)
    // The same call again is the model's decision, and goes through.
    expect(
      (await call(connection, 'post_message', { channel: '#random', text: 'deploy done' })).isError,
    ).toBe(false)
  })

  it('reports a 200 answer that is not JSON as unavailable, without echoing it', async () => {
    const slack = await fake()
    const connection = await connect(slack)
    slack.fail({ method: 'conversations.info', status: 200, body: '{"ok": tru <html>' })
    const result = await call(connection, 'get_channel_info', { channel: 'C0GENERAL' })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^unavailable: Slack: invalid_response/)
    expect(result.text).not.toContain('<html>')
    expect((await call(connection, 'get_channel_info', { channel: 'C0GENERAL' })).isError).toBe(false)
  })

  it.each([
    ['invalid_auth', 'unauthenticated'],
    ['not_authed', 'unauthenticated'],
    ['missing_scope', 'permission_denied'],
    ['channel_not_found', 'not_found'],
    ['not_in_channel', 'permission_denied'],
    ['is_archived', 'conflict'],
    ['msg_too_long', 'invalid_argument'],
    ['ratelimited', 'rate_limited'],
  ])('maps ok:false %s to %s, never as a success', async (error, kind) => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'])
    slack.fail({
      method: 'chat.postMessage',
      error,
      ...(error === 'missing_scope' ? { needed: 'chat:write' } : {}),
    })
    const result = await call(connection, 'post_message', { channel: '#random', text: 'x' })
    expect(result.isError).toBe(true)
    expect(result.text.startsWith(`${kind}: Slack: ${error}`)).toBe(true)
    if (error === 'missing_scope') expect(result.text).toContain('"chat:write"')
    if (error === 'not_in_channel') expect(result.text).toContain('/invite')
  })

  it('never shows a token, in any result or error', async () => {
    const slack = await fake()
    const connection = await connect(slack, ['--allow-writes'], { SLACK_USER_TOKEN: USER_TOKEN })
    slack.fail({ method: 'chat.postMessage', error: 'invalid_auth' })
    const texts = [
      (await call(connection, 'post_message', { channel: '#random', text: 'x' })).text,
      (await call(connection, 'search_messages', { query: 'general' })).text,
      (await call(connection, 'get_channel_history', { channel: 'C0NOPE0' })).text,
    ].join('\n')
    expect(texts).not.toContain(BOT_TOKEN)
    expect(texts).not.toContain(USER_TOKEN)
  })
})

describe('permalinks', () => {
  it('parses channel and ts, with a thread', () => {
    expect(parsePermalink('https://x.slack.com/archives/C0GENERAL/p1700000098000100')).toEqual({
      channel: 'C0GENERAL',
      ts: '1700000098.000100',
    })
    expect(parsePermalink('not a url')).toBeUndefined()
  })
})
